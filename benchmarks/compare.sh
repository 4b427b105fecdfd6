#!/usr/bin/env bash
# Compares two builds of `purse` by the CPU time they spend on the same fixed work:
#   benchmarks/compare.sh BASE_BINARY NEW_BINARY [OPERATIONS_PER_CONNECTION] [ROUNDS]
# Each round runs `purse bench nexus --count N` (in-process server, SQLite, 32 connections)
# under `perf stat` for both binaries, alternating, and prints the CPU time of each run (server
# and load generator together, setup included) and the CPU per top-up of its top-up-alone phase
# (the bench's own `cpu` figure: most of a run's CPU goes to setup, /health and full flows, so a
# change to the top-up path alone hides in the total), then the mean per binary. Fixed work
# removes the rate's dependence on how much got done; alternating spreads the VM's slow and fast
# spells over both builds. (Virtual machines often expose no hardware counters, so instructions are not counted.)
set -euo pipefail
base=$1 new=$2 count=${3:-300} rounds=${4:-3}
command -v perf >/dev/null || { echo "needs perf (apt-get install linux-perf)"; exit 1; }
declare -A total topup
for round in $(seq 1 "$rounds"); do
  for binary in "$base" "$new"; do
    stats=$(mktemp) output=$(mktemp)
    timeout 600 perf stat -x, -e task-clock -o "$stats" -- "$binary" bench nexus --count "$count" --connections 32 > "$output" 2>&1
    ms=$(awk -F, '/task-clock/ {printf "%.0f", $1}' "$stats")
    us=$(awk '/^top-up alone/ { for (i = 1; i <= NF; i++) if ($i == "cpu") printf "%.0f", $(i + 1) * 1000 }' "$output")
    rm -f "$stats" "$output"
    total[$binary]=$(( ${total[$binary]:-0} + ms ))
    topup[$binary]=$(( ${topup[$binary]:-0} + us ))
    printf 'round %d  %-24s cpu %7d ms   top-up %4d µs/op\n' "$round" "$(basename "$binary")" "$ms" "$us"
  done
done
for binary in "$base" "$new"; do
  printf 'mean      %-24s cpu %7d ms   top-up %4d µs/op\n' "$(basename "$binary")" "$(( total[$binary] / rounds ))" "$(( topup[$binary] / rounds ))"
done
