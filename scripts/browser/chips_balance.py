#!/usr/bin/env python3
"""The visual balance sheet in headless Chromium: three users of the MyCHIPs provider open
tallies with Alice (through the CLI, as two people in two terminals would) and pay or are paid;
the provider draws Alice's balance sheet (/chips/balance.svg, fetched with her signature login by
`purse chips balance --visual`), and Chromium renders it: a bubble per partner on the right side
(assets) or the left (liabilities), the net in the centre, sized by balance, with the totals. Then
the tally agreement page the provider renders for the app (`agree.html`) in the same browser.

usage: chips_balance.py SERVER_URL PURSE_BINARY [SCREENSHOT.png]   (PURSE_DATA_DIR: the server's data directory)
"""
import base64
import json
import os
import subprocess
import sys
import tempfile
import urllib.parse

from cdp import check, chromium, finish


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    server, purse = sys.argv[1].rstrip("/"), os.path.abspath(sys.argv[2])
    shot = sys.argv[3] if len(sys.argv) > 3 else None
    port = str(urllib.parse.urlsplit(server).port)
    env = dict(os.environ, PURSE_HOME=tempfile.mkdtemp(prefix="purse-chips-home-"), CHIPS_PORT=port)

    def chips(*args, profile="alice"):
        return subprocess.run([purse, "chips", *args, "--profile", profile], env=env, capture_output=True, text=True, timeout=60, check=True).stdout

    def ticket(user, name, profile):
        out = subprocess.run([purse, "chips", "ticket", "--user", user, "--name", name, "--json"], env=env, capture_output=True, text=True,
                             timeout=60, check=True).stdout
        path = os.path.join(env["PURSE_HOME"], f"{user}.json")
        open(path, "w").write(out)
        chips("connect", "@" + path, profile=profile)

    ticket("alice", "Anders", "alice")
    partners = [("bob", "Baker", "12.5", "pay"), ("carol", "Cruz", "30", "pay"), ("dan", "Diaz", "8", "paid")]
    for user, name, amount, way in partners:
        ticket(user, name, user)
        draft = json.loads(chips("tally", "new", "--lend", "100", "--borrow", "100", "--json"))["tally_seq"]
        chips("tally", "accept", chips("tally", "invite", str(draft)).splitlines()[0], profile=user)
        chips("tally", "offer", str(draft))
        theirs = [t for t in json.loads(chips("tally", "list", "--json", profile=user)) if t["state"] == "P.offer"][0]["tally_seq"]
        chips("tally", "open", str(theirs), profile=user)
        if way == "pay":
            chips("pay", "Anders", amount, "--memo", "for Alice", profile=user)
        else:
            chips("pay", name, amount, "--memo", "from Alice")
    svg_path = os.path.join(env["PURSE_HOME"], "balance.svg")
    summary = chips("balance", "--visual", svg_path)
    check("the balance sheet: 42.5 of assets, 8 of liabilities, net 34.5", "net 34.5 CHIP" in summary, summary)
    with chromium() as cdp:
        check("Chromium renders the provider's SVG", cdp.goto("file://" + svg_path, "!!document.querySelector('svg')"))
        bubbles = cdp.js("JSON.stringify([...document.querySelectorAll('g.tally')].map(g => {"
                         "const c = g.querySelector('circle').getBoundingClientRect();"
                         "return {cls: g.getAttribute('class'), text: g.textContent, x: c.x + c.width / 2, r: c.width / 2}; }))")
        bubbles = json.loads(bubbles)
        width = cdp.js("document.querySelector('svg').getBoundingClientRect().width")
        check("one bubble per partner", len(bubbles) == 3, bubbles)
        assets = [b for b in bubbles if "asset" in b["cls"]]
        liabilities = [b for b in bubbles if "liability" in b["cls"]]
        check("assets to the right of the centre, liabilities to the left",
              all(b["x"] > width / 2 for b in assets) and all(b["x"] < width / 2 for b in liabilities) and len(assets) == 2, bubbles)
        by_name = {("Baker" if "Baker" in b["text"] else "Cruz" if "Cruz" in b["text"] else "Diaz"): b for b in bubbles}
        check("bigger balances, bigger bubbles", by_name["Cruz"]["r"] > by_name["Baker"]["r"] > 0, by_name)
        check("the net in the centre", "34.5 CHIP" in cdp.js("document.querySelector('g.net').textContent"))
        check("the asset and liability totals beside the chart", "Assets 42.5" in cdp.js("document.querySelector('g.totals').textContent")
              and "Liabilities -8" in cdp.js("document.querySelector('g.totals').textContent"))
        if shot:
            data = cdp.call("Page.captureScreenshot", {"format": "png"})["data"]
            open(shot, "wb").write(base64.b64decode(data))
            print(f"screenshot: {shot}")
        # The tally agreement as the provider renders it for the app (`agree.html`, by the agree action's link).
        link = chips("tally", "agreement", "1").strip()
        check("Chromium renders the tally agreement page", cdp.goto(link, "!!document.querySelector('h1')"), link)
        text = cdp.js("document.body.innerText")
        check("the agreement names both partners, their terms and the signatures",
              "Anders" in text and "Baker" in text and "100 CHIP" in text and "Signatures" in text, text[:400])
        if shot:
            agreement_shot = shot.replace(".png", "-agreement.png")
            data = cdp.call("Page.captureScreenshot", {"format": "png"})["data"]
            open(agreement_shot, "wb").write(base64.b64decode(data))
            print(f"screenshot: {agreement_shot}")
    finish("chips balance sheet and tally agreement")


if __name__ == "__main__":
    main()
