#!/usr/bin/env python3
"""A fuzzer at every door of a running `purse serve`, each bounded in time, the server's survival
checked after every batch:

  hostile.py URL PURSE_BINARY [SECONDS per door]

- http: raw sockets — malformed request lines, methods, versions, headers, conflicting framing,
  oversized lines and heads, bodies that stop, slow senders. Any answer but a 4xx, a 505 or a
  503 (over the connection cap) is a failure, and so is a server that stops answering /health.
- bodies: every JSON operation of the OpenAPI document, with real credentials — a session
  (Nexus, Maly, accounts), a signed Cuti-E device, ChippiPay merchant keys — and bodies hypothesis
  makes from each operation's own fields: numbers at and past every bound, wrong types, deep
  nesting, long strings, unknown fields. A 5xx (other than 502/503 from a sandbox's own refusal)
  is a failure.
- wyseman: frames over a logged-in MyCHIPs websocket — where forms, numbers at and past bigint,
  deep nesting, huge arrays, unknown views and actions, chits with extreme units; then signed
  payments with units at and past bigint on a real open tally (made with the CLI, its payer's key
  exported as a signkey link). Every frame must be answered (data or an error frame) on a
  connection that stays open, and the tally must stay within its credit limit.

A failing input is written to .ci-artifacts/fuzz/ and the script exits 1.
"""
import asyncio
import base64
import hashlib
import hmac
import json
import os
import random
import socket
import subprocess
import sys
import time
import urllib.parse
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cluster_http import call  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "oracles"))
import chips_wyseman  # noqa: E402  (MyCHIPs signatures, JWKs and signkey links, as the oracle makes them)

ARTIFACTS = ".ci-artifacts/fuzz"
SEED = int(os.environ.get("PURSE_FUZZ_SEED", "20261126"))
rng = random.Random(SEED)


def fail(door, what, payload):
    os.makedirs(ARTIFACTS, exist_ok=True)
    path = os.path.join(ARTIFACTS, f"{door}-failure-{int(time.time())}.bin")
    with open(path, "wb") as handle:
        handle.write(payload if isinstance(payload, bytes) else json.dumps(payload, default=str).encode())
    print(f"FAIL {door}: {what} (input in {path})")
    sys.exit(1)


def alive(base):
    for _ in range(20):
        status, _, _ = call(base, "GET", "/health", timeout=10)
        if status == 200:
            return True
        time.sleep(0.25)
    return False


# MARK: http — raw sockets

BIG = [0, 1, -1, 2**31, 2**63 - 1, 2**63, -(2**63), 2**64, 10**19, 10**400]


def raw_exchange(host, port, chunks, pause=0.0, timeout=4.0):
    """What the server answered; b"" when it closed without a word."""
    sock = socket.create_connection((host, port), timeout=timeout)
    received = b""
    try:
        for chunk in chunks:
            sock.sendall(chunk)
            if pause:
                time.sleep(pause)
        sock.shutdown(socket.SHUT_WR)
        while True:
            data = sock.recv(65536)
            if not data:
                break
            received += data
    except (socket.timeout, ConnectionError, OSError):
        pass
    finally:
        sock.close()
    return received


def http_case():
    paths = ["/health", "/auth/login", "/user/topup", "/v1/conversations", "/v1/sku-transactions", "/connect/accounts",
             "/starknet/rpc", "/clientinfo", "/nexus/checkout", "/v1/skus?category=" + "%" * rng.randint(1, 40), "/" + "a/" * rng.randint(1, 300)]
    methods = ["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD", "G@T", "get", "", "GET GET", "CONNECT", "TRACE", "X" * 300]
    versions = ["HTTP/1.1", "HTTP/1.0", "HTTP/9.9", "HTTP/1.1x", "http/1.1", "", "HTTP/2.0", "HTTP/0.9", "HTTP/1.11"]
    method, path, version = rng.choice(methods), rng.choice(paths), rng.choice(versions)
    lines = [f"{method} {path} {version}".encode()]
    headers = [b"Host: 127.0.0.1"]
    for _ in range(rng.randint(0, 6)):
        headers.append(rng.choice([
            b"Content-Length: " + str(rng.choice(BIG)).encode(),
            b"Content-Length: -1", b"Content-Length: 1, 2", b"Transfer-Encoding: chunked", b"Transfer-Encoding: gzip, chunked",
            b"Transfer-Encoding: identity", b"Connection: close", b"Connection: keep-alive, Upgrade", b"Upgrade: websocket",
            b"Authorization: Bearer " + base64.b64encode(os.urandom(rng.randint(0, 300))), b"X-Timestamp: " + str(rng.choice(BIG)).encode(),
            b"Idempotency-Key: " + os.urandom(rng.randint(0, 300)).hex().encode(), b"X-Forwarded-For: " + b"1.2.3.4, " * rng.randint(1, 50),
            b"X-Pad: " + b"b" * rng.choice([10, 5000, 40000]), b"Bad Header: x", b": empty", b"X-NUL: a\x00b", b"X-CR: a\rb",
            b"Content-Type: application/json; charset=" + b"x" * rng.randint(1, 200), b"Expect: 100-continue",
        ]))
    if rng.random() < 0.1:
        # A signed Cuti-E request's form, with a hostile timestamp: checked before any lookup.
        headers += [b"X-App-ID: " + rng.choice([b"nope", b"app_sandbox"]), b"X-Device-Token: x", b"X-Signature: 00",
                    b"X-Timestamp: " + str(rng.choice(BIG + [-(2**63) + 1, 2**63 - 2])).encode()]
    body = rng.choice([b"", b"{}", b'{"amount": 1e400}', b"0\r\n\r\n", b"5\r\nhello\r\n0\r\n\r\n", b"zz\r\n", os.urandom(rng.randint(1, 2000)),
                       b"[" * rng.randint(1, 3000)])
    line_end = rng.choice([b"\r\n", b"\n", b"\r"])
    request = line_end.join(lines + headers) + line_end + line_end + body
    if rng.random() < 0.1:
        request = os.urandom(rng.randint(1, 3000))
    if rng.random() < 0.05:
        request = b"GET /?" + b"q" * rng.choice([9000, 90000]) + b" HTTP/1.1\r\nHost: a\r\n\r\n"
    return request


def http_door(base, seconds):
    parts = urllib.parse.urlsplit(base)
    deadline = time.time() + seconds
    count = 0
    while time.time() < deadline:
        request = http_case()
        split = rng.random() < 0.15
        chunks = [request[i:i + 7] for i in range(0, min(len(request), 70), 7)] + [request[70:]] if split else [request]
        answer = raw_exchange(parts.hostname, parts.port, chunks, pause=0.01 if split else 0.0)
        count += 1
        status_line = answer.split(b"\r\n", 1)[0]
        if status_line.startswith(b"HTTP/1."):
            try:
                status = int(status_line.split(b" ")[1])
            except (IndexError, ValueError):
                fail("http", f"a malformed status line {status_line[:80]!r}", request)
            if status >= 500 and status not in (503, 505):
                fail("http", f"answered {status}", request)
        if count % 25 == 0 and not alive(base):
            fail("http", "the server stopped answering /health", request)
    if not alive(base):
        fail("http", "the server stopped answering /health", b"")
    print(f"PASS http: {count} hostile requests on raw sockets, the server alive")


# MARK: bodies — every JSON operation with real credentials

def hostile_values():
    from hypothesis import strategies as st
    leaves = st.one_of(
        st.none(), st.booleans(), st.sampled_from([0, -1, 1, 2**31, 2**53 + 1, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64, 10**19, 10**30]),
        st.floats(allow_nan=False, allow_infinity=False), st.sampled_from([1e19, 1e308, -1e308, 0.1, 1e-320, 2.5]),
        st.text(max_size=40), st.sampled_from(["", " ", "0", "-0", "1e400", "NaN", "0x" + "f" * 70, "\u0000", "é" * 300, "a" * 5000,
                                               "2025-13-45T99:99:99Z", "+2348012345678", "08012345678", "AIRTIME_MTN", "telcel_50"]))
    return st.recursive(leaves, lambda children: st.one_of(st.lists(children, max_size=5), st.dictionaries(st.text(max_size=12), children, max_size=5)),
                        max_leaves=20)


def operation_bodies(document):
    """(method, path, tag, property names) of every operation that takes a JSON body."""
    operations = []
    for path, item in document.get("paths", {}).items():
        for method, operation in item.items():
            if method not in ("post", "put", "patch", "delete") or not isinstance(operation, dict):
                continue
            content = (operation.get("requestBody") or {}).get("content", {})
            schema = (content.get("application/json") or {}).get("schema") or {}
            if "$ref" in schema:
                schema = document["components"]["schemas"].get(schema["$ref"].split("/")[-1], {})
            names = sorted((schema.get("properties") or {}).keys())
            if content.get("application/json") is None and method != "delete":
                continue
            operations.append((method.upper(), path, (operation.get("tags") or [""])[0], names))
    return operations


class Credentials:
    def __init__(self, base, purse):
        self.base = base
        status, body, _ = call(base, "POST", "/auth/register", {"email": f"fuzz-{uuid.uuid4().hex[:10]}@example.com", "password": "correct horse battery"})
        assert status == 201, (status, body)
        self.token = body["token"]
        self.user = body["user"]["id"]
        device = "device_" + str(uuid.uuid4())
        status, registered, _ = call(base, "POST", "/v1/device/register", {}, headers={"X-App-ID": "app_sandbox", "X-Device-ID": device})
        assert status == 200, (status, registered)
        self.device = (device, registered["device_token"], registered["device_secret"])
        keys = os.environ.get("CHIPPI_SANDBOX_MERCHANT_KEYS", "pk_test_ci:sk_test_ci_secret").split(":", 1)
        self.chippi = {"x-api-key": keys[0], "Authorization": f"Bearer {keys[1]}"}
        status, conversation, _ = self.cutie("POST", "/v1/conversations", {"category": "bug", "initial_message": "fuzz"})
        self.conversation = conversation.get("conversation_id", "conv_x") if isinstance(conversation, dict) else "conv_x"

    def cutie(self, method, path, body):
        data = json.dumps(body).encode() if body is not None else b""
        millis = str(int(time.time() * 1000))
        key = str(uuid.uuid4())
        # The signature covers the Idempotency-Key when one is sent (docs/cutie.md).
        text = f"{millis}\n{method}\n{path}\n{hashlib.sha256(data).hexdigest()}\n{key}"
        secret = base64.urlsafe_b64decode(self.device[2] + "=" * (-len(self.device[2]) % 4))
        signature = hmac.new(secret, text.encode(), hashlib.sha256).hexdigest()
        headers = {"X-App-ID": "app_sandbox", "X-Device-ID": self.device[0], "X-Device-Token": self.device[1], "X-Timestamp": millis,
                   "X-Signature": signature, "Idempotency-Key": key}
        return call(self.base, method, path, body, headers=headers, timeout=30)

    def send(self, method, path, tag, body):
        if tag == "cutie" and path.startswith("/v1/") and not path.startswith("/v1/admin"):
            return self.cutie(method, path, body)
        if tag == "chippipay" or path.startswith("/v1/chipi") or path.startswith("/v1/sku") or path.startswith("/v1/paymaster"):
            return call(self.base, method, path, body, key=str(uuid.uuid4()), headers=self.chippi, timeout=30)
        return call(self.base, method, path, body, token=self.token, key=str(uuid.uuid4()), timeout=30)


def concrete(path, credentials):
    """The path with each {parameter} filled: the fuzzing device's conversation, else a made-up id."""
    import re
    return re.sub(r"\{[^}]+\}", lambda match: credentials.conversation if "conversation" in path or match.group(0) == "{id}" else "x_fuzz", path)


def bodies_door(base, purse, seconds):
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
    import yaml
    status, text, _ = call(base, "GET", "/openapi.yaml")
    document = yaml.safe_load(text)
    credentials = Credentials(base, purse)
    operations = [op for op in operation_bodies(document) if not op[1].startswith("/sandbox/") or op[1] in ("/sandbox/nexus/fund",)]
    per_operation = max(2.0, seconds / max(1, len(operations)))
    sent = 0
    for method, path, tag, names in operations:
        target = concrete(path, credentials)
        values = hostile_values()
        shaped = st.fixed_dictionaries({}, optional={name: values for name in names}) if names else values
        bodies = st.one_of(shaped, values, st.dictionaries(st.text(max_size=20), values, max_size=8))
        started = time.time()
        failures = []

        @settings(max_examples=400, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
        @given(body=bodies)
        def attempt(body):
            nonlocal sent
            if time.time() - started > per_operation:
                return
            status, answer, _ = credentials.send(method, target, tag, body)
            sent += 1
            if status == 0 or (status >= 500 and status not in (502, 503)):
                failures.append((status, body, answer))
                raise AssertionError(f"{method} {target} answered {status}")

        try:
            attempt()
        except AssertionError:
            status, body, answer = failures[-1]
            fail("bodies", f"{method} {target} answered {status}: {str(answer)[:200]}", {"method": method, "path": target, "body": body})
        if not alive(base):
            fail("bodies", f"the server stopped answering after {method} {target}", {"method": method, "path": target})
    print(f"PASS bodies: {sent} hostile bodies to {len(operations)} operations with real credentials, no 5xx, the server alive")


# MARK: wyseman — frames over a logged-in websocket

def deep(depth):
    return '{"items":[' * depth + '"code = eng"' + "]}" * depth


def wyseman_frame(number):
    views = ["mychips.users_v_me", "mychips.tallies_v_me", "mychips.chits_v_me", "mychips.tokens_v_me", "base.language_v", "base.ent_v",
             "mychips.contracts_v", "mychips.users_v_tallysum", "wm.table_text", "mychips.nope", "", "x" * 500]
    actions = ["select", "tuple", "insert", "update", "delete", "lang", "meta", "action", "explode", "", None]
    numbers = ["1e19", "1e400", "-1e400", "9223372036854775807", "9223372036854775808", "-9223372036854775809", "18446744073709551616",
               "0.5", "-0", "1E+308", "123456789012345678901234567890"]
    columns = ["tally_seq", "chit_seq", "units", "net", "comment", "tally_uuid", "status", "chain_idx", "crt_date", "username", "code"]
    choice = rng.random()
    view, action = rng.choice(views), rng.choice(actions)
    head = f'"id":{number},"view":{json.dumps(view)}' + (f',"action":{json.dumps(action)}' if action is not None else "")
    if choice < 0.3:
        where = "{" + ",".join(f'{json.dumps(rng.choice(columns))}:{rng.choice(numbers)}' for _ in range(rng.randint(1, 4))) + "}"
    elif choice < 0.45:
        where = "[" + ",".join(f'[{json.dumps(rng.choice(columns))},{json.dumps(rng.choice(["=", "<", ">=", "~", "in", "isnull", "diff", ";"]))},{rng.choice(numbers)}]'
                               for _ in range(rng.randint(1, 4))) + "]"
    elif choice < 0.55:
        where = deep(rng.choice([10, 200, 1000, 5000]))
    elif choice < 0.65:
        where = "[" + ",".join(['"code = eng"'] * rng.choice([100, 10000])) + "]"
    elif choice < 0.75:
        units = rng.choice(numbers + ["1", "-5", '"7"', "null", "[]"])
        fields = (f'{{"chit_uuid":"{uuid.uuid4()}","chit_seq":{rng.choice(numbers + ["1"])},"units":{units},"request":"good",'
                  f'"issuer":"foil","chit_date":"2025-11-24T16:00:00.1234567890123456789Z","signature":"{base64.urlsafe_b64encode(os.urandom(132)).decode()}"}}')
        return "{" + f'"id":{number},"view":"mychips.chits_v_me","action":"insert","fields":{fields}' + "}"
    elif choice < 0.85:
        return "{" + head + ',"fields":' + rng.choice(['["*"]', '["units","net"]', "[" + ",".join(['"code"'] * 5000) + "]", '{"a":1}', "1e400"]) + \
            ',"order":' + rng.choice(['["code"]', '[{"field":"code","asc":false}]', "1e19", '[[[]]]']) + ',"limit":' + rng.choice(numbers) + "}"
    else:
        raw = rng.choice(["not json", "[]", "{}", '{"id":' + rng.choice(numbers) + "}", "{" * 3000, '"' + "\\u0000" * 100 + '"',
                          json.dumps({"id": number, "view": view, "action": "action", "name": rng.choice(["invite", "close", "x" * 300]),
                                      "data": {"keys": [{"tally_seq": 10**30}], "options": {"format": ["json"] * 3}}})])
        return raw
    return "{" + head + ',"where":' + where + "}"


def open_tally(base, purse):
    """Two users with an open tally (20 CHIPs of credit each way), made with the CLI as people make
    one; then the payer's signing key, exported as a signkey link and opened here. Returns the
    payer's name and key."""
    home = subprocess.check_output(["mktemp", "-d"]).decode().strip()
    parts = urllib.parse.urlsplit(base)
    # Tickets name where the provider is (CHIPS_HOST/CHIPS_PORT): here, the server under attack.
    env = {**os.environ, "PURSE_HOME": home, "CHIPS_HOST": parts.hostname, "CHIPS_PORT": str(parts.port)}
    tag = uuid.uuid4().hex[:8]
    lender, payer = f"fzl{tag}", f"fzp{tag}"

    def cli(*args, stdin=None):
        return subprocess.run([purse, "chips", *args], env=env, input=stdin, capture_output=True, text=True, check=True, timeout=60).stdout

    for user, name, profile in [(lender, "Lender", "lender"), (payer, "Payer", "payer")]:
        ticket = cli("ticket", "--user", user, "--name", name, "--json")
        cli("connect", "--profile", profile, ticket)
    cli("tally", "new", "--profile", "lender", "--lend", "20", "--borrow", "20")
    invite = cli("tally", "invite", "--profile", "lender", "1").splitlines()[0]
    cli("tally", "accept", "--profile", "payer", invite)
    cli("tally", "offer", "--profile", "lender", "1")
    cli("tally", "open", "--profile", "payer", "1")
    link = next(line for line in cli("key", "export", "--profile", "payer", stdin="fuzz passphrase\n").splitlines() if "signkey?" in line)
    key, _ = chips_wyseman.signkey_private_key(link.strip(), "fuzz passphrase")
    return payer, key


def signed_chit_frame(number, tally, key):
    """A payment on the open tally, signed by the payer's key as the wallet signs one (stable
    JSON of the core, ECDSA P-521 over SHA-384, raw r‖s), with units at and past every bound."""
    units = rng.choice([1, 2, 19999, 20000, 20001, 2**62, 2**63 - 2, 2**63 - 1, 2**63, 2**64, -1, 0, -(2**63)])
    chit = str(uuid.uuid4())
    millis = int(time.time() * 1000) + rng.choice([0, 0, -86_400_000, 10**6])
    date = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(millis // 1000)) + f".{millis % 1000:03d}Z"
    core = {"by": tally["tally_type"], "date": date, "tally": tally["tally_uuid"], "type": "tran", "units": units, "uuid": chit}
    signature = chips_wyseman.raw_signature(key, json.dumps(core, sort_keys=True, separators=(",", ":"), ensure_ascii=False))
    fields = {"chit_seq": tally["tally_seq"], "chit_uuid": chit, "chit_type": "tran", "issuer": tally["tally_type"], "chit_date": date,
              "request": "good", "signature": signature, "units": units}
    return json.dumps({"id": number, "view": "mychips.chits_v_me", "action": "insert", "fields": fields})


async def signed_chits(base, purse, seconds):
    """Signed payments with extreme units on a real open tally: each answered, and afterwards the
    payer's tally still within its 20-CHIP limit (nothing minted, nothing wrapped)."""
    import websockets
    from cryptography.hazmat.primitives.asymmetric import ec
    payer, key = open_tally(base, purse)
    ticket = json.loads(subprocess.check_output([purse, "chips", "ticket", "--user", payer, "--json"], env={**os.environ}))["ticket"]
    login = chips_wyseman.public_jwk(ec.generate_private_key(ec.SECP521R1()))
    url = chips_wyseman.ws_url(base, user=payer, token=ticket["token"], pub=chips_wyseman.b64u(json.dumps(login).encode()))
    deadline = time.time() + seconds
    sent = good = 0
    async with websockets.connect(url, max_size=2**24, open_timeout=10) as ws:
        async def ask(frame):
            await ws.send(frame)
            while True:
                answer = json.loads(await asyncio.wait_for(ws.recv(), 15))
                if isinstance(answer, dict) and answer.get("id") == json.loads(frame).get("id"):
                    return answer

        tallies = (await ask(json.dumps({"id": 1, "view": "mychips.tallies_v_me", "action": "select",
                                         "fields": ["tally_seq", "tally_uuid", "tally_type", "status", "net"]})))["data"]
        tally = next(t for t in tallies if t["status"] == "open")
        while time.time() < deadline:
            sent += 1
            frame = signed_chit_frame(sent + 1, tally, key)
            try:
                answer = await ask(frame)
            except Exception as error:
                fail("wyseman", f"no answer to a signed chit ({type(error).__name__}: {error})", frame.encode())
            if "data" in answer:
                good += 1
            elif "error" not in answer:
                fail("wyseman", f"an answer that is neither data nor error: {str(answer)[:200]}", frame.encode())
        after = (await ask(json.dumps({"id": 10**9, "view": "mychips.tallies_v_me", "action": "select",
                                       "fields": ["tally_uuid", "net"], "where": {"tally_uuid": tally["tally_uuid"]}})))["data"]
    nets = [int(row["net"]) for row in after]
    if not nets or any(abs(net) > 20_000 for net in nets):
        fail("wyseman", f"the payer's tally left its limit: net {nets}", b"")
    print(f"PASS wyseman: {sent} signed chits with extreme units ({good} within the limit stored), the tally's net {nets[0]} within ±20,000")


async def wyseman_door(base, purse, seconds):
    import websockets
    ticket = json.loads(subprocess.check_output([purse, "chips", "ticket", "--user", "fuzzer", "--name", "Fuzzer", "--json"],
                                                env={**os.environ}))["ticket"]
    from cryptography.hazmat.primitives.asymmetric import ec
    key = ec.generate_private_key(ec.SECP521R1())
    numbers = key.public_key().public_numbers()
    jwk = {"kty": "EC", "crv": "P-521", "x": base64.urlsafe_b64encode(numbers.x.to_bytes(66, "big")).rstrip(b"=").decode(),
           "y": base64.urlsafe_b64encode(numbers.y.to_bytes(66, "big")).rstrip(b"=").decode()}
    pub = base64.urlsafe_b64encode(json.dumps(jwk).encode()).rstrip(b"=").decode()
    parts = urllib.parse.urlsplit(base)
    url = f"ws://{parts.hostname}:{parts.port}/?" + urllib.parse.urlencode({"user": "fuzzer", "token": ticket["token"], "pub": pub})
    deadline = time.time() + seconds
    sent = 0
    async with websockets.connect(url, max_size=2**24, open_timeout=10) as ws:
        while time.time() < deadline:
            sent += 1
            frame = wyseman_frame(sent)
            try:
                await ws.send(frame)
                answer = json.loads(await asyncio.wait_for(ws.recv(), 15))
            except Exception as error:  # a closed connection or no answer
                fail("wyseman", f"no answer ({type(error).__name__}: {error})", frame.encode())
            if not isinstance(answer, dict) or ("data" not in answer and "error" not in answer):
                fail("wyseman", f"an answer that is neither data nor error: {str(answer)[:200]}", frame.encode())
            if sent % 50 == 0 and not alive(base):
                fail("wyseman", "the server stopped answering /health", frame.encode())
    if not alive(base):
        fail("wyseman", "the server stopped answering /health", b"")
    print(f"PASS wyseman: {sent} hostile frames on one logged-in socket, each answered, the server alive")


def main():
    base, purse = sys.argv[1].rstrip("/"), sys.argv[2]
    seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 60
    http_door(base, seconds)
    bodies_door(base, purse, seconds)
    asyncio.run(wyseman_door(base, purse, seconds))
    asyncio.run(signed_chits(base, purse, min(seconds, 20)))


if __name__ == "__main__":
    main()
