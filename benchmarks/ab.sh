#!/usr/bin/env bash
# Compares two builds of `purse` running side by side:
#   benchmarks/ab.sh BASE_BINARY NEW_BINARY [ROUNDS] [SECONDS_PER_PHASE]
# Each round starts `purse bench nexus` (in-process server, SQLite, 32 connections) of both
# binaries at the same moment, so both see the same spell of a shared virtual machine — whose speed can drift by
# ±30 % within minutes, more than the changes being measured. Sharing the cores slows both
# alike; the figures to compare are each phase's CPU per operation (server and load generator
# of that process), which contention inflates for both by the same factor, and the rates side
# by side. Prints each round and the mean per binary.
set -euo pipefail
base=$1 new=$2 rounds=${3:-3} seconds=${4:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
declare -A sum
for round in $(seq 1 "$rounds"); do
  "$base" bench nexus --connections 32 --duration "$seconds" > "$work/base" 2>&1 &
  "$new" bench nexus --connections 32 --duration "$seconds" > "$work/new" 2>&1 &
  wait
  for side in base new; do
    # phase name, rate, cpu/op (µs) for /health, full flows and top-up alone
    line=$(awk '
      /^GET \/health/ && !/again/ { n = "health" } /^full flow/ { n = "flows" } /^top-up alone/ { n = "topup" }
      n != "" { for (i = 1; i <= NF; i++) { if ($i == "/s") rate = $(i - 1); if ($i == "cpu") cpu = $(i + 1) * 1000 }
                printf "%s %s %.0f ", n, rate, cpu; n = "" }' "$work/$side")
    set -- $line
    printf 'round %d  %-4s  health %6s/s %3s µs   flows %5s/s %4s µs   top-up %5s/s %4s µs\n' "$round" "$side" "$2" "$3" "$5" "$6" "$8" "$9"
    for key in 2 3 5 6 8 9; do sum[$side,$key]=$(( ${sum[$side,$key]:-0} + ${!key} )); done
  done
done
for side in base new; do
  printf 'mean      %-4s  health %6d/s %3d µs   flows %5d/s %4d µs   top-up %5d/s %4d µs\n' "$side" \
    $(( sum[$side,2] / rounds )) $(( sum[$side,3] / rounds )) $(( sum[$side,5] / rounds )) $(( sum[$side,6] / rounds )) $(( sum[$side,8] / rounds )) $(( sum[$side,9] / rounds ))
done
