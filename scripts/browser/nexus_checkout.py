#!/usr/bin/env python3
"""Drives the Nexus web checkout in headless Chromium with a CDP virtual authenticator
(internal transport, user verification): register → enrol a passkey → fund → buy airtime,
then checks through the API that the balance fell by the amount.

usage: nexus_checkout.py SERVER_URL [SCREENSHOT.png]
The page is opened at http://localhost:PORT (WebAuthn needs a domain, not an IP, as RP id).
"""
import base64
import json
import sys
import urllib.request
import uuid

from cdp import check, chromium, finish

READY = "!!document.getElementById('status')"


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    server = sys.argv[1].rstrip("/")
    port = server.rsplit(":", 1)[1]
    base = f"http://localhost:{port}"
    screenshot = sys.argv[2] if len(sys.argv) > 2 else None
    try:
        with chromium() as cdp:
            run(cdp, server, base, screenshot)
    except Exception as error:
        check("browser run", False, repr(error))
    finish("nexus-browser")


def run(cdp, server, base, screenshot):
    cdp.call("WebAuthn.enable")
    authenticator = cdp.call("WebAuthn.addVirtualAuthenticator", {"options": {
        "protocol": "ctap2", "transport": "internal", "hasResidentKey": True,
        "hasUserVerification": True, "isUserVerified": True, "automaticPresenceSimulation": True,
    }})["authenticatorId"]

    email = f"browser-{uuid.uuid4().hex[:8]}@example.com"
    check("enrol page loads", cdp.goto(f"{base}/nexus/enroll", READY))
    cdp.js(f"document.getElementById('email').value = '{email}'; document.getElementById('password').value = 'correct horse';"
           "document.getElementById('register').click()")
    check("account created in the page", cdp.wait_for("document.getElementById('status').textContent.startsWith('Signed in')"),
          cdp.js("document.getElementById('status').textContent"))
    cdp.js("document.getElementById('enrolButton').click()")
    check("passkey enrolled with navigator.credentials.create",
          cdp.wait_for("document.getElementById('status').textContent === 'Passkey enrolled'"),
          cdp.js("document.getElementById('status').textContent"))
    credentials = cdp.call("WebAuthn.getCredentials", {"authenticatorId": authenticator})["credentials"]
    check("the virtual authenticator holds one credential", len(credentials) == 1, credentials)

    check("checkout page loads", cdp.goto(f"{base}/nexus/checkout", READY))
    check("products listed", cdp.wait_for("document.getElementById('product').options.length > 0"))
    cdp.js("document.getElementById('fundAmount').value = '5000'; document.getElementById('fund').click()")
    check("wallet funded", cdp.wait_for("document.getElementById('balance').textContent === '₦5000'"),
          cdp.js("document.getElementById('balance').textContent"))
    cdp.js("document.getElementById('product').value = 'AIRTIME_MTN'; document.getElementById('amount').value = '500';"
           "document.getElementById('phone').value = '08012345678'; document.getElementById('buy').click()")
    check("airtime bought with navigator.credentials.get",
          cdp.wait_for("document.getElementById('status').textContent === 'Topup successful'"),
          cdp.js("document.getElementById('status').textContent"))
    check("page shows the new balance", cdp.wait_for("document.getElementById('balance').textContent === '₦4500'"),
          cdp.js("document.getElementById('balance').textContent"))
    sign_count = cdp.call("WebAuthn.getCredentials", {"authenticatorId": authenticator})["credentials"][0]["signCount"]
    check("the authenticator signed once", sign_count >= 1, sign_count)

    # The VTpass sandbox refuses numbers ending in 000: the page says so and the wallet is refunded.
    cdp.js("document.getElementById('phone').value = '08012340000'; document.getElementById('buy').click()")
    check("a refused top-up is shown as failed",
          cdp.wait_for("document.getElementById('receipt').dataset.status === 'failed'"),
          cdp.js("document.getElementById('receipt').textContent"))
    check("the page says the money is back", cdp.wait_for("document.getElementById('status').textContent.includes('back in your wallet')"),
          cdp.js("document.getElementById('status').textContent"))
    check("the balance is unchanged after the refund", cdp.wait_for("document.getElementById('balance').textContent === '₦4500'"),
          cdp.js("document.getElementById('balance').textContent"))
    # Numbers ending in 999 stay processing (VTPASS_SANDBOX_PENDING_SECONDS, 2 s in CI's server): pending, then delivered.
    cdp.js("document.getElementById('phone').value = '08012345999'; document.getElementById('buy').click()")
    check("a processing top-up is shown as pending",
          cdp.wait_for("document.getElementById('receipt').dataset.status === 'pending'"),
          cdp.js("document.getElementById('receipt').textContent"))
    check("the page follows it to delivered",
          cdp.wait_for("document.getElementById('receipt').dataset.status === 'completed'", timeout=40),
          cdp.js("document.getElementById('receipt').textContent"))

    token = cdp.js("sessionStorage.getItem('nexus.token')")
    request = urllib.request.Request(f"{server}/user/balance", headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=5) as r:
        balance = json.load(r)
    check("API balance fell by the two delivered top-ups (5000 - 500 - 500)", balance["balance"] == 4000, balance)
    if screenshot:
        data = cdp.call("Page.captureScreenshot", {"format": "png"})["data"]
        with open(screenshot, "wb") as handle:
            handle.write(base64.b64decode(data))


if __name__ == "__main__":
    main()
