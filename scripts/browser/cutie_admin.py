#!/usr/bin/env python3
"""The Cuti-E admin dashboard in headless Chromium: a user writes to support with the SDK (the
CLI), registers for pushes; support staff sign in to /cutie/admin in the browser, open the
conversation, answer it with the form, tag and prioritise it; the SDK then sees the reply
unread, the APNs sandbox received the push, and the dashboard's push log says it was sent.

usage: cutie_admin.py SERVER_URL PURSE_BINARY   (PURSE_DATA_DIR: the server's data directory)
"""
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

from cdp import check, chromium, finish

TOKEN = "cd" * 32


def cli(purse, env, *args):
    return subprocess.run([purse, "cutie", *args], env=env, capture_output=True, text=True, timeout=60, check=True).stdout


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    server, purse = sys.argv[1].rstrip("/"), os.path.abspath(sys.argv[2])
    env = dict(os.environ, PURSE_HOME=tempfile.mkdtemp(prefix="purse-cutie-home-"), CUTIE_ADMIN_PASSWORD="correct-horse-battery")
    try:
        created = json.loads(cli(purse, env, "feedback", "--server", server, "--json", "The login button does nothing", "--category", "bug",
                                 "--title", "Login broken", "--name", "Ana"))
        conversation = created["conversation_id"]
        cli(purse, env, "push", "--server", server, TOKEN, "--bundle-id", "com.purse.cutie.sandbox")
        cli(purse, env, "admin", "create", "--email", "desk@example.com", "--name", "Desk Agent")
        with chromium() as cdp:
            check("signed out: the dashboard sends you to sign in", cdp.goto(server + "/cutie/admin", "location.pathname === '/cutie/admin/login'"),
                  cdp.js("location.href"))
            cdp.js("document.getElementById('email').value = 'desk@example.com';"
                   "document.getElementById('password').value = 'wrong password';"
                   "document.getElementById('submit').click()")
            check("a wrong password is refused", cdp.wait_for("!!document.getElementById('error')"))
            cdp.js("document.getElementById('email').value = 'desk@example.com';"
                   "document.getElementById('password').value = 'correct-horse-battery';"
                   "document.getElementById('submit').click()")
            check("signed in: the conversation list", cdp.wait_for(
                f"location.pathname === '/cutie/admin' && !!document.querySelector('tr.conversation[data-id=\"{conversation}\"]')"), cdp.js("location.href"))
            cookies = cdp.call("Network.getCookies", {"urls": [server]}).get("cookies", [])
            session = next((c for c in cookies if c["name"] == "cutie_admin"), {})
            check("the session cookie is HttpOnly, Secure, SameSite=Strict",
                  session.get("httpOnly") and session.get("secure") and session.get("sameSite") == "Strict", session)
            check("filters: status open finds it", cdp.goto(server + "/cutie/admin?status=open&category=bug&q=login",
                                                              f"!!document.querySelector('tr.conversation[data-id=\"{conversation}\"]')"))
            check("filters: status closed does not", cdp.goto(server + "/cutie/admin?status=closed",
                                                                f"!document.querySelector('tr.conversation[data-id=\"{conversation}\"]')"))
            cdp.goto(server + "/cutie/admin", f"!!document.querySelector('tr.conversation[data-id=\"{conversation}\"] a')")
            cdp.js(f"document.querySelector('tr.conversation[data-id=\"{conversation}\"] a').click()")
            check("the thread opens", cdp.wait_for("!!document.getElementById('reply') && document.body.innerText.includes('The login button does nothing')"))
            cdp.js("document.getElementById('message').value = 'Thanks Ana, fixed in 2.1';"
                   "document.getElementById('send').click()")
            check("the answer is in the thread", cdp.wait_for(
                "document.readyState === 'complete' && [...document.querySelectorAll('.msg.admin')].some(m => m.innerText.includes('fixed in 2.1'))"))
            cdp.js("document.querySelector('#update select[name=priority]').value = 'high';"
                   "document.querySelector('#update button').click()")
            check("priority changed", cdp.wait_for("document.readyState === 'complete' && document.getElementById('priority')?.innerText === 'high'"))
            cdp.js("document.querySelector('#tag input[name=tag]').value = 'login';"
                   "document.querySelector('#tag button').click()")
            check("tagged", cdp.wait_for("document.readyState === 'complete' && document.body.innerText.includes('login ×')"))
            deadline = time.time() + 15
            while time.time() < deadline:
                cdp.goto(server + "/cutie/admin/pushes")
                if cdp.js("[...document.querySelectorAll('tr.push')].some(r => r.innerText.includes('sent'))"):
                    break
                time.sleep(0.3)
            check("the push log says sent", cdp.js("[...document.querySelectorAll('tr.push')].some(r => r.innerText.includes('sent'))"))
            check("the APNs sandbox shows what it received", cdp.js("document.getElementById('apns-sandbox').innerText.includes('fixed in 2.1')"))
            # A form posted from another site is refused even with the session cookie.
            cdp.goto("data:text/html,<form method=post action='" + server + f"/cutie/admin/conversations/{conversation}/reply'>"
                     "<input name=csrf_token value=x><input name=message value=evil></form>")
            cdp.js("document.forms[0].submit()")
            time.sleep(1)
        inbox = json.loads(cli(purse, env, "inbox", "--server", server, "--json"))
        check("the SDK sees the reply unread", inbox["total_unread"] == 1, inbox)
        opened = json.loads(cli(purse, env, "open", "--server", server, "--json", conversation))
        check("the SDK reads the answer and no forged message", [m["message"] for m in opened["messages"]] == ["The login button does nothing", "Thanks Ana, fixed in 2.1"],
              opened["messages"])
        with urllib.request.urlopen(f"{server}/sandbox/apns/deliveries?device_token={TOKEN}", timeout=10) as response:
            deliveries = json.load(response)["data"]
        check("the push reached the APNs sandbox", any("fixed in 2.1" in d["payload"] for d in deliveries), deliveries)
        inbox = json.loads(cli(purse, env, "inbox", "--server", server, "--json"))
        check("opened: nothing unread", inbox["total_unread"] == 0, inbox)
    except Exception as error:
        check("browser run", False, repr(error))
    finish("cutie-admin-browser")


if __name__ == "__main__":
    main()
