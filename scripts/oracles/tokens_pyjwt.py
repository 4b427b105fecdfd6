#!/usr/bin/env python3
"""Independent checks of the server's HS256 tokens (TokenService) against PyPI's `pyjwt`.

  fixtures OUT     tokens made by pyjwt under the fixture secret — valid ones and ones that must be
                   refused (alg none, HS512, another key, tampered payload, wrong claim types) —
                   with the claims they carry: a fixture `swift test` replays.
  verify IN        tokens our TokenService issued (written by the Swift test when
                   PURSE_TOKEN_VECTORS_OUT is set) must verify in pyjwt with the same secret and
                   carry the claims the test recorded.

Prints "N passed, N failed"; exit 0 when all pass.
"""
import base64
import hashlib
import hmac
import json
import sys

import jwt

SECRET = bytes([7] * 32)
results = {"passed": 0, "failed": 0}


def check(name, ok, detail=""):
    results["passed" if ok else "failed"] += 1
    print(("PASS " if ok else "FAIL ") + name + (f": {detail}" if detail and not ok else ""), flush=True)


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def hs256(header, payload, key=SECRET):
    """A token signed by hand, for headers and payloads pyjwt will not write."""
    signing_input = b64(json.dumps(header, separators=(",", ":")).encode()) + "." + b64(payload)
    return signing_input + "." + b64(hmac.new(key, signing_input.encode(), hashlib.sha256).digest())


# Refused by our service, taken by pyjwt.
STRICTER = {"exp as a string", "no purpose", "intent not a string", "signature padded"}


def fixtures(out):
    step_up = {"sub": "usr_fixture", "exp": 2000000000, "iat": 1999999700, "jti": "jti_fixture_1",
               "purpose": "nexus.verification", "intent": "transaction"}
    session = {"sub": "usr_fixture", "exp": 2000000000, "iat": 1999990000, "jti": "jti_fixture_2", "purpose": "session"}
    escaped = dict(session, sub="usr_\u00e9\u20ac\"\\/\n", jti="jti_fixture_3")
    cases = [
        {"name": "step-up token", "token": jwt.encode(step_up, SECRET, algorithm="HS256"), "claims": step_up},
        {"name": "session token", "token": jwt.encode(session, SECRET, algorithm="HS256"), "claims": session},
        {"name": "escaped strings", "token": jwt.encode(escaped, SECRET, algorithm="HS256"), "claims": escaped},
        {"name": "alg none", "token": jwt.encode(session, None, algorithm="none"), "claims": None},
        {"name": "HS512 with the same key", "token": jwt.encode(session, SECRET, algorithm="HS512"), "claims": None},
        {"name": "another key", "token": jwt.encode(session, bytes([8] * 32), algorithm="HS256"), "claims": None},
        {"name": "exp as a string", "token": jwt.encode(dict(session, exp="2000000000"), SECRET, algorithm="HS256"), "claims": None},
        {"name": "no purpose", "token": jwt.encode({k: v for k, v in session.items() if k != "purpose"}, SECRET, algorithm="HS256"), "claims": None},
        {"name": "intent not a string", "token": jwt.encode(dict(step_up, intent=1), SECRET, algorithm="HS256"), "claims": None},
        {"name": "payload not JSON", "token": hs256({"alg": "HS256", "typ": "JWT"}, b"not json"), "claims": None},
    ]
    valid = cases[0]["token"]
    head, payload, signature = valid.split(".")
    tampered = json.loads(base64.urlsafe_b64decode(payload + "=="))
    tampered["sub"] = "usr_attacker"
    cases.append({"name": "tampered payload", "token": head + "." + b64(json.dumps(tampered, separators=(",", ":")).encode()) + "." + signature, "claims": None})
    cases.append({"name": "signature padded", "token": valid + "=", "claims": None})
    for case in cases:
        try:
            jwt.decode(case["token"], SECRET, algorithms=["HS256"], options={"verify_exp": False, "verify_iat": False})
            accepted = True
        except jwt.PyJWTError:
            accepted = False
        # pyjwt checks the signature and the registered claims it is asked to; the rest are ours:
        # claim types, our required claims, and the exact base64url encoding.
        expected = case["claims"] is not None or case["name"] in STRICTER
        check(f"pyjwt {'accepts' if expected else 'refuses'}: {case['name']}", accepted == expected)
    with open(out, "w") as f:
        json.dump({"secret_hex": SECRET.hex(), "cases": cases}, f, indent=1, ensure_ascii=False)
    print(f"wrote {len(cases)} cases to {out}")


def verify(path):
    with open(path) as f:
        vectors = json.load(f)
    for vector in vectors["tokens"]:
        try:
            claims = jwt.decode(vector["token"], bytes.fromhex(vectors["secret_hex"]), algorithms=["HS256"], options={"verify_exp": False, "verify_iat": False})
            header = jwt.get_unverified_header(vector["token"])
            check(f"pyjwt verifies our token ({vector['claims']['purpose']})",
                  claims == vector["claims"] and header == {"alg": "HS256", "typ": "JWT"}, f"{claims} / {header}")
        except jwt.PyJWTError as error:
            check(f"pyjwt verifies our token ({vector['claims']['purpose']})", False, str(error))
    if not vectors["tokens"]:
        check("vectors present", False)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("fixtures", "verify"):
        sys.exit(__doc__)
    (fixtures if sys.argv[1] == "fixtures" else verify)(sys.argv[2])
    print(f"{results['passed']} passed, {results['failed']} failed")
    sys.exit(1 if results["failed"] else 0)
