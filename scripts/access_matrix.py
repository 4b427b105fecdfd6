#!/usr/bin/env python3
"""Who may see what, against a running `purse serve` (run by scripts/with-server.sh):

1. Signed out: every operation in the server's own OpenAPI document, sent with no credentials
   (path parameters that name nothing, an empty JSON body). None may answer 5xx, and none may
   answer 2xx unless it is public on purpose (PUBLIC below, each with its reason) — so a route
   added later without its check fails here.
2. Another tenant's resources: resources made by one user, device, app or merchant, asked for by
   another (and signed out). Every one is refused, and one that belongs to someone else answers as
   one that does not exist (404): the answer does not tell whether it exists.

usage: access_matrix.py URL PURSE   (PURSE: the binary; PURSE_DATA_DIR: the server's data directory;
       the server runs with CHIPPI_SANDBOX_MERCHANT_KEYS=pk_test_ci:sk_test_ci_secret and
       STRIPE_SANDBOX_SECRET_KEY=sk_test_sandbox_ci)
"""
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
import cluster_http  # noqa: E402

base, purse = sys.argv[1].rstrip("/"), sys.argv[2]
rows = []  # (section, case, status, verdict)

# Operations that answer without credentials, and why that is right.
PUBLIC = {
    ("GET", "/"): "the service listing",
    ("GET", "/health"): "load balancers' health check",
    ("GET", "/metrics"): "Prometheus scrape (kept on the private network, docs/deploy.md)",
    ("GET", "/openapi.yaml"): "the API's own description",
    ("POST", "/auth/register"): "signing up",
    ("POST", "/auth/login"): "signing in",
    ("GET", "/products"): "the airtime catalogue",
    ("GET", "/nexus/checkout"): "a page whose calls carry the user's token",
    ("GET", "/nexus/enroll"): "a page whose calls carry the user's token",
    ("GET", "/api/events"): "upcoming events are public",
    ("GET", "/stripe/connect/success"): "Stripe's return page",
    ("GET", "/stripe/connect/reauth"): "Stripe's refresh page",
    ("POST", "/starknet/rpc"): "a Starknet node's JSON-RPC is public",
    ("GET", "/clientinfo"): "MyCHIPs' connection details for the wallet",
    ("GET", "/cutie/admin/login"): "the dashboard's sign-in form",
    ("GET", "/cutie/admin"): "redirects to the sign-in form",
}
# The sandboxes stand in for third parties (VTpass, Stripe, APNs, App Attest, StoreKit, a Starknet
# faucet) in development only; each checks what its real counterpart checks.
SANDBOX = re.compile(r"^/sandbox/")


def call(method, path, body=None, headers=None):
    status, answer, _ = cluster_http.call(base, method, path, body, timeout=30, headers=headers, follow_redirects=False)
    return status, answer


def record(section, case, ok, status):
    rows.append((section, case, status, ok))
    print(("PASS " if ok else "FAIL ") + f"[{section}] {case}: {status}")


def signed_out_sweep():
    import yaml  # PyYAML comes with schemathesis, installed before this runs
    document = yaml.safe_load(call("GET", "/openapi.yaml")[1])
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            method = method.upper()
            if method not in ("GET", "POST", "PUT", "PATCH", "DELETE"):
                continue
            concrete = re.sub(r"\{[^}]+\}", "x_nothing_here", path)
            status, _ = call(method, concrete, {} if method in ("POST", "PUT", "PATCH") else None)
            public = (method, path) in PUBLIC or SANDBOX.match(path)
            if status == 0 or status >= 500:
                record("signed out", f"{method} {path}", False, status)
            elif 200 <= status < 300 and not public:
                record("signed out", f"{method} {path} answered without credentials", False, status)
            else:
                record("signed out", f"{method} {path}" + (" (public)" if public and status < 300 else ""), True, status)


def expect(section, case, status, allowed):
    record(section, case, status in allowed, status)


def register(label):
    status, body = call("POST", "/auth/register", {"email": f"{label}-{uuid.uuid4().hex[:8]}@example.com", "password": "correct horse battery"})
    assert status == 201, body
    return body["token"], {"Authorization": f"Bearer {body['token']}"}, body["user"]["id"]


def nexus_and_maly():
    _, alice, _ = register("alice")
    _, bob, _ = register("bob")
    status, _ = call("POST", "/sandbox/nexus/fund", {"amount": 5000}, dict(alice, **{"Idempotency-Key": str(uuid.uuid4())}))
    assert status == 201
    call("PUT", "/user/pin", {"pin": "2580"}, alice)
    status, body = call("POST", "/user/topup", {"amount": 100, "productCode": "AIRTIME_MTN", "recipientPhone": "08012345678", "pin": "2580"},
                        dict(alice, **{"Idempotency-Key": str(uuid.uuid4())}))
    assert status == 200, body
    tx = body["data"]["transactionId"]
    expect("Nexus", "the owner reads her top-up", call("GET", f"/user/transactions/{tx}", headers=alice)[0], {200})
    expect("Nexus", "another user asks for her top-up → 404", call("GET", f"/user/transactions/{tx}", headers=bob)[0], {404})
    expect("Nexus", "signed out → 401", call("GET", f"/user/transactions/{tx}")[0], {401})
    expect("Nexus", "a top-up that does not exist answers the same → 404", call("GET", "/user/transactions/tx_00000000000000000000000000", headers=bob)[0], {404})
    status, page = call("GET", "/user/transactions?limit=100", headers=bob)
    record("Nexus", "her top-up is not in another user's history", status == 200 and all(t.get("transactionId") != tx for t in page["data"]), status)
    status, balance = call("GET", "/user/balance", headers=bob)
    record("Nexus", "another user's balance is his own (0)", status == 200 and balance.get("balance") == 0, status)

    status, body = call("POST", "/api/stripe/connect/create-account", {}, alice)
    assert status in (200, 201), body
    account = body["account"]["id"]
    status, body = call("GET", "/api/stripe/connect/account-status", headers=bob)
    record("Maly", "another host's status does not show her account", status == 200 and body.get("hasAccount") is False, status)
    status, _ = call("POST", "/api/stripe/connect/create-account-link", {}, dict(bob, Origin=base))
    expect("Maly", "another host cannot make an onboarding link for her account", status, {400})
    expect("Maly", "her Stripe account at the sandbox without the platform key → 401",
           call("GET", f"/sandbox/stripe/v1/accounts/{account}")[0], {401})


def chippi():
    ci = {"x-api-key": "pk_test_ci", "Authorization": "Bearer sk_test_ci_secret"}
    made = subprocess.run([purse, "chippi", "keys", "create", "--merchant", "mer_other", "--name", "Other"],
                          capture_output=True, text=True, timeout=60, env=os.environ)
    keys = re.findall(r"(pk_(?:test|live)_\S+)|(sk_(?:test|live)_\S+)", made.stdout)
    public = next(k[0] for k in keys if k[0])
    secret = next(k[1] for k in keys if k[1])
    other = {"x-api-key": public, "Authorization": f"Bearer {secret}"}
    token, _, user = register("wallet")
    status, body = call("POST", "/v1/chipi-wallets/prepare-creation", {"auth_token": token, "external_user_id": user}, ci)
    assert status in (200, 201), body
    wallet = body["wallet_id"]
    expect("ChippiPay", "the merchant reads its wallet", call("GET", f"/v1/chipi-wallets/{wallet}", headers=ci)[0], {200})
    expect("ChippiPay", "another merchant asks for it → 404", call("GET", f"/v1/chipi-wallets/{wallet}", headers=other)[0], {404})
    expect("ChippiPay", "a wallet that does not exist answers the same → 404", call("GET", "/v1/chipi-wallets/wal_0000000000000000", headers=other)[0], {404})
    expect("ChippiPay", "a wrong secret → 401", call("GET", f"/v1/chipi-wallets/{wallet}", headers=dict(ci, Authorization="Bearer sk_test_wrong"))[0], {401})
    expect("ChippiPay", "signed out → 401", call("GET", f"/v1/chipi-wallets/{wallet}")[0], {401})
    expect("ChippiPay", "another merchant cannot finish its creation → 404",
           call("POST", "/v1/chipi-wallets", {"wallet_id": wallet, "public_key": "0x1", "encrypted_private_key": "v1.x", "auth_token": token}, other)[0],
           {404})
    status, page = call("GET", "/v1/sku-transactions?limit=100", headers=other)
    record("ChippiPay", "another merchant's purchase list is its own (empty)", status == 200 and page.get("data") == [], status)
    expect("ChippiPay", "another merchant's webhook deliveries are its own", call("GET", "/v1/webhook-deliveries", headers=other)[0], {200})


def cutie():
    home = tempfile.mkdtemp(prefix="purse-access-home.")
    environment = dict(os.environ, PURSE_HOME=home)

    def run(*args):
        return subprocess.run([purse, *args], capture_output=True, text=True, timeout=60, env=environment)

    made = run("cutie", "app", "create", "--name", "Other app", "--bundle-id", "com.example.other", "--id", "app_other")
    assert made.returncode == 0, made.stderr
    started = run("cutie", "feedback", "--server", base, "--json", "Private report", "--profile", "alice")
    assert started.returncode == 0, started.stderr
    conversation = json.loads(started.stdout)["conversation_id"]
    opened = run("cutie", "open", "--server", base, "--profile", "alice", conversation)
    record("Cuti-E", "the device opens its conversation", opened.returncode == 0 and "Private report" in opened.stdout, opened.returncode)
    for profile, app, who in (("bob", "app_sandbox", "another device of the same app"), ("carol", "app_other", "a device of another app")):
        opened = run("cutie", "open", "--server", base, "--profile", profile, "--app-id", app, conversation)
        record("Cuti-E", f"{who} opens it → not found", opened.returncode != 0 and "not found" in opened.stderr.lower(), opened.stderr.strip()[:80])
        replied = run("cutie", "reply", "--server", base, "--profile", profile, "--app-id", app, conversation, "let me in")
        record("Cuti-E", f"{who} writes in it → not found", replied.returncode != 0 and "not found" in replied.stderr.lower(), replied.stderr.strip()[:80])
        inbox = run("cutie", "inbox", "--server", base, "--profile", profile, "--app-id", app, "--json")
        record("Cuti-E", f"{who}'s inbox does not list it", inbox.returncode == 0 and conversation not in inbox.stdout, inbox.returncode)
    missing = run("cutie", "open", "--server", base, "--profile", "bob", "conv_00000000000000000000000000")
    record("Cuti-E", "a conversation that does not exist answers the same → not found",
           missing.returncode != 0 and "not found" in missing.stderr.lower(), missing.stderr.strip()[:80])
    expect("Cuti-E", "signed out → 401", call("GET", f"/v1/conversations/{conversation}", headers={"X-App-ID": "app_sandbox"})[0], {401})
    expect("Cuti-E", "the admin API signed out → 401", call("GET", f"/v1/admin/conversations/{conversation}")[0], {401})
    subprocess.run(["rm", "-rf", home], check=False)


def chips():
    home = tempfile.mkdtemp(prefix="purse-access-chips.")
    port = base.rsplit(":", 1)[1]
    environment = dict(os.environ, PURSE_HOME=home, CHIPS_HOST="127.0.0.1", CHIPS_PORT=port)

    def run(*args):
        return subprocess.run([purse, "chips", *args], capture_output=True, text=True, timeout=60, env=environment)

    names = {user: f"{user}{uuid.uuid4().hex[:6]}" for user in ("alice", "carol")}
    for user, profile in (("alice", "default"), ("carol", "carol")):
        ticket = os.path.join(home, f"{user}.json")
        with open(ticket, "w") as out:
            made = subprocess.run([purse, "chips", "ticket", "--user", names[user], "--name", user.title(), "--json"],
                                  stdout=out, stderr=subprocess.PIPE, text=True, timeout=60, env=environment)
        assert made.returncode == 0, made.stderr
        connected = run("connect", "--profile", profile, "@" + ticket)
        assert connected.returncode == 0, connected.stderr
    drafted = run("tally", "new", "--lend", "50", "--comment", "Private terms")
    record("MyCHIPs", "a user drafts a tally", drafted.returncode == 0 and "draft" in drafted.stdout, drafted.returncode)
    listed = run("tally", "list", "--profile", "carol", "--json")
    record("MyCHIPs", "another user's tallies_v_me does not show it", listed.returncode == 0 and json.loads(listed.stdout or "[]") == [], listed.stdout[:80])
    offered = run("tally", "offer", "--profile", "carol", "1")
    record("MyCHIPs", "another user cannot offer it (her tally 1 is not his)", offered.returncode != 0, offered.stderr.strip()[:80])
    invited = run("tally", "invite", "1")
    record("MyCHIPs", "its owner makes an invitation (a row of her tokens_v_me)", invited.returncode == 0, invited.returncode)
    mine = run("tally", "list", "--json")
    record("MyCHIPs", "its owner still sees it as a draft", mine.returncode == 0 and '"draft"' in mine.stdout, mine.returncode)
    asyncio.run(chips_views(names, environment))
    subprocess.run(["rm", "-rf", home], check=False)


async def chips_views(names, environment):
    """The Wyseman views as another user asks them, over the websocket: every `_me` view answers with
    his own rows only, whatever `where` he sends naming hers, and an update aimed at her tally
    touches nothing."""
    import websockets
    from cryptography.hazmat.primitives.asymmetric import ec
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "oracles"))
    from chips_wyseman import USER_AGENT, b64u, public_jwk, refused_with, request, ws_url

    async def login(user):
        ticket = json.loads(subprocess.check_output([purse, "chips", "ticket", "--user", user, "--json"], env=environment, timeout=60))["ticket"]
        pub = b64u(json.dumps(public_jwk(ec.generate_private_key(ec.SECP521R1()))).encode())
        return await websockets.connect(ws_url(base, user=user, token=ticket["token"], pub=pub), user_agent_header=USER_AGENT)

    record("MyCHIPs", "the websocket signed out → 401", await refused_with(ws_url(base)) == 401, 401)
    async with await login(names["alice"]) as alice:
        me = (await request(alice, {"id": 1, "view": "mychips.users_v_me", "action": "select"}))["data"][0]
        hers = (await request(alice, {"id": 2, "view": "mychips.tallies_v_me", "action": "select"}))["data"]
        tokens = (await request(alice, {"id": 3, "view": "mychips.tokens_v_me", "action": "select"}))["data"]
    record("MyCHIPs", "her views hold her tally and its invitation", len(hers) == 1 and len(tokens) >= 1, len(hers))
    ent, seq = hers[0]["tally_ent"], hers[0]["tally_seq"]
    async with await login(names["carol"]) as carol:
        asks = [
            ("users_v_me", {"id": me["id"]}), ("users_v_me", ["username = " + names["alice"]]),
            ("tallies_v_me", None), ("tallies_v_me", {"tally_ent": ent}), ("tallies_v_me", {"tally_ent": ent, "tally_seq": seq}),
            ("chits_v_me", {"chit_ent": ent}), ("tokens_v_me", None), ("tokens_v_me", {"tally_ent": ent}),
        ]
        for index, (view, where) in enumerate(asks, start=10):
            frame = {"id": index, "view": "mychips." + view, "action": "select"}
            if where is not None:
                frame["where"] = where
            answer = await request(carol, frame)
            data = answer.get("data") or []
            leaked = [row for row in data if row.get("id") == me["id"] or row.get("tally_ent") == ent or row.get("chit_ent") == ent
                      or row.get("username") == names["alice"]]
            record("MyCHIPs", f"another user selects {view} where {json.dumps(where)}: none of hers", not leaked, len(data))
        answer = await request(carol, {"id": 30, "view": "mychips.tallies_v_me", "action": "update",
                                       "where": {"tally_ent": ent, "tally_seq": seq}, "fields": {"comment": "mine now"}})
        record("MyCHIPs", "another user's update aimed at her tally is refused", "error" in answer, answer.get("error", {}).get("code"))
    async with await login(names["alice"]) as alice:
        again = (await request(alice, {"id": 1, "view": "mychips.tallies_v_me", "action": "select"}))["data"]
    record("MyCHIPs", "her tally is unchanged", again[0].get("comment") == hers[0].get("comment"), again[0].get("comment"))


def main():
    signed_out_sweep()
    nexus_and_maly()
    chippi()
    cutie()
    chips()
    failed = [r for r in rows if not r[3]]
    swept = sum(1 for r in rows if r[0] == "signed out")
    print(f"access matrix: {swept} operations signed out, {len(rows) - swept} cross-tenant cases; "
          f"{len(rows) - len(failed)} passed, {len(failed)} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
