#!/usr/bin/env python3
"""Independent checks of Maly's Stripe protocol against PyPI's `stripe` library.

  fixtures OUT_DIR   webhook headers signed by stripe.WebhookSignature (valid, tampered, stale,
                     rotated secrets) and the exact HTTP requests stripe-python sends for the three
                     Connect calls (recorded at a local capture server): fixtures `swift test` replays.
  live URL KEY       stripe-python pointed at our sandbox (api_base URL/sandbox/stripe, api_key KEY)
                     creates an account and an account link and retrieves the account.

Prints "N passed, N failed"; exit 0 when all pass.
"""
import http.server
import json
import sys
import threading
import urllib.parse

import stripe

results = {"passed": 0, "failed": 0}
SECRET = "whsec_test_secret_for_fixtures_0123456789"


def check(name, ok, detail=""):
    results["passed" if ok else "failed"] += 1
    print(("PASS " if ok else "FAIL ") + name + (f": {detail}" if detail and not ok else ""), flush=True)


def webhook_fixtures():
    payload = json.dumps({"id": "evt_fixture", "object": "event", "type": "account.updated",
                          "data": {"object": {"id": "acct_fixture", "object": "account"}}}, separators=(",", ":"))
    t = 1700000000
    valid = stripe.WebhookSignature.generate_signature_header(payload, SECRET, timestamp=t)
    stripe.WebhookSignature.verify_header(payload, valid, SECRET, tolerance=None)
    rotated = stripe.WebhookSignature.generate_signature_header(payload, "whsec_old", timestamp=t) + "," + valid.split(",")[1]
    stripe.WebhookSignature.verify_header(payload, rotated, SECRET, tolerance=None)
    cases = [
        {"name": "valid", "header": valid, "payload": payload, "now": t + 10, "accepted": True},
        {"name": "rotated secrets, one matches", "header": rotated, "payload": payload, "now": t, "accepted": True},
        {"name": "tampered payload", "header": valid, "payload": payload.replace("acct_fixture", "acct_attacker"), "now": t, "accepted": False},
        {"name": "wrong secret", "header": stripe.WebhookSignature.generate_signature_header(payload, "whsec_other", timestamp=t),
         "payload": payload, "now": t, "accepted": False},
        {"name": "stale (301 s)", "header": valid, "payload": payload, "now": t + 301, "accepted": False},
        {"name": "future (301 s)", "header": valid, "payload": payload, "now": t - 301, "accepted": False},
        {"name": "no v1", "header": f"t={t},v0=abc", "payload": payload, "now": t, "accepted": False},
    ]
    # stripe-python's own verdict on the signature (its clock is real time, so tolerance is ours to test).
    for case in cases:
        try:
            stripe.WebhookSignature.verify_header(case["payload"], case["header"], SECRET, tolerance=None)
            signature_ok = True
        except stripe.SignatureVerificationError:
            signature_ok = False
        expected = case["accepted"] or case["name"].startswith(("stale", "future"))
        check(f"stripe-python agrees on '{case['name']}'", signature_ok == expected)
    return {"secret": SECRET, "producedBy": f"stripe-python {stripe.VERSION}", "cases": cases}


class Capture(http.server.BaseHTTPRequestHandler):
    recorded = []
    answers = {
        "/v1/accounts": {"id": "acct_1Capture", "object": "account", "business_profile": {}, "capabilities": {}, "charges_enabled": False,
                         "country": "US", "created": 1, "default_currency": "usd", "details_submitted": False, "email": "host@example.com",
                         "payouts_enabled": False, "type": "express"},
        "/v1/account_links": {"object": "account_link", "created": 1, "expires_at": 301, "url": "https://connect.example/setup/x"},
    }

    def handle_one(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode() if length else ""
        path = urllib.parse.urlsplit(self.path).path
        Capture.recorded.append({
            "method": self.command, "path": path, "body": body,
            "headers": {k: v for k, v in self.headers.items() if k.lower() in ("authorization", "content-type", "idempotency-key", "stripe-version")},
        })
        answer = Capture.answers.get(path) or Capture.answers["/v1/accounts"]
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = handle_one
    do_POST = handle_one

    def log_message(self, *args):
        pass


def request_fixtures():
    server = http.server.HTTPServer(("127.0.0.1", 0), Capture)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    client = stripe.StripeClient("sk_test_fixture", base_addresses={"api": f"http://127.0.0.1:{server.server_port}"}, stripe_version="2024-06-20")
    client.v1.accounts.create(params={"type": "express", "country": "US", "email": "host@example.com",
                                      "capabilities": {"card_payments": {"requested": True}, "transfers": {"requested": True}},
                                      "metadata": {"purse_user_id": "usr_fixture"}}, options={"idempotency_key": "key-create"})
    client.v1.account_links.create(params={"account": "acct_1Capture", "refresh_url": "https://app.example/stripe/connect/reauth",
                                           "return_url": "https://app.example/stripe/connect/success", "type": "account_onboarding"},
                                   options={"idempotency_key": "key-link"})
    client.v1.accounts.retrieve("acct_1Capture")
    server.shutdown()
    check("stripe-python requests recorded", len(Capture.recorded) == 3, Capture.recorded)
    return {"producedBy": f"stripe-python {stripe.VERSION}", "requests": Capture.recorded}


def fixtures(out_dir):
    with open(f"{out_dir}/stripe_webhooks.json", "w") as handle:
        json.dump(webhook_fixtures(), handle, indent=2, sort_keys=True)
        handle.write("\n")
    with open(f"{out_dir}/stripe_requests.json", "w") as handle:
        json.dump(request_fixtures(), handle, indent=2, sort_keys=True)
        handle.write("\n")


def live(url, key):
    client = stripe.StripeClient(key, base_addresses={"api": url.rstrip("/") + "/sandbox/stripe"}, stripe_version="2024-06-20", max_network_retries=0)
    account = client.v1.accounts.create(params={"type": "express", "email": "oracle@example.com",
                                                "capabilities": {"card_payments": {"requested": True}, "transfers": {"requested": True}}},
                                        options={"idempotency_key": "oracle-create"})
    check("stripe-python creates an account in our sandbox", account.id.startswith("acct_") and account.type == "express", account)
    check("stripe-python parses our account (capabilities inactive)", account.capabilities["card_payments"] == "inactive", account)
    again = client.v1.accounts.create(params={"type": "express", "email": "oracle@example.com",
                                              "capabilities": {"card_payments": {"requested": True}, "transfers": {"requested": True}}},
                                      options={"idempotency_key": "oracle-create"})
    check("the sandbox honours Stripe idempotency", again.id == account.id)
    link = client.v1.account_links.create(params={"account": account.id, "refresh_url": f"{url}/stripe/connect/reauth",
                                                  "return_url": f"{url}/stripe/connect/success", "type": "account_onboarding"})
    check("stripe-python creates an account link", link.url.startswith(url) and link.expires_at > link.created, link)
    fetched = client.v1.accounts.retrieve(account.id)
    check("stripe-python retrieves the account", fetched.id == account.id and fetched.details_submitted is False, fetched)
    try:
        client.v1.accounts.retrieve("acct_doesnotexist")
        check("missing accounts are Stripe errors", False, "no error")
    except stripe.InvalidRequestError as error:
        check("missing accounts are Stripe errors", error.http_status == 404 and error.code == "resource_missing", error)
    try:
        stripe.StripeClient("sk_test_wrong", base_addresses={"api": url.rstrip("/") + "/sandbox/stripe"}, max_network_retries=0).v1.accounts.retrieve(account.id)
        check("a wrong key is refused", False, "accepted")
    except stripe.AuthenticationError:
        check("a wrong key is refused", True)


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "fixtures":
        fixtures(sys.argv[2])
    elif len(sys.argv) >= 4 and sys.argv[1] == "live":
        live(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
    print(f"stripe-connect: {results['passed']} passed, {results['failed']} failed")
    sys.exit(1 if results["failed"] else 0)


if __name__ == "__main__":
    main()
