#!/usr/bin/env bash
# Top-ups on PostgreSQL against PostgreSQL's own pgbench, on one throwaway server:
#   benchmarks/postgres.sh [PURSE_BINARY] [SECONDS_PER_PHASE] [CONNECTIONS]
# (defaults: .build/release/purse, 15, 32). Starts a PostgreSQL cluster with the Debian
# package's default settings, then on it, one after another:
#   1. `pgbench -N` with CONNECTIONS clients: the TPC-B-like transaction without the branch and
#      teller updates (one account update, one account read, one history insert), what a
#      PostgreSQL server on the machine does with short write transactions;
#   2. `purse serve` (its own database, a pool of CONNECTIONS) and `purse bench nexus --server`
#      with CONNECTIONS connections: step-up flows, top-ups alone, GET /health;
#   3. `pgbench -N` again, so a drift of the machine's speed shows.
# Prints each, then top-ups per second against the mean of the two pgbench runs. The target:
# ≥ 50 % of pgbench -N with a top-up p99 ≤ 20 ms at 32 connections.
set -euo pipefail
cd "$(dirname "$0")/.."
PURSE=$(realpath "${1:-.build/release/purse}")
seconds=${2:-15} connections=${3:-32}
source scripts/lib/server.sh
source scripts/lib/postgres.sh
work=$(mktemp -d)
cleanup() { stop_server || true; stop_postgres; rm -rf "$work"; }
trap cleanup EXIT

start_postgres
psql() { command psql -X -q -h 127.0.0.1 -p "$PGPORT" -U postgres "$@"; }
psql -c "CREATE DATABASE pgbench" -c "CREATE DATABASE purse"
"$PGBIN/pgbench" -h 127.0.0.1 -p "$PGPORT" -U postgres -i -q -s 10 pgbench 2>&1 | tail -1

pgbench_run() {
  "$PGBIN/pgbench" -h 127.0.0.1 -p "$PGPORT" -U postgres -N -c "$connections" -j 2 -T "$seconds" pgbench 2>&1 \
    | tee "$work/pgbench" | grep -E "latency average|tps" | sed 's/^/  /'
  awk '/^tps/ { print int($3) }' "$work/pgbench"
}

echo "== pgbench -N, $connections clients, $seconds s"
first=$(pgbench_run | tee /dev/stderr | tail -1)

echo "== purse bench nexus --server, $connections connections, $seconds s per phase"
DATABASE_URL="postgres://postgres@127.0.0.1:$PGPORT/purse?pool_size=$connections" start_server "$work"
"$PURSE" bench nexus --server "$url" --connections "$connections" --duration "$seconds" | tee "$work/purse"
stop_server

echo "== pgbench -N again"
second=$(pgbench_run | tee /dev/stderr | tail -1)

read -r rate p99 < <(awk '/^top-up alone/ { for (i = 1; i <= NF; i++) { if ($i == "/s") r = $(i - 1); if ($i == "p99") p = $(i + 1) } print int(r), p }' "$work/purse")
mean=$(( (first + second) / 2 ))
echo
printf 'pgbench -N: %d and %d tps (mean %d)\n' "$first" "$second" "$mean"
printf 'top-ups:    %d /s, p99 %s ms = %d %% of pgbench -N (target ≥ 50 %%, p99 ≤ 20 ms)\n' "$rate" "$p99" $(( rate * 100 / mean ))
