#!/usr/bin/env python3
"""A crash (SIGKILL) in the middle of a write load, then every promise checked.

  faults.py replica            under scripts/cluster.sh: one of the replicas is killed and stays down
  faults.py postgres           under scripts/cluster.sh: PostgreSQL (the postmaster and every backend)
                               is killed and started again on the same data
  faults.py sqlite PURSE       one `purse serve` on SQLite (binary PURSE) is killed and started again
                               on the same data directory and port

Eight clients buy airtime for a bounded time, each top-up with its own Idempotency-Key, retrying
with the same key after a dropped connection, a 429, a 5xx or a 409 idempotency_key_in_use — as the client cores do. One in four
goes to a number the airtime sandbox keeps processing (delivered later by the delivery job), so
jobs are queued when the crash comes. Two seconds in, the target is killed outright. Afterwards:

  * every top-up a client was told succeeded is in the wallet's history once, and nothing else is;
  * every acknowledged request sent again with its key answers exactly as it first did;
  * the queued delivery jobs resume: every top-up ends delivered, no job is left queued, running
    or dead;
  * the balance is the funding less exactly those top-ups; every ledger transaction sums to zero,
    and every account's balance is the sum of its entries (nothing half-written).

The servers need VTPASS_SANDBOX_PENDING_SECONDS and PURSE_JOB_LEASE_SECONDS small (the .ci/run
line sets them) so that the delivery checks and a killed worker's lease end within the bound.
"""
import collections
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
import cluster_http  # noqa: E402
from cluster_http import check  # noqa: E402

FUNDING = 1_000_000
PRICE = 50
PROCESSING_PHONE = "08012345999"  # the sandbox answers 099 (processing) and delivers later


class Target:
    """What is killed, how it comes back, and how its database is read."""

    def __init__(self, mode, argv):
        self.mode = mode
        self.server = None
        if mode == "sqlite":
            self.binary = argv[0]
            self.work = tempfile.mkdtemp(prefix="purse-faults.")
            self.port = free_port()
            self.url = f"http://127.0.0.1:{self.port}"
            self.log = os.path.join(self.work, "serve.log")
            self.start_server()
        else:
            self.url = os.environ["CLUSTER_URL"]

    # --- the single SQLite server

    def start_server(self):
        log = open(self.log, "a")
        self.server = subprocess.Popen(
            [self.binary, "serve", "--port", str(self.port), "--data-dir", os.path.join(self.work, "data"),
             "--log-level", os.environ.get("PURSE_SERVER_LOG_LEVEL", "warning")],
            stdout=log, stderr=subprocess.STDOUT)
        wait_healthy(self.url, 60, what="purse serve")

    def close(self):
        if self.server and self.server.poll() is None:
            self.server.terminate()
            try:
                self.server.wait(30)
            except subprocess.TimeoutExpired:
                self.server.kill()
        if self.mode == "sqlite":
            archive = os.environ.get("PURSE_LOG_ARCHIVE")
            if archive:
                os.makedirs(archive, exist_ok=True)
                subprocess.run(["cp", self.log, os.path.join(archive, f"{time.time_ns()}-faults-sqlite.log")], check=False)
            subprocess.run(["rm", "-rf", self.work], check=False)

    # --- the crash and the restart

    def crash(self):
        if self.mode == "replica":
            victim = int(os.environ["CLUSTER_PIDS"].split()[1])
            os.kill(victim, signal.SIGKILL)
            return f"replica pid {victim}"
        if self.mode == "sqlite":
            self.server.kill()
            self.server.wait(10)
            return f"the SQLite server pid {self.server.pid}"
        pgdata = os.environ["PGDATA"]
        postmaster = int(open(os.path.join(pgdata, "postmaster.pid")).readline())
        children = subprocess.run(["pgrep", "-P", str(postmaster)], capture_output=True, text=True).stdout.split()
        for pid in [postmaster] + [int(c) for c in children]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return f"PostgreSQL (postmaster {postmaster} and {len(children)} processes)"

    def restart(self):
        if self.mode == "replica":
            return  # the others carry on
        if self.mode == "sqlite":
            self.start_server()
            return
        pgdata, pgbin = os.environ["PGDATA"], os.environ["PGBIN"]
        options = open(os.path.join(pgdata, "purse-start-options")).read().strip()
        deadline = time.time() + 60
        while True:  # backends still exiting hold the old shared memory for a moment
            started = subprocess.run(["runuser", "-u", "postgres", "--", f"{pgbin}/pg_ctl", "-D", pgdata, "-o", options,
                                      "-l", os.path.join(pgdata, "log"), "-w", "-t", "30", "start"],
                                     capture_output=True, text=True, timeout=45)
            if started.returncode == 0:
                return
            if time.time() > deadline:
                raise SystemExit(f"FAIL PostgreSQL did not start again: {started.stdout}{started.stderr}")
            time.sleep(0.5)

    # --- the database, read directly for the invariants

    def query(self, sql):
        if self.mode == "sqlite":
            db = sqlite3.connect(os.path.join(self.work, "data", "purse.sqlite"), timeout=30)
            try:
                return [tuple(str(v) for v in row) for row in db.execute(sql).fetchall()]
            finally:
                db.close()
        out = subprocess.run(["psql", os.environ["DATABASE_URL"], "-At", "-F", "|", "-c", sql],
                             capture_output=True, text=True, timeout=30)
        if out.returncode != 0:
            raise SystemExit(f"FAIL psql: {out.stderr}")
        return [tuple(line.split("|")) for line in out.stdout.splitlines() if line]


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url, seconds, what):
    deadline = time.time() + seconds
    while time.time() < deadline:
        status, _, _ = cluster_http.call(url, "GET", "/health", timeout=5)
        if status == 200:
            return
        time.sleep(0.1)
    raise SystemExit(f"FAIL {what} did not answer /health within {seconds}s")


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("replica", "postgres", "sqlite"):
        print(__doc__)
        sys.exit(2)
    target = Target(sys.argv[1], sys.argv[2:])
    try:
        run(target)
    finally:
        target.close()


def run(target):
    def call(method, path, body=None, token=None, key=None, timeout=30):
        status, answer, _ = cluster_http.call(target.url, method, path, body, token, key, timeout)
        return status, answer

    email = f"faults-{uuid.uuid4().hex[:8]}@example.com"
    status, body = call("POST", "/auth/register", {"email": email, "password": "correct horse battery"})
    check("registered", status == 201, body)
    token = body["token"]
    status, body = call("POST", "/sandbox/nexus/fund", {"amount": FUNDING}, token, str(uuid.uuid4()))
    check("funded", status == 201, body)
    status, body = call("PUT", "/user/pin", {"pin": "2580"}, token)
    check("PIN set", status == 200, body)

    acked, lock = [], threading.Lock()  # (key, body, first answer)
    seen = collections.Counter()
    dropped, started = [], time.time()
    deadline = time.time() + 8
    counter = [0]

    def client():
        while time.time() < deadline:
            with lock:
                counter[0] += 1
                phone = PROCESSING_PHONE if counter[0] % 4 == 0 else "08012345678"
            key = str(uuid.uuid4())
            request = {"amount": PRICE, "productCode": "AIRTIME_MTN", "recipientPhone": phone, "pin": "2580"}
            for _ in range(400):
                status, answer = call("POST", "/user/topup", request, token, key)
                with lock:
                    seen[status] += 1
                    if status == 0 and len(dropped) < 3:
                        dropped.append(f"{time.time() - started:.1f}s: {answer}")
                if status == 200:
                    with lock:
                        acked.append((key, request, answer))
                    break
                # A key whose first request is still finishing (its replica may have died with it)
                # is a wait too, as the client cores treat it.
                in_use = status == 409 and isinstance(answer, dict) and answer.get("code") == "idempotency_key_in_use"
                if status == 0 or status == 429 or status >= 500 or in_use:
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
    crashed_at = time.time()
    victim = target.crash()
    print(f"killed {victim} mid-load")
    time.sleep(1)
    target.restart()
    if target.mode != "replica":
        print(f"back {time.time() - crashed_at:.1f}s after the kill")
    for t in threads:
        t.join(120)
    check("the load ran through the crash to definite answers", all(not t.is_alive() for t in threads) and len(acked) > 0,
          {"acknowledged": len(acked)})
    answers = ", ".join(f"{s or 'no connection'}: {n}" for s, n in sorted(seen.items()))
    print(f"{len(acked)} top-ups acknowledged; answers seen: {answers}")
    for line in dropped:
        print(f"  a connection failed at {line}")
    check("no request was answered 500 (an outage is a 502/503 to retry)", seen[500] == 0, dict(seen))

    replays = [call("POST", "/user/topup", request, token, key) for key, request, _ in acked]
    check("every acknowledged top-up sent again with its key answers exactly as it first did",
          all(status == 200 and answer == first for (status, answer), (_, _, first) in zip(replays, acked)),
          [(a, f) for a, (_, _, f) in zip(replays, acked) if a != (200, f)][:3])

    def history():
        items, cursor = [], None
        while True:
            status, page = call("GET", "/user/transactions?limit=100" + (f"&cursor={cursor}" if cursor else ""), token=token)
            if status != 200:
                raise SystemExit(f"FAIL history: {status} {page}")
            items += page["data"]
            if not page.get("hasMore"):
                return [t for t in items if (t.get("type") or t.get("kind")) == "topup"]
            cursor = page["nextCursor"]

    settle_deadline = time.time() + 120
    while True:
        topups = history()
        pending = [t for t in topups if t.get("status") == "pending"]
        if not pending or time.time() > settle_deadline:
            break
        time.sleep(1)
    processing = sum(1 for _, request, _ in acked if request["recipientPhone"] == PROCESSING_PHONE)
    check("the queued deliveries resumed after the crash: every top-up delivered",
          not pending and all(t.get("status") == "completed" for t in topups),
          {"pending": len(pending), "statuses": collections.Counter(t.get("status") for t in topups)})
    ids = [t.get("id") or t.get("transactionId") for t in topups]
    first_ids = [answer["data"]["transactionId"] for _, _, answer in acked]
    check("every acknowledged top-up is in the history, once, and nothing else",
          sorted(ids) == sorted(first_ids) and len(set(ids)) == len(ids), {"history": len(ids), "acknowledged": len(acked)})
    status, balance = call("GET", "/user/balance", token=token)
    check("the balance is the funding less exactly the acknowledged top-ups",
          balance.get("balance") == FUNDING - PRICE * len(acked), {"balance": balance, "expected": FUNDING - PRICE * len(acked)})

    jobs = dict(target.query("SELECT state, COUNT(*) FROM jobs WHERE kind = 'nexus.airtime.delivery' GROUP BY state"))
    check("no delivery job is left queued, running or dead", set(jobs) <= {"done"}, jobs)
    unbalanced = target.query("SELECT COUNT(*) FROM (SELECT transaction_id FROM ledger_entries GROUP BY transaction_id HAVING SUM(amount) <> 0) t")[0][0]
    check("every ledger transaction sums to zero", unbalanced == "0", unbalanced)
    drifted = target.query("""
        SELECT COUNT(*) FROM ledger_accounts a
        WHERE a.balance + COALESCE((SELECT SUM(s.balance) FROM ledger_balance_slots s WHERE s.account_id = a.id), 0)
              <> COALESCE((SELECT SUM(e.amount) FROM ledger_entries e WHERE e.account_id = a.id), 0)
        """)[0][0]
    check("every account's balance is the sum of its entries", drifted == "0", drifted)
    print(f"faults ({target.mode}): {cluster_http.passed} passed, 0 failed; {len(acked)} top-ups acknowledged "
          f"({processing} delivered later by the job), {sum(seen.values()) - len(acked)} retries")


if __name__ == "__main__":
    main()
