#!/usr/bin/env python3
"""Money across replicas (run by scripts/cluster.sh; CLUSTER_URL is nginx, CLUSTER_PORTS the
replicas): a wallet user of Nexus Data whose requests land on every replica.

  * a session made on one replica is good on the others (one JWT secret);
  * a funding retried with its Idempotency-Key on every replica, and 12 copies of one top-up sent to
    all replicas at once: one effect each, every answer the first one;
  * 60 top-ups racing across replicas against a balance that covers 24 more: exactly those taken, the
    balance exactly zero, and the wallet's history holds exactly the 25 top-ups;
  * 30 wrong PINs racing across replicas: at most the 5 attempts the PIN allows are judged, the rest
    are refused unseen (locked, or asked to retry), and the right PIN is refused afterwards too;
  * (a burst with the right PIN never locks: past 5 checks at once it is asked to retry, 429.)

usage: cluster_money.py   (environment from scripts/cluster.sh)
"""
import concurrent.futures
import os
import sys
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
import cluster_http  # noqa: E402
from cluster_http import call, check  # noqa: E402

replicas = [f"http://127.0.0.1:{p}" for p in os.environ["CLUSTER_PORTS"].split()]
proxy = os.environ["CLUSTER_URL"]
def main():
    email = f"cluster-{uuid.uuid4().hex[:8]}@example.com"
    status, body, _ = call(replicas[0], "POST", "/auth/register", {"email": email, "password": "correct horse battery", "name": "Cluster"})
    check("register on replica 1", status == 201, body)
    status, body, _ = call(replicas[1], "POST", "/auth/login", {"email": email, "password": "correct horse battery"})
    check("log in on replica 2", status == 200, body)
    token = body["token"]
    check("the session is good on every replica", all(call(r, "GET", "/auth/me", token=token)[0] == 200 for r in replicas))

    key = str(uuid.uuid4())
    answers = [call(r, "POST", "/sandbox/nexus/fund", {"amount": 2500}, token, key) for r in replicas]
    check("a funding retried on every replica: one effect, the first answer replayed",
          [a[0] for a in answers] == [201] * len(replicas) and all(a[1] == answers[0][1] for a in answers)
          and all(a[2].get("Idempotent-Replayed") == "true" for a in answers[1:]), answers)
    status, body, _ = call(proxy, "GET", "/user/balance", token=token)
    check("balance 2500 after one funding", body.get("balance") == 2500, body)

    status, body, _ = call(proxy, "PUT", "/user/pin", {"pin": "2580"}, token)
    check("PIN set", status == 200, body)
    topup = {"amount": 100, "productCode": "AIRTIME_MTN", "recipientPhone": "08012345678", "pin": "2580"}
    key = str(uuid.uuid4())

    def until_answered(base, body, key):
        """A client's retries: a 429 (PIN checks busy) is retried with the same key."""
        for _ in range(50):
            answer = call(base, "POST", "/user/topup", body, token, key)
            if answer[0] != 429:
                return answer
            time.sleep(0.1)
        return answer

    with concurrent.futures.ThreadPoolExecutor(12) as pool:
        copies = list(pool.map(lambda i: until_answered(replicas[i % len(replicas)], topup, key), range(12)))
    ids = {c[1].get("data", {}).get("transactionId") for c in copies if isinstance(c[1], dict)}
    check("12 copies of one top-up on all replicas at once: every one answered with the same transaction",
          all(c[0] == 200 for c in copies) and len(ids) == 1 and None not in ids, [c[:2] for c in copies][:3])
    status, body, _ = call(proxy, "GET", "/user/balance", token=token)
    check("… and charged once (2400)", body.get("balance") == 2400, body)

    # 24 more top-ups of 100 fit in 2400; send 60 across the replicas at once.
    with concurrent.futures.ThreadPoolExecutor(30) as pool:
        results = list(pool.map(lambda i: until_answered(replicas[i % len(replicas)], topup, str(uuid.uuid4())), range(60)))
    taken = sum(1 for r in results if r[0] == 200)
    short = sum(1 for r in results if r[0] == 402)
    check("60 top-ups racing across replicas: the 24 that fit taken, 36 refused for the balance",
          taken == 24 and short == 36, {"taken": taken, "402": short, "other": [r[:2] for r in results if r[0] not in (200, 402)][:3]})
    status, body, _ = call(proxy, "GET", "/user/balance", token=token)
    check("the balance is exactly zero", body.get("balance") == 0, body)
    history, cursor = [], None
    while True:
        status, page, _ = call(proxy, "GET", "/user/transactions?limit=100" + (f"&cursor={cursor}" if cursor else ""), token=token)
        history += page["data"]
        if not page.get("hasMore"):
            break
        cursor = page["nextCursor"]
    def kind(t):
        return t.get("type") or t.get("kind")
    fundings = [t for t in history if kind(t) == "funding"]
    topups = [t for t in history if kind(t) == "topup"]
    check("the history holds the one funding and exactly 25 top-ups", len(fundings) == 1 and len(topups) == 25,
          {"history": len(history), "kinds": sorted({str(kind(t)) for t in history})})

    wrong = dict(topup, pin="1111", amount=50)
    status, body, _ = call(proxy, "POST", "/sandbox/nexus/fund", {"amount": 500}, token, str(uuid.uuid4()))
    with concurrent.futures.ThreadPoolExecutor(30) as pool:
        tries = list(pool.map(lambda i: call(replicas[i % len(replicas)], "POST", "/user/topup", wrong, token, str(uuid.uuid4())), range(30)))
    judged = sum(1 for t in tries if t[0] == 401)
    locked = sum(1 for t in tries if t[0] == 423)
    busy = sum(1 for t in tries if t[0] == 429)
    check("30 wrong PINs racing across replicas: at most 5 judged, the rest refused unseen (locked, or asked to retry)",
          judged <= 5 and judged + locked + busy == 30 and locked >= 1, {"401": judged, "423": locked, "429": busy})
    status, body, _ = call(replicas[2], "POST", "/user/topup", dict(topup, amount=50), token, str(uuid.uuid4()))
    check("the right PIN is refused while locked", status == 423, (status, body))
    status, body, _ = call(proxy, "GET", "/user/balance", token=token)
    check("no money moved while the PIN was being guessed", body.get("balance") == 500, body)
    print(f"cluster money: {cluster_http.passed} passed, 0 failed")


if __name__ == "__main__":
    main()
