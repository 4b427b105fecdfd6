#!/usr/bin/env python3
"""Drives the Nexus web checkout in headless Chromium with a CDP virtual authenticator
(internal transport, user verification): register → enrol a passkey → fund → buy airtime,
then checks through the API that the balance fell by the amount.

usage: nexus_checkout.py SERVER_URL [SCREENSHOT.png]
The page is opened at http://localhost:PORT (WebAuthn needs a domain, not an IP, as RP id).
"""
import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid

from websockets.sync.client import connect

results = {"passed": 0, "failed": 0}


def check(name, ok, detail=""):
    results["passed" if ok else "failed"] += 1
    print(("PASS " if ok else "FAIL ") + name + (f": {detail}" if detail and not ok else ""), flush=True)
    return ok


class CDP:
    def __init__(self, url):
        self._connection = connect(url, max_size=64 << 20, open_timeout=10)
        self.ws = self._connection.__enter__()
        self.next_id = 0
        self.session = None

    def call(self, method, params=None, session=True, timeout=30):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        self.ws.send(json.dumps(message))
        deadline = time.time() + timeout
        while time.time() < deadline:
            reply = json.loads(self.ws.recv(timeout=max(0.1, deadline - time.time())))
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
        raise TimeoutError(method)

    def js(self, expression):
        result = self.call("Runtime.evaluate", {"expression": expression, "awaitPromise": True, "returnByValue": True})
        if "exceptionDetails" in result:
            raise RuntimeError(result["exceptionDetails"].get("text", "script error"))
        return result.get("result", {}).get("value")

    def wait_for(self, expression, timeout=15):
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                if self.js(expression):
                    return True
            except RuntimeError:
                pass
            time.sleep(0.1)
        return False

    def goto(self, url):
        self.call("Page.navigate", {"url": url})
        return self.wait_for("document.readyState === 'complete' && !!document.getElementById('status')")


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    sys.exit("chromium is not installed")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    server = sys.argv[1].rstrip("/")
    port = server.rsplit(":", 1)[1]
    base = f"http://localhost:{port}"
    screenshot = sys.argv[2] if len(sys.argv) > 2 else None

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        debug_port = s.getsockname()[1]
    profile = tempfile.mkdtemp(prefix="purse-chromium-")
    browser = subprocess.Popen([
        find_chromium(), "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-dev-shm-usage",
        f"--remote-debugging-port={debug_port}", "--remote-debugging-address=127.0.0.1", f"--user-data-dir={profile}", "about:blank",
    ], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        version = None
        for _ in range(100):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{debug_port}/json/version", timeout=1) as r:
                    version = json.load(r)
                break
            except Exception:
                time.sleep(0.1)
        if not check("chromium started", version is not None):
            return
        cdp = CDP(version["webSocketDebuggerUrl"])
        target = cdp.call("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        cdp.session = cdp.call("Target.attachToTarget", {"targetId": target, "flatten": True}, session=False)["sessionId"]
        cdp.call("Page.enable")
        cdp.call("Runtime.enable")
        cdp.call("WebAuthn.enable")
        authenticator = cdp.call("WebAuthn.addVirtualAuthenticator", {"options": {
            "protocol": "ctap2", "transport": "internal", "hasResidentKey": True,
            "hasUserVerification": True, "isUserVerified": True, "automaticPresenceSimulation": True,
        }})["authenticatorId"]

        email = f"browser-{uuid.uuid4().hex[:8]}@example.com"
        check("enrol page loads", cdp.goto(f"{base}/nexus/enroll"))
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

        check("checkout page loads", cdp.goto(f"{base}/nexus/checkout"))
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

        token = cdp.js("sessionStorage.getItem('nexus.token')")
        request = urllib.request.Request(f"{server}/user/balance", headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(request, timeout=5) as r:
            balance = json.load(r)
        check("API balance fell by the amount (5000 - 500)", balance["balance"] == 4500, balance)
        if screenshot:
            data = cdp.call("Page.captureScreenshot", {"format": "png"})["data"]
            with open(screenshot, "wb") as handle:
                handle.write(base64.b64decode(data))
    finally:
        browser.terminate()
        try:
            browser.wait(timeout=5)
        except subprocess.TimeoutExpired:
            browser.kill()
        shutil.rmtree(profile, ignore_errors=True)
        print(f"nexus-browser: {results['passed']} passed, {results['failed']} failed")
        sys.exit(1 if results["failed"] or not results["passed"] else 0)


if __name__ == "__main__":
    main()
