"""Shared helpers for the browser checks: a minimal Chrome DevTools Protocol client and a
headless Chromium launcher (loopback only, throwaway profile)."""
import contextlib
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

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

    def goto(self, url, ready="true"):
        self.call("Page.navigate", {"url": url})
        return self.wait_for(f"document.readyState === 'complete' && ({ready})")


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    sys.exit("chromium is not installed")



@contextlib.contextmanager
def chromium():
    """Starts headless Chromium; yields a CDP session attached to a fresh tab."""
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
        if version is None:
            raise RuntimeError("chromium did not start")
        cdp = CDP(version["webSocketDebuggerUrl"])
        target = cdp.call("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        cdp.session = cdp.call("Target.attachToTarget", {"targetId": target, "flatten": True}, session=False)["sessionId"]
        cdp.call("Page.enable")
        cdp.call("Runtime.enable")
        yield cdp
    finally:
        browser.terminate()
        try:
            browser.wait(timeout=5)
        except subprocess.TimeoutExpired:
            browser.kill()
        shutil.rmtree(profile, ignore_errors=True)


def finish(label):
    print(f"{label}: {results['passed']} passed, {results['failed']} failed")
    sys.exit(1 if results["failed"] or not results["passed"] else 0)
