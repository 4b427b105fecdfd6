#!/usr/bin/env python3
"""Single-use tokens across replicas (run by scripts/cluster.sh): whichever replica a copy reaches,
a WebAuthn challenge answers once, a step-up token buys once, and a replica that has already
checked (and remembered) a token does not let it pass after another replica spent it.

  * a passkey registered with options from one replica and verified on another;
  * one signed assertion sent to every replica at once: exactly one step-up token;
  * a step-up token first checked on two replicas (a top-up refused for the balance, so the token
    is verified and remembered there but not spent), then spent on a third: both others now
    refuse it (`token_used`), with no money moved;
  * one fresh token sent in six top-ups with six keys across the replicas at once: one top-up;
  * 30 wrong sign-ins to the Cuti-E admin dashboard for one e-mail, spread over the replicas at
    once: the limit of 10 holds for the whole service, the rest are told to wait (429);
  * a Cuti-E device-link code shown by a device on one replica and confirmed by two other devices
    on two other replicas at once (the client core, through the `purse` CLI): one device joins.

soft-fido2 (PyPI) is the authenticator.
usage: cluster_tokens.py PURSE   (PURSE: the binary; environment from cluster.sh)
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import uuid
from concurrent.futures import ThreadPoolExecutor

from soft_fido2 import Fido2Authenticator

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
import cluster_http  # noqa: E402
from cluster_http import check  # noqa: E402

proxy = os.environ["CLUSTER_URL"]
replicas = [f"http://127.0.0.1:{port}" for port in os.environ["CLUSTER_PORTS"].split()]


def call(base, method, path, body=None, token=None, key=None):
    status, answer, _ = cluster_http.call(base, method, path, body, token, key, timeout=30)
    return status, answer


def unpadded(response):
    """soft-fido2 pads its base64url; WebAuthn JSON has none."""
    out = {"id": response["id"].rstrip("="), "rawId": response["rawId"].rstrip("="), "type": "public-key", "response": {}}
    for key, value in response["response"].items():
        out["response"][key] = value.rstrip("=") if isinstance(value, str) else value
    return out


def main():
    status, body = call(proxy, "POST", "/auth/register", {"email": f"tokens-{uuid.uuid4().hex[:8]}@example.com", "password": "correct horse battery"})
    check("registered", status == 201, body)
    session = body["token"]
    status, body = call(proxy, "POST", "/sandbox/nexus/fund", {"amount": 5000}, session, str(uuid.uuid4()))
    check("funded ₦5,000", status == 201, body)

    authenticator = Fido2Authenticator()
    status, options = call(replicas[0], "POST", "/biometric/register/options", token=session)
    check("registration options from replica 1", status == 200, options)
    options["origin"] = proxy
    registration = unpadded(authenticator.credential_create(options))
    status, body = call(replicas[1], "POST", "/biometric/register/verify", registration, session)
    check("the passkey verified on replica 2", status == 201, body)

    def assertion():
        status, request = call(replicas[0], "GET", "/biometric/auth/options?intent=transaction", token=session)
        request["origin"] = proxy
        return unpadded(authenticator.credential_request(request))

    signed = assertion()
    with ThreadPoolExecutor(len(replicas)) as pool:
        answers = list(pool.map(lambda base: call(base, "POST", "/biometric/auth/verify", signed, session), replicas))
    verified = [a for s, a in answers if s == 200 and a.get("verified")]
    check("one assertion sent to every replica at once gives exactly one step-up token",
          len(verified) == 1 and all(s in (400, 401) for s, a in answers if not (s == 200 and a.get("verified"))), answers)
    token = verified[0]["verificationToken"]

    order = {"productCode": "AIRTIME_MTN", "recipientPhone": "08012345678", "verificationToken": token}
    for base in replicas[1:]:
        status, body = call(base, "POST", "/user/topup", dict(order, amount=9000), session, str(uuid.uuid4()))
        check(f"the token checked on {base} but not spent (balance too low)", status == 402, (status, body))
    status, body = call(replicas[0], "POST", "/user/topup", dict(order, amount=500), session, str(uuid.uuid4()))
    check("the token spent on replica 1", status == 200, (status, body))
    for base in replicas[1:]:
        status, body = call(base, "POST", "/user/topup", dict(order, amount=500), session, str(uuid.uuid4()))
        check(f"{base}, which had checked the token, refuses it once spent elsewhere",
              status == 401 and "already used" in json.dumps(body), (status, body))

    status, body = call(replicas[2], "POST", "/biometric/auth/verify", assertion(), session)
    check("a second step-up token", status == 200 and body.get("verified"), body)
    fresh = dict(order, amount=500, verificationToken=body["verificationToken"])
    with ThreadPoolExecutor(6) as pool:
        answers = list(pool.map(lambda i: call(replicas[i % len(replicas)], "POST", "/user/topup", fresh, session, str(uuid.uuid4())), range(6)))
    check("one token in six top-ups with six keys across the replicas at once buys once",
          sum(1 for s, _ in answers if s == 200) == 1 and sum(1 for s, _ in answers if s == 401) == 5, answers)
    status, body = call(proxy, "GET", "/user/balance", token=session)
    check("the balance moved for exactly the two top-ups", body.get("balance") == 4000, body)

    email = f"desk-{uuid.uuid4().hex[:8]}@example.com"
    with ThreadPoolExecutor(10) as pool:
        tries = list(pool.map(lambda i: call(replicas[i % len(replicas)], "POST", "/v1/admin/login", {"email": email, "password": f"guess {i}"}), range(30)))
    statuses = sorted(s for s, _ in tries)
    check("30 wrong admin sign-ins across the replicas: exactly 10 judged, 20 told to wait",
          statuses.count(401) == 10 and statuses.count(429) == 20, statuses)

    home = tempfile.mkdtemp(prefix="purse-cluster-home.")
    environment = dict(os.environ, PURSE_HOME=home)

    def cutie(*args):
        return subprocess.run([sys.argv[1], "cutie", *args], capture_output=True, text=True, timeout=60, env=environment)

    shown = cutie("feedback", "--server", replicas[0], "--json", "Linking from the phone", "--name", "Ana")
    check("a conversation on replica 1", shown.returncode == 0, shown.stderr)
    shown = cutie("link", "initiate", "--server", replicas[0])
    code = re.search(r"lnk_[A-Za-z0-9_-]+", shown.stdout)
    check("a link code shown on replica 1", shown.returncode == 0 and code, shown.stdout + shown.stderr)
    with ThreadPoolExecutor(2) as pool:
        confirms = list(pool.map(lambda i: cutie("link", "confirm", "--server", replicas[1 + i], "--profile", f"device{i}", code.group(0)), range(2)))
    joined = [c for c in confirms if c.returncode == 0 and "Linked" in c.stdout]
    refused = [c for c in confirms if c.returncode != 0 and "already used" in c.stderr]
    check("confirmed by two devices on two other replicas at once: exactly one joins",
          len(joined) == 1 and len(refused) == 1, [(c.returncode, c.stdout, c.stderr) for c in confirms])
    subprocess.run(["rm", "-rf", home], check=False)
    print(f"cluster tokens: {cluster_http.passed} passed, 0 failed")


if __name__ == "__main__":
    main()
