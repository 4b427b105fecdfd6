#!/usr/bin/env bash
# Every system's benchmark, side by side, into one JSON document:
#   benchmarks/run.sh [OUT] [SECONDS]   (defaults: benchmarks/results.json, 10 s per phase)
#
# 1. In-process on SQLite, release build: `purse bench nexus`, `starknet`, `chippi`, `cutie --assert`,
#    `chips` and `chips --chits`, each with `--json`.
# 2. PostgreSQL, one replica: `pgbench -N` (32 clients), then `purse serve` on the same server under
#    `purse bench nexus --server` (32 connections), then `pgbench -N` again.
# 3. 1 and 3 replicas behind nginx on one PostgreSQL (scripts/cluster.sh): `purse bench nexus --server`
#    and `purse bench chippi --server` through nginx, and `pgbench -N` in the same run.
#
# OUT holds every run's phases and figures, the ratios the targets are set in, and the commit, date,
# machine and toolchain. `python3 benchmarks/report.py OUT` writes docs/benchmarks.md's figures from it.
# Installs PostgreSQL and nginx when missing (Debian). Run it on an otherwise idle machine.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-benchmarks/results.json}")
seconds=${2:-10}
work=$(mktemp -d /tmp/purse-benchmarks.XXXXXX)
source scripts/lib/server.sh
source scripts/lib/postgres.sh
cleanup() { stop_server || true; stop_postgres; rm -rf "$work"; }
trap cleanup EXIT

swift build -c release --product purse 2>&1 | tail -1
export PURSE=$(realpath .build/release/purse)
bounded() { local limit=$1; shift; timeout --kill-after=10 "$limit" "$@"; }
limit=$(( seconds * 12 + 120 ))

echo "== in-process, SQLite"
bounded $limit "$PURSE" bench nexus --duration "$seconds" --json "$work/nexus.json"
bounded $limit "$PURSE" bench starknet --duration "$seconds" --json "$work/starknet.json"
bounded $limit "$PURSE" bench chippi --duration "$seconds" --json "$work/chippi.json"
bounded $limit "$PURSE" bench cutie --assert --duration "$seconds" --json "$work/cutie.json"
bounded $limit "$PURSE" bench chips --duration "$seconds" --json "$work/chips.json"
bounded $limit "$PURSE" bench chips --chits --duration "$seconds" --json "$work/chips-chits.json"

echo "== PostgreSQL, one replica, beside pgbench -N"
start_postgres
psql() { command psql -X -q -h 127.0.0.1 -p "$PGPORT" -U postgres "$@"; }
psql -c "CREATE DATABASE pgbench" -c "CREATE DATABASE purse"
"$PGBIN/pgbench" -h 127.0.0.1 -p "$PGPORT" -U postgres -i -q -s 10 pgbench > /dev/null 2>&1
pgbench_tps() {
  "$PGBIN/pgbench" -h 127.0.0.1 -p "$PGPORT" -U postgres -N -c 32 -j 2 -T "$seconds" pgbench 2>/dev/null \
    | awk '/^tps/ { print $3; exit }'
}
pg_before=$(pgbench_tps)
echo "pgbench -N: $pg_before tps"
DATABASE_URL="postgres://postgres@127.0.0.1:$PGPORT/purse?pool_size=32" start_server "$work"
bounded $limit "$PURSE" bench nexus --server "$url" --connections 32 --duration "$seconds" --json "$work/postgres-nexus.json"
stop_server
pg_after=$(pgbench_tps)
echo "pgbench -N again: $pg_after tps"
stop_postgres

echo "== replicas behind nginx"
export CHIPPI_SANDBOX_MERCHANT_KEYS=pk_test_bench:sk_test_bench_secret CHIPPI_SANDBOX_FULFILMENT_SECONDS=0 CHIPPI_RATE_LIMIT=100000
for n in 1 3; do
  bounded $(( limit * 3 )) bash scripts/cluster.sh -n "$n" bash -c '
    set -euo pipefail
    seconds=$0 work=$1 n=$2
    "$PURSE" bench nexus --server "$CLUSTER_URL" --connections 32 --duration "$seconds" --json "$work/cluster-$n-nexus.json"
    "$PURSE" bench chippi --server "$CLUSTER_URL" --connections 16 --duration "$seconds" --json "$work/cluster-$n-chippi.json"
    pgbin=$(dirname "$(ls /usr/lib/postgresql/*/bin/pgbench | sort -V | tail -1)")
    "$pgbin/pgbench" -q -i -s 10 "$DATABASE_URL" > /dev/null 2>&1
    "$pgbin/pgbench" -N -c 32 -j 2 -T "$seconds" "$DATABASE_URL" 2>/dev/null | awk "/^tps/ { print \$3; exit }" > "$work/cluster-$n-pgbench.txt"
  ' "$seconds" "$work" "$n"
  echo "$n replica(s): pgbench -N $(cat "$work/cluster-$n-pgbench.txt") tps"
done

python3 - "$work" "$out" "$seconds" "$pg_before" "$pg_after" <<'PY'
import json, os, platform, subprocess, sys, datetime
work, out, seconds, pg_before, pg_after = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
def load(name):
    with open(os.path.join(work, name + ".json")) as f: return json.load(f)
def text(cmd):
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()
def phase(run, prefix):
    return next(p for p in run["phases"] if p["name"].startswith(prefix))
model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
memory = next(int(l.split()[1]) for l in open("/proc/meminfo") if l.startswith("MemTotal")) // 1024 // 1024
runs = {name: load(name) for name in ["nexus", "starknet", "chippi", "cutie", "chips", "chips-chits"]}
postgres = load("postgres-nexus")
clusters = {n: {"nexus": load(f"cluster-{n}-nexus"), "chippi": load(f"cluster-{n}-chippi"),
                "pgbench_tps": float(open(os.path.join(work, f"cluster-{n}-pgbench.txt")).read().strip() or 0)} for n in (1, 3)}
pg_mean = (pg_before + pg_after) / 2
topup = phase(postgres, "top-up alone")
three = phase(clusters[3]["nexus"], "top-up alone")
skus1, skus3 = phase(clusters[1]["chippi"], "GET /v1/skus"), phase(clusters[3]["chippi"], "GET /v1/skus")
document = {
    "commit": text(["git", "rev-parse", "--short", "HEAD"]) + ("-dirty" if text(["git", "status", "--porcelain", "--untracked-files=no"]) else ""),
    "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    "machine": {"cpus": os.cpu_count(), "model": model, "memory_gib": memory, "kernel": platform.release()},
    "toolchain": text(["swift", "--version"]).splitlines()[0],
    "seconds_per_phase": seconds,
    "in_process": runs,
    "postgres": {"pgbench_tps": [pg_before, pg_after], "nexus": postgres,
                 "figures": [{"key": "postgres.topup_vs_pgbench", "value": topup["per_second"] / pg_mean * 100, "unit": "%",
                              "target": "≥ 50 %, p99 ≤ 20 ms", "met": topup["per_second"] >= pg_mean / 2 and topup["p99_ms"] <= 20}]},
    "replicas": {str(n): clusters[n] for n in clusters},
    "replica_figures": [
        {"key": "replicas3.topup_vs_pgbench", "value": three["per_second"] / max(1, clusters[3]["pgbench_tps"]) * 100, "unit": "%",
         "target": "≥ 40 %", "met": three["per_second"] >= 0.4 * clusters[3]["pgbench_tps"]},
        {"key": "replicas3.skus_vs_one", "value": skus3["per_second"] / max(1, skus1["per_second"]) * 100, "unit": "%",
         "target": "≥ 50 %", "met": skus3["per_second"] >= 0.5 * skus1["per_second"]},
    ],
}
with open(out, "w") as f: json.dump(document, f, indent=2, sort_keys=True, ensure_ascii=False); f.write("\n")
print("wrote", out)
PY
