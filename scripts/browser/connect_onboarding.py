#!/usr/bin/env python3
"""Maly onboarding in headless Chromium: a host gets an onboarding link from the API, the browser
opens the Stripe sandbox's hosted page, submits the test details and lands on the success URL;
the account status then reads onboardingComplete: true (after the signed webhook).

usage: connect_onboarding.py SERVER_URL
"""
import json
import sys
import time
import urllib.error
import urllib.request
import uuid

from cdp import check, chromium, finish


def call(base, method, path, body=None, token=None, origin=None):
    request = urllib.request.Request(base + path, data=None if body is None else json.dumps(body).encode(), method=method)
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", "Bearer " + token)
    if origin:
        request.add_header("Origin", origin)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read().decode() or "{}")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read().decode() or "{}")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    server = sys.argv[1].rstrip("/")
    try:
        status, answer = call(server, "POST", "/auth/register", {"email": f"host-{uuid.uuid4().hex[:8]}@example.com", "password": "correct horse"})
        token = answer["token"]
        status, answer = call(server, "POST", "/api/stripe/connect/create-account", token=token)
        check("create-account", status == 200 and answer["account"]["id"].startswith("acct_"), answer)
        status, answer = call(server, "POST", "/api/stripe/connect/create-account-link", token=token, origin=server)
        check("create-account-link", status == 200, answer)
        link = answer["url"]
        with chromium() as cdp:
            check("hosted onboarding page loads", cdp.goto(link, "!!document.getElementById('submit')"))
            cdp.js("document.getElementById('submit').click()")
            check("the browser lands on the success URL",
                  cdp.wait_for(f"location.href === '{server}/stripe/connect/success' && document.readyState === 'complete'"),
                  cdp.js("location.href"))
            check("the success page says so", "Onboarding submitted" in (cdp.js("document.body.innerText") or ""))
            cdp.goto(link)
            check("a used link goes to the refresh URL", cdp.wait_for(f"location.href === '{server}/stripe/connect/reauth'"), cdp.js("location.href"))
        deadline = time.time() + 15
        answer = {}
        while time.time() < deadline:
            status, answer = call(server, "GET", "/api/stripe/connect/account-status", token=token)
            if answer.get("onboardingComplete"):
                break
            time.sleep(0.2)
        check("account status reads onboardingComplete: true", answer == {"hasAccount": True, "onboardingComplete": True}, answer)
    except Exception as error:
        check("browser run", False, repr(error))
    finish("connect-browser")


if __name__ == "__main__":
    main()
