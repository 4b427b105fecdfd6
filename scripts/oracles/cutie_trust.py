#!/usr/bin/env python3
"""Independent checks of Cuti-E's trust layer.

  cutie_trust.py pyattest VECTORS.json
      pyattest (PyPI) verifies the attestation and the assertion the SDK's software attester
      made against the sandbox's development CA (written by the Swift test
      writesAttestationVectors), and refuses them with another challenge, app id or client data.

  cutie_trust.py make-signer DIR
      An App Store-style signing chain made here with `cryptography` (root, intermediate with
      Apple's OID 1.2.840.113635.100.6.2.1, leaf with 1.2.840.113635.100.6.11.1): DIR/root.pem is
      what the server is told to trust (CUTIE_STOREKIT_ROOT).

  cutie_trust.py storekit URL DIR DATA_DIR
      app-store-server-library's SignedDataVerifier, given the sandbox's development root
      (DATA_DIR/cutie-storekit-dev-root.pem), accepts the sandbox's signed transactions and
      notifications; and the server accepts transactions and notifications this script signs
      with its own chain (pyjwt, ES256, x5c), refusing them altered.
"""
import asyncio
import base64
import datetime
import hashlib
import hmac
import json
import os
import sys
import time
import urllib.error
import urllib.request
import uuid

checks = 0


def check(condition, what):
    global checks
    if not condition:
        print(f"FAIL: {what}")
        sys.exit(1)
    checks += 1


def b64(data):
    return base64.b64decode(data)


# ---------------------------------------------------------------- pyattest


def run_pyattest(path):
    from cryptography.hazmat.primitives.asymmetric import ec
    from pyattest.assertion import Assertion
    from pyattest.attestation import Attestation
    from pyattest.configs.apple import AppleConfig

    vectors = json.load(open(path))
    key_id = b64(vectors["key_id"])
    root = vectors["root_pem"].encode()
    nonce = (vectors["challenge"] + "|" + vectors["key_id"]).encode()  # the SDK's client data: challenge|keyId (base64)

    def attest(app_id=vectors["app_id"], nonce=nonce):
        config = AppleConfig(key_id=key_id, app_id=app_id, production=False, root_ca=root)
        attestation = Attestation(b64(vectors["attestation"]), nonce, config)
        try:
            asyncio.run(attestation.verify())
            return True
        except Exception as error:  # pyattest raises its own exception types per check
            return type(error).__name__

    check(attest() is True, "pyattest verifies the software attester's attestation")
    check(attest(nonce=("another challenge|" + vectors["key_id"]).encode()) == "InvalidNonceException", "pyattest refuses another challenge")
    check(attest(app_id="PURSETEAM0.com.example.other") == "InvalidAppIdException", "pyattest refuses another app id")

    public_key = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), b64(vectors["public_key"]))
    config = AppleConfig(key_id=key_id, app_id=vectors["app_id"], production=False, root_ca=root)

    def assert_(client_data):
        assertion = Assertion(b64(vectors["assertion"]), hashlib.sha256(client_data).digest(), public_key, config)
        try:
            assertion.verify()
            return assertion.data
        except Exception as error:
            return type(error).__name__

    data = assert_(b64(vectors["client_data"]))
    check(isinstance(data, dict) and data["counter"] == 1, "pyattest verifies the assertion (counter 1)")
    check(not isinstance(assert_(b"another request"), dict), "pyattest refuses the assertion over another request")
    print(f"cutie_trust pyattest: {checks} checks passed")


# ---------------------------------------------------------------- StoreKit

LEAF_OID = "1.2.840.113635.100.6.11.1"
INTERMEDIATE_OID = "1.2.840.113635.100.6.2.1"


def make_signer(directory):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    os.makedirs(directory, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc)
    keys = [ec.generate_private_key(ec.SECP256R1()) for _ in range(3)]
    names = [x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
             for name in ("Oracle StoreKit Root", "Oracle StoreKit Intermediate", "Oracle StoreKit Leaf")]

    def build(subject, issuer, key, issuer_key, ca, oid):
        builder = (x509.CertificateBuilder().subject_name(names[subject]).issuer_name(names[issuer])
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=30))
                   .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
                   .add_extension(x509.KeyUsage(digital_signature=not ca, content_commitment=False, key_encipherment=False,
                                                data_encipherment=False, key_agreement=False, key_cert_sign=ca, crl_sign=ca,
                                                encipher_only=False, decipher_only=False), critical=True)
                   .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False))
        if subject != issuer:
            builder = builder.add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()), critical=False)
        if oid:
            builder = builder.add_extension(x509.UnrecognizedExtension(x509.ObjectIdentifier(oid), b"\x05\x00"), critical=False)
        return builder.sign(issuer_key, hashes.SHA256())

    root = build(0, 0, keys[0], keys[0], True, None)
    intermediate = build(1, 0, keys[1], keys[0], True, INTERMEDIATE_OID)
    leaf = build(2, 1, keys[2], keys[1], False, LEAF_OID)
    open(os.path.join(directory, "root.pem"), "wb").write(root.public_bytes(serialization.Encoding.PEM))
    chain = [base64.b64encode(cert.public_bytes(serialization.Encoding.DER)).decode() for cert in (leaf, intermediate, root)]
    json.dump({"x5c": chain, "key": keys[2].private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                          serialization.NoEncryption()).decode()},
              open(os.path.join(directory, "signer.json"), "w"))
    print(f"cutie_trust: signer in {directory}")


def request(url, method="GET", body=None, headers=None):
    data = body if isinstance(body, bytes) else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=20) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


class Device:
    """A Cuti-E device: registered, then every request signed as the SDK signs it."""

    def __init__(self, base):
        self.base = base
        self.id = "device_" + str(uuid.uuid4())
        status, body = request(f"{base}/v1/device/register", "POST", {}, {"X-App-ID": "app_sandbox", "X-Device-ID": self.id})
        check(status == 200, f"registration: {status} {body}")
        self.token = body["device_token"]
        secret = body["device_secret"]
        self.secret = base64.urlsafe_b64decode(secret + "=" * (-len(secret) % 4))

    def send(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else b""
        stamp = str(int(time.time() * 1000))
        text = f"{stamp}\n{method}\n{path}\n{hashlib.sha256(data).hexdigest()}"
        signature = hmac.new(self.secret, text.encode(), hashlib.sha256).hexdigest()
        headers = {"X-App-ID": "app_sandbox", "X-Device-ID": self.id, "X-Device-Token": self.token, "X-Timestamp": stamp, "X-Signature": signature}
        return request(self.base + path, method, data if body is not None else None, headers)


def run_storekit(base, directory, data_dir):
    import jwt
    from appstoreserverlibrary.models.Environment import Environment
    from appstoreserverlibrary.signed_data_verifier import SignedDataVerifier, VerificationException
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    bundle = "com.purse.cutie.sandbox"
    root_pem = open(os.path.join(data_dir, "cutie-storekit-dev-root.pem"), "rb").read()
    root_der = x509.load_pem_x509_certificate(root_pem).public_bytes(serialization.Encoding.DER)
    verifier = SignedDataVerifier([root_der], False, Environment.SANDBOX, bundle, None)

    # 1. Apple's library accepts what the sandbox signs.
    status, signed = request(f"{base}/sandbox/storekit/transactions", "POST", {"bundle_id": bundle, "product_id": "com.cutie.pro.monthly"})
    check(status == 200, "the sandbox signs a transaction")
    transaction = verifier.verify_and_decode_signed_transaction(signed["signed_transaction"])
    check(transaction.productId == "com.cutie.pro.monthly" and transaction.bundleId == bundle, "SignedDataVerifier accepts the sandbox's transaction")
    status, notification = request(f"{base}/sandbox/storekit/notifications", "POST", {
        "notification_type": "DID_RENEW", "bundle_id": bundle, "product_id": "com.cutie.pro.monthly",
        "original_transaction_id": signed["original_transaction_id"]})
    decoded = verifier.verify_and_decode_notification(notification["signedPayload"])
    check(decoded.rawNotificationType == "DID_RENEW" and decoded.data.bundleId == bundle, "SignedDataVerifier accepts the sandbox's notification")
    renewal = verifier.verify_and_decode_renewal_info(decoded.data.signedRenewalInfo)
    check(renewal.originalTransactionId == signed["original_transaction_id"], "SignedDataVerifier accepts the sandbox's renewal info")
    tampered = signed["signed_transaction"][:-4] + ("AAAA" if not signed["signed_transaction"].endswith("AAAA") else "BBBB")
    try:
        verifier.verify_and_decode_signed_transaction(tampered)
        check(False, "SignedDataVerifier accepted an altered signature")
    except VerificationException:
        check(True, "")

    # 2. The server accepts what this script's own chain signs (CUTIE_STOREKIT_ROOT=DIR/root.pem).
    signer = json.load(open(os.path.join(directory, "signer.json")))
    now = int(time.time() * 1000)
    payload = {"transactionId": "2000000900000001", "originalTransactionId": "2000000900000001", "bundleId": bundle,
               "productId": "com.cutie.business.yearly", "purchaseDate": now, "expiresDate": now + 365 * 86_400_000,
               "type": "Auto-Renewable Subscription", "environment": "Sandbox", "signedDate": now, "inAppOwnershipType": "PURCHASED"}
    token = jwt.encode(payload, signer["key"], algorithm="ES256", headers={"x5c": signer["x5c"]})
    SignedDataVerifier([x509.load_pem_x509_certificate(open(os.path.join(directory, "root.pem"), "rb").read())
                        .public_bytes(serialization.Encoding.DER)], False, Environment.SANDBOX, bundle, None).verify_and_decode_signed_transaction(token)
    device = Device(base)
    status, body = device.send("POST", "/v1/subscription/verify", {"platform": "ios", "signed_transaction": token, "product_id": "com.cutie.business.yearly"})
    check(status == 200 and body["tier"] == "business", f"the server accepts a transaction signed here: {status} {body}")
    status, usage = device.send("GET", "/v1/usage")
    check(status == 200 and usage["tier"] == "business" and usage.get("limit") is None, f"usage follows: {usage}")
    other = dict(payload, productId="com.cutie.starter.monthly")
    forged = token.split(".")[0] + "." + base64.urlsafe_b64encode(json.dumps(other).encode()).decode().rstrip("=") + "." + token.split(".")[2]
    status, body = device.send("POST", "/v1/subscription/verify", {"platform": "ios", "signed_transaction": forged, "product_id": "com.cutie.starter.monthly"})
    check(status == 400 and "signature" in body["error"], f"an altered payload is refused: {status} {body}")
    unsigned = jwt.encode(payload, None, algorithm="none", headers={"x5c": signer["x5c"]})
    status, body = device.send("POST", "/v1/subscription/verify", {"platform": "ios", "signed_transaction": unsigned, "product_id": "com.cutie.business.yearly"})
    check(status == 400 and "ES256" in body["error"], f"alg none is refused: {status} {body}")
    # A notification signed here: a refund ends the tier, once.
    note_id = str(uuid.uuid4())
    notification = {"notificationType": "REFUND", "notificationUUID": note_id, "version": "2.0", "signedDate": now,
                    "data": {"bundleId": bundle, "environment": "Sandbox", "signedTransactionInfo": jwt.encode(dict(payload, revocationDate=now), signer["key"], algorithm="ES256", headers={"x5c": signer["x5c"]})}}
    signed_payload = jwt.encode(notification, signer["key"], algorithm="ES256", headers={"x5c": signer["x5c"]})
    status, body = request(f"{base}/v1/appstore/notifications", "POST", {"signedPayload": signed_payload})
    check(status == 200 and body["duplicate"] is False, f"the server takes a notification signed here: {status} {body}")
    status, body = request(f"{base}/v1/appstore/notifications", "POST", {"signedPayload": signed_payload})
    check(status == 200 and body["duplicate"] is True, "a redelivered notification is taken once")
    status, usage = device.send("GET", "/v1/usage")
    check(usage["tier"] == "free" and usage["status"] == "revoked", f"the refund ended the tier: {usage}")
    print(f"cutie_trust storekit: {checks} checks passed")


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "pyattest":
        run_pyattest(sys.argv[2])
    elif mode == "make-signer":
        make_signer(sys.argv[2])
    elif mode == "storekit":
        run_storekit(sys.argv[2].rstrip("/"), sys.argv[3], sys.argv[4])
    else:
        sys.exit(__doc__)
