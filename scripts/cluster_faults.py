#!/usr/bin/env python3
"""A replica killed (SIGKILL) in the middle of a write load (run by scripts/cluster.sh).

Eight clients buy airtime through nginx for a bounded time, each top-up with its own
Idempotency-Key, retrying with the same key after a dropped connection, a 502 or a 429 — as the
client cores do. Two seconds in, one replica is killed outright. Afterwards:

  * every top-up a client was told succeeded is in the wallet's history, and nothing else is
    (no double charge from a retry reaching another replica);
  * the wallet balance is the funding less exactly those top-ups;
  * the ledger's postings sum to zero (checked in PostgreSQL).

usage: cluster_faults.py   (environment from scripts/cluster.sh)
"""
import os
import signal
import subprocess
import sys
import threading
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
import cluster_http  # noqa: E402
from cluster_http import check  # noqa: E402

proxy = os.environ["CLUSTER_URL"]
pids = [int(p) for p in os.environ["CLUSTER_PIDS"].split()]


def call(method, path, body=None, token=None, key=None, timeout=30):
    status, answer, _ = cluster_http.call(proxy, method, path, body, token, key, timeout)
    return status, answer


def main():
    email = f"faults-{uuid.uuid4().hex[:8]}@example.com"
    status, body = call("POST", "/auth/register", {"email": email, "password": "correct horse battery"})
    check("registered", status == 201, body)
    token = body["token"]
    status, body = call("POST", "/sandbox/nexus/fund", {"amount": 1_000_000}, token, str(uuid.uuid4()))
    check("funded", status == 201, body)
    status, body = call("PUT", "/user/pin", {"pin": "2580"}, token)
    check("PIN set", status == 200, body)

    acked, retries, lock = [], [0], threading.Lock()
    deadline = time.time() + 8

    def client():
        while time.time() < deadline:
            key = str(uuid.uuid4())
            body = {"amount": 50, "productCode": "AIRTIME_MTN", "recipientPhone": "08012345678", "pin": "2580"}
            for attempt in range(100):
                status, answer = call("POST", "/user/topup", body, token, key)
                if status == 200:
                    with lock:
                        acked.append(answer["data"]["transactionId"])
                        retries[0] += attempt
                    break
                if status in (0, 429, 502, 503, 504):
                    time.sleep(0.1)
                    continue
                print(f"unexpected answer {status} {answer}")
                return
            else:
                print(f"key {key} never got a definite answer")
                return

    threads = [threading.Thread(target=client) for _ in range(8)]
    for t in threads:
        t.start()
    time.sleep(2)
    victim = pids[1]
    os.kill(victim, signal.SIGKILL)
    print(f"killed replica pid {victim} mid-load")
    for t in threads:
        t.join(60)
    check("the load ran through the kill with definite answers", all(not t.is_alive() for t in threads) and len(acked) > 0,
          {"acknowledged": len(acked)})
    print(f"{len(acked)} top-ups acknowledged, {retries[0]} retries after the kill")

    history, cursor = [], None
    while True:
        status, page = call("GET", "/user/transactions?limit=100" + (f"&cursor={cursor}" if cursor else ""), token=token)
        history += page["data"]
        if not page.get("hasMore"):
            break
        cursor = page["nextCursor"]
    topups = [t for t in history if (t.get("type") or t.get("kind")) == "topup"]
    ids = [t.get("id") or t.get("transactionId") for t in topups]
    check("every acknowledged top-up is in the history, once, and nothing else",
          sorted(ids) == sorted(acked) and len(set(ids)) == len(ids), {"history": len(ids), "acknowledged": len(acked)})
    status, balance = call("GET", "/user/balance", token=token)
    check("the balance is the funding less exactly the acknowledged top-ups",
          balance.get("balance") == 1_000_000 - 50 * len(acked), {"balance": balance, "expected": 1_000_000 - 50 * len(acked)})
    out = subprocess.run(["psql", os.environ["DATABASE_URL"], "-At", "-c",
                          "SELECT COALESCE(SUM(amount), 0), COUNT(*) FROM ledger_entries"], capture_output=True, text=True, timeout=30)
    total = out.stdout.strip().split("|")[0] if out.returncode == 0 else out.stderr
    check("the ledger's entries sum to zero", total == "0", total)
    print(f"cluster faults: {cluster_http.passed} passed, 0 failed")


if __name__ == "__main__":
    main()
