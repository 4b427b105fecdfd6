#!/usr/bin/env python3
"""An independent Wyseman client (PyPI websockets + cryptography) against our MyCHIPs provider,
and cryptography's verdict on our client core's P-521 login signatures.

  chips_wyseman.py live URL PURSE_BINARY   logs in by ticket and by signature as the real
                                           JavaScript client does, and checks each refusal's status;
                                           sends the MyCHIPs app's start-up requests, then runs two
                                           users' journey in the app's request forms (a tally, a
                                           payment, a request paid), signing and checking the chain
                                           with chips_records' independent code
  chips_wyseman.py verify VECTORS.json     verifies signatures our Swift client made
  chips_wyseman.py signkey-open LINK PASS  decrypts a signkey link our client made; prints the key's curve
  chips_wyseman.py signkey-make PASS       makes a signkey link from a new P-521 key, as MyCHIPs exports one
"""
import asyncio
import base64
import datetime
import hashlib
import json
import subprocess
import sys
import urllib.parse
import urllib.request

import websockets
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature
from cryptography.exceptions import InvalidSignature

USER_AGENT = "wyseman-oracle/1.0"


def b64u(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64u(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def js_stringify(members) -> str:
    """JSON.stringify of an object with these members in order: no spaces, non-ASCII kept."""
    return "{" + ",".join(json.dumps(k) + ":" + json.dumps(v, ensure_ascii=False, separators=(",", ":")) for k, v in members) + "}"


def public_jwk(key) -> dict:
    numbers = key.public_key().public_numbers()
    return {"kty": "EC", "crv": "P-521", "x": b64u(numbers.x.to_bytes(66, "big")), "y": b64u(numbers.y.to_bytes(66, "big"))}


def raw_signature(key, message: str) -> str:
    r, s = decode_dss_signature(key.sign(message.encode(), ec.ECDSA(hashes.SHA384())))
    return b64u(r.to_bytes(66, "big") + s.to_bytes(66, "big"))


def ws_url(base: str, **query) -> str:
    parts = urllib.parse.urlsplit(base)
    return f"ws://{parts.hostname}:{parts.port}/?" + urllib.parse.urlencode(query)


async def refused_with(url: str) -> int:
    try:
        async with websockets.connect(url, user_agent_header=USER_AGENT, open_timeout=10):
            return 101
    except websockets.exceptions.InvalidStatus as error:
        return error.response.status_code


async def request(ws, frame: dict) -> dict:
    await ws.send(json.dumps(frame))
    while True:
        answer = json.loads(await asyncio.wait_for(ws.recv(), 10))
        if answer.get("id") == frame.get("id"):
            return answer


def ticket_url(ticket: dict, key) -> str:
    """The ticket login as Wyseman's client opens it: the ticket's port, `db` naming the user's channel."""
    db = b64u(json.dumps(["mu_" + ticket["user"]]).encode())
    pub = b64u(json.dumps(public_jwk(key)).encode())
    return f"ws://{ticket['host']}:{ticket['port']}/?" + urllib.parse.urlencode({"user": ticket["user"], "db": db, "token": ticket["token"], "pub": pub})


def client_info(base: str) -> dict:
    req = urllib.request.Request(base + "/clientinfo", headers={"User-Agent": USER_AGENT})
    with urllib.request.urlopen(req, timeout=10) as response:
        return json.loads(response.read())


async def live(base: str, purse: str) -> None:
    checks = 0

    def check(condition, what):
        nonlocal checks
        if not condition:
            raise SystemExit(f"FAIL: {what}")
        checks += 1
        print(f"ok: {what}")

    ticket = json.loads(subprocess.check_output([purse, "chips", "ticket", "--user", "oracle", "--name", "Oracle", "--json"]))["ticket"]
    key = ec.generate_private_key(ec.SECP521R1())
    pub = b64u(json.dumps(public_jwk(key)).encode())

    check(await refused_with(ws_url(base)) == 401, "no credentials: 401")
    check(await refused_with(ws_url(base, user="oracle", token="0" * 32, pub=pub)) == 403, "an unknown token: 403")

    async with websockets.connect(ws_url(base, user="oracle", token=ticket["token"], pub=pub), user_agent_header=USER_AGENT) as ws:
        answer = await request(ws, {"id": 1, "view": "mychips.users_v_me", "action": "select", "fields": ["*"], "where": ["username = oracle"]})
        check(answer["data"][0]["username"] == "oracle" and answer["data"][0]["cert"]["chad"]["cuid"] == "oracle", "ticket login, then a select on users_v_me")
        answer = await request(ws, {"id": 2, "view": "mychips.users_v_me", "action": "lang", "language": "spa"})
        check(answer["data"]["title"] == "Mi perfil", "lang in Spanish")
        answer = await request(ws, {"id": "x", "view": "mychips.nothing", "action": "select"})
        check(answer["error"]["code"] == "42P01", "an unknown view: the database's error (the bare SQLSTATE)")
        await ws.send("not json")
        answer = json.loads(await asyncio.wait_for(ws.recv(), 10))
        check(answer["error"]["code"] == "!wm.lang:badJSON" and answer["id"] is None, "a frame that is not JSON: an error frame")
        answer = await request(ws, {"id": 3, "view": "base.language_v", "action": "select", "fields": ["code"], "order": ["code"]})
        check([row["code"] for row in answer["data"]] == ["eng", "spa"], "the connection survives and answers again")

    check(await refused_with(ws_url(base, user="oracle", token=ticket["token"], pub=pub)) == 403, "the same ticket again: 403")

    info = client_info(base)
    message = js_stringify([(k, info[k]) for k in ("ip", "cookie", "userAgent", "date") if k in info])
    sign = raw_signature(key, message)
    url = ws_url(base, user="oracle", sign=sign, date=info["date"])
    async with websockets.connect(url, user_agent_header=USER_AGENT) as ws:
        answer = await request(ws, {"id": 1, "view": "mychips.users_v_me", "action": "tuple", "fields": ["id"], "where": {"username": "oracle"}})
        check(answer["data"]["id"].startswith("p"), "signature login (ECDSA P-521, SHA-384, raw r‖s)")
    check(await refused_with(url) == 403, "the same signature URL again: 403")

    other = ec.generate_private_key(ec.SECP521R1())
    info = client_info(base)
    message = js_stringify([(k, info[k]) for k in ("ip", "cookie", "userAgent", "date") if k in info])
    check(await refused_with(ws_url(base, user="oracle", sign=raw_signature(other, message), date=info["date"])) == 403, "a signature by another key: 403")

    stale = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=10)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    message = js_stringify([("ip", info["ip"]), ("userAgent", USER_AGENT), ("date", stale)])
    check(await refused_with(ws_url(base, user="oracle", sign=raw_signature(key, message), date=stale)) == 400, "a stale date: 400 (Invalid Date Stamp)")
    await app_journey(base, purse, check)
    print(f"{checks} checks passed")


async def app_journey(base: str, purse: str, check) -> None:
    """The MyCHIPs app's requests as its source sends them (client/chark), for two users."""
    from chips_records import chain_hash, j2h, sign, stable, verifies
    tickets = {name: json.loads(subprocess.check_output([purse, "chips", "ticket", "--user", name, "--name", name.title(), "--json"]))["ticket"]
               for name in ("jim", "fran")}
    check(all(t["port"] == urllib.parse.urlsplit(base).port + 1 for t in tickets.values()), "tickets name the websocket's own port, one above /clientinfo's")
    keys = {name: ec.generate_private_key(ec.SECP521R1()) for name in tickets}
    signing = {name: ec.generate_private_key(ec.SECP521R1()) for name in tickets}
    notices = {name: [] for name in tickets}
    sockets = {}
    for name, ticket in tickets.items():
        sockets[name] = await websockets.connect(ticket_url(ticket, keys[name]), user_agent_header=USER_AGENT)
    pending = {}

    async def reader(name):
        async for text in sockets[name]:
            frame = json.loads(text)
            if frame.get("action") == "notify":
                notices[name].append(frame)
            elif frame.get("id") in pending:
                pending.pop(frame["id"]).set_result(frame)
    readers = [asyncio.create_task(reader(name)) for name in tickets]
    serial = 0

    async def ask(who, action, view, **spec):
        nonlocal serial
        serial += 1
        frame = {"id": f"{who}{serial}", "action": action, "view": view, **spec}
        pending[frame["id"]] = asyncio.get_running_loop().create_future()
        await sockets[who].send(json.dumps(frame))
        answer = await asyncio.wait_for(pending[frame["id"]], 10)
        if "error" in answer:
            raise SystemExit(f"FAIL: {action} {view}: {answer['error']}")
        return answer["data"]

    # Start-up (query_user, queryAvailableLanguages, useLanguage, getPersonal, getComm, getAddresses, getCountry, getUserCert, getFile).
    ent = (await ask("jim", "select", "base.ent_v", table="base.curr_eid", params=[]))[0]["curr_eid"]
    check(ent.startswith("p"), "the app's first request: base.curr_eid()")
    languages = await ask("jim", "select", "base.language_v", fields=["code", "iso_2", "eng_name", "tables"], where={"oper": "notnull", "left": "tables"})
    check({row["code"] for row in languages} >= {"eng", "spa"}, "languages with tables")
    for view in ("mychips.chark", "mychips.tallies", "mychips.users_v_me", "mychips.tallies_v_me", "mychips.chits_v_me"):
        texts = await ask("jim", "lang", view, language="eng")
        check(isinstance(texts["columns"], list) and texts["title"], f"lang {view}")
    personal = await ask("jim", "select", "mychips.users_v_me", fields=["user_ent", "tax_id", "born_date", "country", "cas_name", "peer_cuid", "cert", "ent_type", "ent_name"],
                         where={"user_ent": ent})
    check(personal[0]["user_ent"] == ent and personal[0]["cert"]["chad"]["cuid"], "getPersonal")
    await ask("jim", "select", "mychips.comm_v_me", fields=["comm_type", "comm_spec", "comm_seq", "comm_prim"], where={"comm_ent": ent}, order={"field": "crt_date", "asc": False})
    await ask("jim", "select", "mychips.addr_v_me", fields=["addr_ent", "addr_spec", "addr_seq", "addr_type", "city", "state", "country", "pcode"],
              where={"addr_ent": ent}, order={"field": "crt_date", "asc": True})
    country = await ask("jim", "select", "base.country_v", fields=["cur_code", "co_name", "co_code"], where={"co_code": "US"})
    check(country[0]["cur_code"] == "USD", "getCountry")
    cert = await ask("jim", "select", "mychips.user_cert", params=[ent])
    check(cert[0]["user_cert"]["chad"]["cuid"], "getUserCert")
    avatar = await ask("jim", "select", "mychips.file_v_me", fields=["file_ent", "file_fmt", "file_data64"], where={"file_ent": ent, "file_prim": True})
    check(avatar == [], "getFile: no avatar yet")

    # The avatar (uploadImage): a PNG made here, sent as the app sends a node Buffer.
    import zlib
    def chunk(kind, data):
        return len(data).to_bytes(4, "big") + kind + data + zlib.crc32(kind + data).to_bytes(4, "big")
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", (2).to_bytes(4, "big") * 2 + bytes([8, 2, 0, 0, 0])) \
        + chunk(b"IDAT", zlib.compress(b"\x00" + b"\xff\x00\x00" * 2 + b"\x00" + b"\x00\x00\xff" * 2)) + chunk(b"IEND", b"")
    stored = await ask("jim", "action", "mychips.file_v_me", name="photo",
                       data={"fields": {"file_fmt": "image/png", "file_cmt": "Profile", "file_data": {"type": "Buffer", "data": list(png)}}})
    check(base64.b64decode(stored["file_data64"]) == png, "the photo action answers the stored picture (file_data64)")
    avatar = await ask("jim", "select", "mychips.file_v_me", fields=["file_ent", "file_fmt", "file_data64"], where={"file_ent": ent, "file_prim": True})
    check(len(avatar) == 1 and base64.b64decode(avatar[0]["file_data64"]) == png, "getFile finds the avatar")
    cert = await ask("jim", "select", "mychips.user_cert", params=[ent])
    photo_digest = b64u(hashlib.sha256(png).digest())
    check(cert[0]["user_cert"]["file"] == [{"media": "photo", "format": "image/png", "digest": photo_digest, "comment": "Profile"}],
          "the certificate lists the photo by its SHA-256")

    # Keys (updatePublicKey), contracts, a draft, the invitation and the ticket.
    for name in tickets:
        me = (await ask(name, "select", "base.ent_v", table="base.curr_eid", params=[]))[0]["curr_eid"]
        await ask(name, "update", "mychips.users_v_me", fields={"user_psig": public_jwk(signing[name]) | {"ext": True, "key_ops": ["verify"]}}, where={"user_ent": me})
    contracts = await ask("jim", "select", "mychips.contracts_v", fields=["top", "name", "title", "language", "host", "rid", "clean"], where={"top": True})
    check(contracts and all(c["clean"] for c in contracts), "contracts: top and clean")
    draft = await ask("jim", "insert", "mychips.tallies_v_me", fields={"contract": {"source": contracts[0]["rid"]}, "comment": "Garden work", "tally_type": "stock",
                                                                      "hold_terms": {"call": 30, "limit": 50}, "part_terms": {"call": 30, "limit": 20}})
    check(draft["json_core"]["memo"] == "Garden work" and draft["json_core"]["agree"] == {"source": contracts[0]["rid"]} and draft["json_core"]["revision"] == 1,
          "a draft's json_core as MyCHIPs writes it (memo, revision, agree by source)")
    invite = await ask("jim", "action", "mychips.tallies_v_me", name="invite", data={"keys": [{"tally_seq": draft["tally_seq"]}], "options": {"reuse": False, "format": ["json", "link"]}})
    check(invite[0]["invite"]["token"] and "<a href=" in invite[1], "the invite action in its real form: json and link")
    joined = await ask("fran", "select", "mychips.ticket_process", params=[invite[0]["invite"]])
    check(joined == [{"ticket_process": True}], "ticket_process answers [{ticket_process: true}]")

    # Jim signs the record he reads and offers; Fran reads her copy, checks his signature, signs, accepts.
    fields = ["tally_ent", "tally_seq", "tally_uuid", "tally_type", "status", "state", "action", "hold_terms", "part_terms", "hold_cert", "part_cert",
              "json_core", "hold_sig", "part_sig", "net", "chits", "comment", "contract"]
    mine = (await ask("jim", "select", "mychips.tallies_v_me", fields=fields, where={"tally_seq": draft["tally_seq"]}))[0]
    check(mine["state"] == "P.draft", "the joined draft is the inviter's to sign")
    text = stable(mine["json_core"], drop_nulls=False)
    await ask("jim", "update", "mychips.tallies_v_me", fields={"tally_uuid": mine["tally_uuid"], "request": "offer", "hold_sig": sign(signing["jim"], text)},
              where={"tally_ent": mine["tally_ent"], "tally_seq": mine["tally_seq"]})
    theirs = (await ask("fran", "select", "mychips.tallies_v_me", fields=fields, where={"tally_uuid": mine["tally_uuid"]}))[0]
    check(theirs["state"] == "P.offer" and verifies(theirs["json_core"]["stock"]["cert"]["public"], theirs["part_sig"], stable(theirs["json_core"], drop_nulls=False)),
          "the offer's signature verifies with the stock's key, over the stable JSON")
    await ask("fran", "update", "mychips.tallies_v_me", fields={"request": "open", "hold_sig": sign(signing["fran"], stable(theirs["json_core"], drop_nulls=False))},
              where={"tally_ent": theirs["tally_ent"], "tally_seq": theirs["tally_seq"]})

    # Fran fetches Jim's photo through the tally (fetchTallyFile); Jim gets the agreement and his balance sheet as links.
    files = await ask("fran", "action", "mychips.tallies_v_me", name="file", data={"key": {"tally_seq": theirs["tally_seq"]}, "options": {"digest": photo_digest, "format": "json"}})
    check(len(files) == 1 and bytes(files[0]["file_data"]["data"]) == png, "the partner's photo by digest, through the tally")
    pdf_link = await ask("jim", "action", "mychips.tallies_v_me", name="agree", data={"key": {"tally_seq": draft["tally_seq"]}, "options": {"format": "url"}})
    with urllib.request.urlopen(pdf_link, timeout=10) as response:
        check(response.headers["Content-Type"] == "application/pdf" and response.read().startswith(b"%PDF-"), "agree: the tally agreement as a PDF at its link")
    graph_link = await ask("jim", "action", "mychips.users_v_me", name="graph", data={"options": {"format": "url"}})
    with urllib.request.urlopen(graph_link, timeout=10) as response:
        check(b"<svg" in response.read(), "graph: the balance sheet page at its link")

    # Fran pays 12.5; Jim requests 3; Fran pays the request.
    chit_date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + f"{datetime.datetime.now().microsecond // 1000:03d}Z"
    import uuid
    payment = {"by": "foil", "ref": {}, "date": chit_date, "memo": "Hedges", "type": "tran", "uuid": str(uuid.uuid4()), "tally": mine["tally_uuid"], "units": 12500}
    await ask("fran", "insert", "mychips.chits_v_me", fields={"chit_ent": theirs["tally_ent"], "chit_seq": theirs["tally_seq"], "chit_uuid": payment["uuid"], "memo": "Hedges",
                                                            "chit_date": chit_date, "signature": sign(signing["fran"], stable(payment, drop_nulls=True)), "units": 12500,
                                                            "request": "good", "issuer": "foil", "reference": {}})
    await ask("jim", "insert", "mychips.chits_v_me", fields={"reference": {}, "memo": "Mulch", "status": "open", "request": "pend", "issuer": "foil", "units": 3000,
                                                           "tally_uuid": mine["tally_uuid"], "chit_seq": mine["tally_seq"]})
    asked = await ask("fran", "select", "mychips.chits_v_me", fields=["chit_ent", "chit_seq", "chit_idx", "chit_uuid", "units", "net", "memo", "reference", "json_core",
                                                                      "chit_date", "state", "issuer", "tally_type", "action", "status", "request"],
                      where={"status": "pend", "chit_seq": theirs["tally_seq"]})
    check(len(asked) == 1 and asked[0]["state"] == "L.pend" and asked[0]["action"] is True, "the request is Fran's to pay")
    await ask("fran", "update", "mychips.chits_v_me", fields={"request": "good", "signature": sign(signing["fran"], stable(asked[0]["json_core"], drop_nulls=True))},
              where={"chit_ent": asked[0]["chit_ent"], "chit_seq": asked[0]["chit_seq"], "chit_idx": asked[0]["chit_idx"]})

    # The chain, checked with chips_records' code: digests are Buffers, the chain starts at the tally's digest.
    tally = (await ask("jim", "select", "mychips.tallies_v_me", fields=["*"], where={"tally_seq": draft["tally_seq"]}))[0]
    chits = await ask("jim", "select", "mychips.chits_v_me", fields=["*"], order=[{"field": "chit_idx", "asc": True}])
    as_b64 = lambda buffer: b64u(bytes(buffer["data"]))
    check(tally["digest"]["type"] == "Buffer" and as_b64(tally["digest"]) == j2h(tally["json_core"]), "the tally's digest: a Buffer, j2h of json_core")
    check(tally["net"] == "15500" and tally["net_c"] == 15500, "the balance: numeric text and the bigint")
    prior = as_b64(tally["digest"])
    for chit in chits:
        check(as_b64(chit["chain_prev"]) == prior and as_b64(chit["chain_dgst"]) == chain_hash(chit["json_core"], chit["chain_idx"], prior, chit["signature"]),
              f"chain link {chit['chain_idx']}: j2h(core + index, prior, sign)")
        prior = as_b64(chit["chain_dgst"])
    for name, expected in (("jim", ["P.draft", "H.offer", "open", "A.good", "A.pend", "A.good"]), ("fran", ["P.offer", "open", "L.good", "L.pend", "L.good"])):
        for _ in range(100):
            if len([n for n in notices[name] if n["data"].get("target") in ("tally", "chit")]) >= len(expected):
                break
            await asyncio.sleep(0.05)
        states = [n["data"]["state"] for n in notices[name] if n["data"].get("target") in ("tally", "chit")]
        check(states == expected and all(n["channel"] == "mu_" + name for n in notices[name]), f"{name}'s notices on mu_{name}: {states}")
    for task in readers:
        task.cancel()
    for ws in sockets.values():
        await ws.close()


def verify(path: str) -> None:
    vectors = json.load(open(path))
    for vector in vectors:
        jwk = json.loads(vector["jwk"])
        x = int.from_bytes(unb64u(jwk["x"]), "big")
        y = int.from_bytes(unb64u(jwk["y"]), "big")
        public = ec.EllipticCurvePublicNumbers(x, y, ec.SECP521R1()).public_key()
        raw = unb64u(vector["sign"])
        assert len(raw) == 132, "raw r‖s is 132 bytes"
        der = encode_dss_signature(int.from_bytes(raw[:66], "big"), int.from_bytes(raw[66:], "big"))
        try:
            public.verify(der, vector["message"].encode(), ec.ECDSA(hashes.SHA384()))
        except InvalidSignature:
            raise SystemExit(f"FAIL: our signature over {vector['message']!r} does not verify")
    print(f"{len(vectors)} signatures of our client verified by cryptography")


def signkey_key(passphrase: str, salt: bytes):
    from cryptography.hazmat.primitives.kdf.pbkdf2 import PBKDF2HMAC
    return PBKDF2HMAC(algorithm=hashes.SHA256(), length=32, salt=salt, iterations=10_000).derive(passphrase.encode())


def signkey_private_key(link: str, passphrase: str):
    """The P-521 private key a signkey link seals, and its JWK."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(link).query)
    salt, iv = bytes.fromhex(query["s"][0]), bytes.fromhex(query["i"][0])
    assert len(salt) == 8 and len(iv) == 12, "8-byte salt, 12-byte IV"
    jwk = json.loads(AESGCM(signkey_key(passphrase, salt)).decrypt(iv, base64.b64decode(query["d"][0]), None))
    return ec.derive_private_key(int.from_bytes(unb64u(jwk["d"]), "big"), ec.SECP521R1()), jwk


def signkey_open(link: str, passphrase: str) -> None:
    key, jwk = signkey_private_key(link, passphrase)
    derived = key.public_key().public_numbers()
    assert derived.x == int.from_bytes(unb64u(jwk["x"]), "big"), "the JWK's x is its d's"
    print(f"opened: {jwk['kty']} {jwk['crv']} key, public point consistent")


def signkey_make(passphrase: str) -> None:
    import os
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    key = ec.generate_private_key(ec.SECP521R1())
    jwk = public_jwk(key) | {"d": b64u(key.private_numbers().private_value.to_bytes(66, "big"))}
    salt, iv = os.urandom(8), os.urandom(12)
    sealed = AESGCM(signkey_key(passphrase, salt)).encrypt(iv, json.dumps(jwk, separators=(",", ":")).encode(), None)
    print("https://mychips.org/signkey?" + urllib.parse.urlencode({"s": salt.hex(), "i": iv.hex(), "d": base64.b64encode(sealed).decode()}))


if __name__ == "__main__":
    if sys.argv[1] == "live":
        asyncio.run(live(sys.argv[2], sys.argv[3]))
    elif sys.argv[1] == "verify":
        verify(sys.argv[2])
    elif sys.argv[1] == "signkey-open":
        signkey_open(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "signkey-make":
        signkey_make(sys.argv[2])
    else:
        raise SystemExit(__doc__)
