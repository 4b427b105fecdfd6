#!/usr/bin/env python3
"""Independent checks of Nexus Data's WebAuthn against PyPI implementations.

  softfido2-vectors OUT     soft-fido2 makes a credential and an assertion for fixed challenges;
                            py_webauthn checks them; written as a fixture `swift test` replays.
  verify-client FILE        py_webauthn verifies a registration and an assertion made by our
                            client core (DeviceAuthenticator), exported by `swift test`.
  live URL                  soft-fido2 walks the whole journey against a running `purse serve`:
                            register, enrol, step-up, top-up; and a forged assertion is refused.

Exit status 0 when every check passes; prints "N passed, N failed".
"""
import base64
import json
import sys
import urllib.error
import urllib.request
import uuid

import webauthn
from soft_fido2 import Fido2Authenticator

RP_ID = "localhost"
ORIGIN = "http://localhost:8080"
results = {"passed": 0, "failed": 0}


def b64u_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def b64u(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def check(name, ok, detail=""):
    results["passed" if ok else "failed"] += 1
    print(("PASS " if ok else "FAIL ") + name + (f": {detail}" if detail and not ok else ""))


def normalise(response):
    """soft-fido2 pads its base64url; WebAuthn JSON has no padding."""
    out = {"id": response["id"].rstrip("="), "rawId": response["rawId"].rstrip("="), "type": "public-key", "response": {}}
    for key, value in response["response"].items():
        out["response"][key] = value.rstrip("=") if isinstance(value, str) else value
    return out


def softfido2_vectors(path):
    reg_challenge = b64u(bytes(range(32)))
    auth_challenge = b64u(bytes(range(32, 64)))
    user_handle = b64u(b"usr_vector")
    authenticator = Fido2Authenticator()
    creation = {
        "rp": {"id": RP_ID, "name": "Nexus Data"}, "user": {"id": user_handle, "name": "vector@example.com", "displayName": "Vector"},
        "challenge": reg_challenge, "pubKeyCredParams": [{"type": "public-key", "alg": -7}], "timeout": 60000,
        "attestation": "none", "authenticatorSelection": {"userVerification": "required"}, "excludeCredentials": [], "origin": ORIGIN,
    }
    registration = normalise(authenticator.credential_create(creation))
    verified = webauthn.verify_registration_response(
        credential=registration, expected_challenge=b64u_decode(reg_challenge), expected_rp_id=RP_ID,
        expected_origin=ORIGIN, require_user_verification=True)
    check("py_webauthn accepts the soft-fido2 registration", str(getattr(verified.fmt, "value", verified.fmt)) == "packed")
    request = {"challenge": auth_challenge, "rpId": RP_ID, "allowCredentials": [{"id": registration["id"], "type": "public-key"}],
               "userVerification": "required", "timeout": 60000, "origin": ORIGIN}
    assertion = normalise(authenticator.credential_request(request))
    checked = webauthn.verify_authentication_response(
        credential=assertion, expected_challenge=b64u_decode(auth_challenge), expected_rp_id=RP_ID, expected_origin=ORIGIN,
        credential_public_key=verified.credential_public_key, credential_current_sign_count=verified.sign_count,
        require_user_verification=True)
    check("py_webauthn accepts the soft-fido2 assertion", checked.new_sign_count > verified.sign_count)
    fixture = {
        "producedBy": "soft-fido2 (packed self attestation)", "checkedBy": f"py_webauthn {webauthn.__version__}",
        "rpId": RP_ID, "origin": ORIGIN, "userHandle": user_handle,
        "registration": {"challenge": reg_challenge, "response": registration},
        "authentication": {"challenge": auth_challenge, "response": assertion, "expectedSignCount": checked.new_sign_count},
    }
    with open(path, "w") as handle:
        json.dump(fixture, handle, indent=2, sort_keys=True)
        handle.write("\n")


def verify_client(path):
    with open(path) as handle:
        vectors = json.load(handle)
    registration = vectors["registration"]
    verified = webauthn.verify_registration_response(
        credential=registration["response"], expected_challenge=b64u_decode(registration["challenge"]),
        expected_rp_id=vectors["rpId"], expected_origin=vectors["origin"], require_user_verification=True)
    check("py_webauthn accepts our client's registration (fmt none)", str(getattr(verified.fmt, "value", verified.fmt)) == "none")
    authentication = vectors["authentication"]
    checked = webauthn.verify_authentication_response(
        credential=authentication["response"], expected_challenge=b64u_decode(authentication["challenge"]),
        expected_rp_id=vectors["rpId"], expected_origin=vectors["origin"], credential_public_key=verified.credential_public_key,
        credential_current_sign_count=verified.sign_count, require_user_verification=True)
    check("py_webauthn accepts our client's assertion", checked.new_sign_count == authentication.get("expectedSignCount", 1))
    # A flipped signature byte must fail in the independent implementation too.
    forged = json.loads(json.dumps(authentication["response"]))
    signature = bytearray(b64u_decode(forged["response"]["signature"]))
    signature[-1] ^= 0x01
    forged["response"]["signature"] = b64u(bytes(signature))
    try:
        webauthn.verify_authentication_response(
            credential=forged, expected_challenge=b64u_decode(authentication["challenge"]), expected_rp_id=vectors["rpId"],
            expected_origin=vectors["origin"], credential_public_key=verified.credential_public_key,
            credential_current_sign_count=verified.sign_count, require_user_verification=True)
        check("py_webauthn refuses a forged assertion of ours", False, "accepted")
    except Exception:
        check("py_webauthn refuses a forged assertion of ours", True)


def call(base, method, path, body=None, token=None, key=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, method=method)
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", "Bearer " + token)
    if key:
        request.add_header("Idempotency-Key", key)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            text = response.read().decode()
            return response.status, (json.loads(text) if text else {})
    except urllib.error.HTTPError as error:
        text = error.read().decode()
        return error.code, (json.loads(text) if text else {})


def live(base):
    origin = base.rstrip("/")
    status, answer = call(base, "POST", "/auth/register", {"email": f"fido-{uuid.uuid4().hex[:8]}@example.com", "password": "correct horse"})
    check("register", status == 201, answer)
    token = answer["token"]
    status, _ = call(base, "POST", "/sandbox/nexus/fund", {"amount": 5000}, token, str(uuid.uuid4()))
    check("fund", status == 201)
    authenticator = Fido2Authenticator()
    status, options = call(base, "POST", "/biometric/register/options", token=token)
    check("registration options", status == 200 and options["attestation"] == "none")
    options["origin"] = origin
    registration = normalise(authenticator.credential_create(options))
    status, answer = call(base, "POST", "/biometric/register/verify", registration, token)
    check("our service accepts a soft-fido2 credential (packed self attestation)", status == 201, answer)

    status, request = call(base, "GET", "/biometric/auth/options?intent=transaction", token=token)
    check("authentication options", status == 200 and request["allowCredentials"][0]["id"] == registration["id"], request)
    request["origin"] = origin
    assertion = normalise(authenticator.credential_request(request))
    forged = json.loads(json.dumps(assertion))
    signature = bytearray(b64u_decode(forged["response"]["signature"]))
    signature[-1] ^= 0x01
    forged["response"]["signature"] = b64u(bytes(signature))
    status, answer = call(base, "POST", "/biometric/auth/verify", forged, token)
    check("our service refuses a forged soft-fido2 assertion", status == 401 and answer == {"verified": False, "message": "Signature verification failed"}, answer)

    status, request = call(base, "GET", "/biometric/auth/options?intent=transaction", token=token)
    request["origin"] = origin
    assertion = normalise(authenticator.credential_request(request))
    status, answer = call(base, "POST", "/biometric/auth/verify", assertion, token)
    check("our service accepts a soft-fido2 assertion", status == 200 and answer.get("verified") is True, answer)
    order = {"amount": 500, "productCode": "AIRTIME_MTN", "recipientPhone": "08012345678",
             "verificationToken": answer.get("verificationToken"), "supplierSlug": "mtn", "useCashback": False}
    status, answer = call(base, "POST", "/user/topup", order, token, str(uuid.uuid4()))
    check("top-up with the soft-fido2 step-up", status == 200 and answer["data"]["balance"] == 4500, answer)


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("softfido2-vectors", "verify-client", "live"):
        print(__doc__)
        sys.exit(2)
    {"softfido2-vectors": softfido2_vectors, "verify-client": verify_client, "live": live}[sys.argv[1]](sys.argv[2])
    print(f"nexus-webauthn: {results['passed']} passed, {results['failed']} failed")
    sys.exit(1 if results["failed"] else 0)


if __name__ == "__main__":
    main()
