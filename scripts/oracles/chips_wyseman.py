#!/usr/bin/env python3
"""An independent Wyseman client (PyPI websockets + cryptography) against our MyCHIPs provider,
and cryptography's verdict on our client core's P-521 login signatures.

  chips_wyseman.py live URL PURSE_BINARY   logs in by ticket and by signature as the real
                                           JavaScript client does, and checks each refusal's status
  chips_wyseman.py verify VECTORS.json     verifies signatures our Swift client made
  chips_wyseman.py signkey-open LINK PASS  decrypts a signkey link our client made; prints the key's curve
  chips_wyseman.py signkey-make PASS       makes a signkey link from a new P-521 key, as MyCHIPs exports one
"""
import asyncio
import base64
import datetime
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
        answer = await request(ws, {"id": 1, "view": "mychips.users_v_me", "action": "select", "where": ["username = oracle"]})
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
        answer = await request(ws, {"id": 1, "view": "mychips.users_v_me", "action": "tuple", "where": {"username": "oracle"}})
        check(answer["data"]["id"].startswith("p"), "signature login (ECDSA P-521, SHA-384, raw r‖s)")
    check(await refused_with(url) == 403, "the same signature URL again: 403")

    other = ec.generate_private_key(ec.SECP521R1())
    info = client_info(base)
    message = js_stringify([(k, info[k]) for k in ("ip", "cookie", "userAgent", "date") if k in info])
    check(await refused_with(ws_url(base, user="oracle", sign=raw_signature(other, message), date=info["date"])) == 403, "a signature by another key: 403")

    stale = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=10)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    message = js_stringify([("ip", info["ip"]), ("userAgent", USER_AGENT), ("date", stale)])
    check(await refused_with(ws_url(base, user="oracle", sign=raw_signature(key, message), date=stale)) == 400, "a stale date: 400 (Invalid Date Stamp)")
    print(f"{checks} checks passed")


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
