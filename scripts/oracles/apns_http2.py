#!/usr/bin/env python3
"""Cuti-E's pushes against an independent HTTP/2 server standing in for APNs.

Generates a CA, a TLS certificate for 127.0.0.1 and an APNs signing key (.p8), serves APNs'
`POST /3/device/{token}` with hypercorn over TLS + HTTP/2 (h2), starts `purse serve` with
APNS_URL, APNS_KEY_FILE, APNS_KEY_ID, APNS_TEAM_ID and APNS_CA_FILE pointing at it, and walks the
journey with the CLI: feedback → push registration → an admin's reply. The stand-in checks each
request as Apple documents it — HTTP/2, the path, apns-* headers, the provider token verified by
pyjwt (ES256, kid, iss, iat) — and answers 200 to the first push and 410 Unregistered to the
second; the push log must then say sent and unregistered, and a third reply must queue no push.

usage: apns_http2.py PURSE_BINARY
"""
import asyncio
import datetime
import ipaddress
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid

import jwt
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from hypercorn.asyncio import serve
from hypercorn.config import Config

KEY_ID, TEAM_ID, TOPIC = "KEY1234567", "TEAM123456", "com.purse.cutie.sandbox"
DEVICE = "ab" * 32
received = []
failures = []


def check(name, ok, detail=""):
    print(("PASS " if ok else "FAIL ") + name + ("" if ok else f": {detail}"), flush=True)
    if not ok:
        failures.append(name)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def certificates(directory):
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Purse test APNs CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                                       key_encipherment=False, data_encipherment=False, key_agreement=False, encipher_only=False,
                                       decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])).issuer_name(ca_name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    paths = {name: os.path.join(directory, name) for name in ["ca.pem", "server.pem", "server.key", "apns.p8"]}
    open(paths["ca.pem"], "wb").write(ca.public_bytes(serialization.Encoding.PEM))
    open(paths["server.pem"], "wb").write(cert.public_bytes(serialization.Encoding.PEM))
    open(paths["server.key"], "wb").write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    apns_key = ec.generate_private_key(ec.SECP256R1())
    open(paths["apns.p8"], "wb").write(apns_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return paths, apns_key.public_key()


def apns_app(public_key):
    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        request = {"http_version": scope["http_version"], "method": scope["method"], "path": scope["path"], "headers": headers, "body": body}
        try:
            token = headers.get("authorization", "").removeprefix("bearer ")
            request["jwt_header"] = jwt.get_unverified_header(token)
            request["claims"] = jwt.decode(token, public_key, algorithms=["ES256"], options={"require": ["iss", "iat"]})
            status, answer = (200, b"") if len(received) == 0 else (410, json.dumps({"reason": "Unregistered", "timestamp": int(time.time() * 1000)}).encode())
        except jwt.PyJWTError as error:
            request["jwt_error"] = repr(error)
            status, answer = 403, b'{"reason":"InvalidProviderToken"}'
        received.append(request)
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"apns-id", headers.get("apns-id", str(uuid.uuid4())).encode()), (b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": answer})
    return app


def run(cmd, env, stdin=None):
    return subprocess.run(cmd, env=env, input=stdin, capture_output=True, text=True, timeout=60, check=True).stdout


def call(url, method, path, body=None, headers=None):
    request = urllib.request.Request(url + path, data=None if body is None else json.dumps(body).encode(), method=method)
    request.add_header("Content-Type", "application/json")
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read().decode()), response.headers


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    purse = os.path.abspath(sys.argv[1])
    work = tempfile.mkdtemp(prefix="purse-apns-")
    paths, public_key = certificates(work)
    apns_port, purse_port = free_port(), free_port()
    config = Config()
    config.bind = [f"127.0.0.1:{apns_port}"]
    config.certfile, config.keyfile = paths["server.pem"], paths["server.key"]
    config.alpn_protocols = ["h2"]
    config.loglevel = "WARNING"
    shutdown = asyncio.Event()
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=lambda: loop.run_until_complete(serve(apns_app(public_key), config, shutdown_trigger=shutdown.wait)), daemon=True)
    thread.start()

    env = dict(os.environ, PURSE_DATA_DIR=os.path.join(work, "data"), PURSE_HOME=os.path.join(work, "home"),
               APNS_URL=f"https://127.0.0.1:{apns_port}", APNS_KEY_FILE=paths["apns.p8"], APNS_KEY_ID=KEY_ID, APNS_TEAM_ID=TEAM_ID,
               APNS_CA_FILE=paths["ca.pem"], CUTIE_ADMIN_PASSWORD="correct-horse-battery")
    url = f"http://127.0.0.1:{purse_port}"
    server = subprocess.Popen([purse, "serve", "--port", str(purse_port), "--data-dir", env["PURSE_DATA_DIR"], "--log-level", "warning"],
                              env=env, stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "serve.log"), "w"))
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(url + "/health", timeout=2)
                break
            except OSError:
                time.sleep(0.1)
        cli = [purse, "cutie"]
        conversation = json.loads(run(cli + ["feedback", "--server", url, "--json", "Push me", "--category", "question"], env))["conversation_id"]
        run(cli + ["push", "--server", url, DEVICE, "--bundle-id", TOPIC], env)
        run(cli + ["admin", "create", "--email", "push@example.com", "--name", "Pat"], env)
        signed_in, headers = call(url, "POST", "/v1/admin/login", {"email": "push@example.com", "password": "correct-horse-battery"})
        session = {"Cookie": headers["Set-Cookie"].split(";")[0], "X-CSRF-Token": signed_in["csrf_token"]}
        for number in (1, 2):
            call(url, "POST", f"/v1/admin/conversations/{conversation}/messages", {"message": f"Answer {number}"}, session)
            deadline = time.time() + 20
            while len(received) < number and time.time() < deadline:
                time.sleep(0.1)
        check("two pushes reached the HTTP/2 stand-in", len(received) == 2, len(received))
        if received:
            first = received[0]
            check("over HTTP/2", first["http_version"] == "2", first["http_version"])
            check("POST /3/device/{token}", first["method"] == "POST" and first["path"] == f"/3/device/{DEVICE}", (first["method"], first["path"]))
            h = first["headers"]
            check("apns-topic is the bundle id", h.get("apns-topic") == TOPIC, h.get("apns-topic"))
            check("apns-push-type alert, apns-priority 10", h.get("apns-push-type") == "alert" and h.get("apns-priority") == "10", h)
            check("apns-expiration in the future", int(h.get("apns-expiration", "0")) > time.time(), h.get("apns-expiration"))
            check("apns-id is a UUID", str(uuid.UUID(h.get("apns-id", "00000000-0000-0000-0000-000000000000"))) == h.get("apns-id"), h.get("apns-id"))
            check("pyjwt verifies the ES256 provider token", "claims" in first, first.get("jwt_error"))
            check("its header names the key", first.get("jwt_header", {}).get("kid") == KEY_ID and first.get("jwt_header", {}).get("alg") == "ES256", first.get("jwt_header"))
            claims = first.get("claims", {})
            check("its claims: iss = team id, iat now", claims.get("iss") == TEAM_ID and abs(claims.get("iat", 0) - time.time()) < 120, claims)
            payload = json.loads(first["body"])
            check("payload {aps: {alert: {title, body}, badge, sound}, conversation_id}",
                  payload.get("conversation_id") == conversation and payload["aps"]["badge"] == 1 and payload["aps"]["sound"] == "default"
                  and "Answer 1" in payload["aps"]["alert"]["body"] and payload["aps"]["alert"]["title"], payload)
        if len(received) == 2:
            check("the provider token is reused", received[0]["headers"]["authorization"] == received[1]["headers"]["authorization"])
        deadline = time.time() + 10
        statuses = []
        while time.time() < deadline:
            pushes, _ = call(url, "GET", f"/v1/admin/pushes?conversation_id={conversation}", headers=session)
            statuses = sorted(p["status"] for p in pushes["pushes"])
            if statuses == ["sent", "unregistered"]:
                break
            time.sleep(0.2)
        check("the push log: sent, then unregistered (410)", statuses == ["sent", "unregistered"], statuses)
        third, _ = call(url, "POST", f"/v1/admin/conversations/{conversation}/messages", {"message": "Answer 3"}, session)
        check("no push to a token APNs said is gone", third["pushes_queued"] == 0, third)
    finally:
        server.terminate()
        server.wait(timeout=30)
        loop.call_soon_threadsafe(shutdown.set)
        thread.join(timeout=10)
    log = open(os.path.join(work, "serve.log")).read()
    check("no provider token or password in the server log", "correct-horse-battery" not in log and "eyJ" not in log)
    print(f"apns-http2: {0 if failures else 1} passed, {len(failures)} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
