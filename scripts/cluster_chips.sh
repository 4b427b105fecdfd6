#!/usr/bin/env bash
# MyCHIPs across replicas (run by scripts/cluster.sh, which sets CLUSTER_URL, CLUSTER_PORTS,
# DATABASE_URL, PURSE_DATA_DIR and CHIPS_PORT): two wallets open a tally through nginx, then
#   * for every ordered pair of replicas, a payment made on one reaches the partner's connection
#     on the other (LISTEN/NOTIFY);
#   * one tally ticket presented on two replicas at once joins exactly one partner;
#   * 12 payments racing through nginx against a 20-CHIP credit limit: exactly the five that fit;
#   * both copies of the tally mirror each other and the chain verifies.
set -euo pipefail
cd "$(dirname "$0")/.."
PURSE=${PURSE:-.build/debug/purse}
work=$(mktemp -d /tmp/purse-cluster-chips.XXXXXX)
export PURSE_HOME="$work/home"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
read -r -a ports <<< "$CLUSTER_PORTS"
passed=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; exit 1; }

"$PURSE" chips ticket --user alice --name Smith --json > "$work/alice.json"
"$PURSE" chips ticket --user bob --name Baker --json > "$work/bob.json"
"$PURSE" chips connect "@$work/alice.json" >/dev/null
"$PURSE" chips connect --profile bob "@$work/bob.json" >/dev/null
"$PURSE" chips tally new --lend 20 --borrow 20 >/dev/null
"$PURSE" chips tally accept --profile bob "$("$PURSE" chips tally invite 1 | head -1)" >/dev/null
"$PURSE" chips tally offer 1 >/dev/null
"$PURSE" chips tally open --profile bob 1 >/dev/null
pass "a tally opened through nginx"

# Notices cross replicas: Alice listens on replica i, Bob pays on replica j.
for i in "${!ports[@]}"; do
  for j in "${!ports[@]}"; do
    [ "$i" != "$j" ] || continue
    "$PURSE" chips watch --via "127.0.0.1:${ports[$i]}" --count 1 --seconds 20 --json > "$work/watch" 2>&1 &
    watcher=$!
    for _ in $(seq 1 100); do grep -q connected "$work/watch" && break; sleep 0.1; done
    "$PURSE" chips pay --profile bob --via "127.0.0.1:${ports[$j]}" Smith 0.001 --memo "r$i-r$j" >/dev/null
    wait "$watcher" || fail "no notice on replica $((i + 1)) of a payment on replica $((j + 1)): $(cat "$work/watch")"
    grep -q '"state":"A.good"' "$work/watch" || fail "the notice on replica $((i + 1)) is not the payment: $(cat "$work/watch")"
  done
done
pass "a payment on any replica reaches the partner's connection on every other ($(( ${#ports[@]} * (${#ports[@]} - 1) )) pairs)"

# One tally ticket, presented on two replicas at once.
"$PURSE" chips ticket --user carol --name Cruz --json > "$work/carol.json"
"$PURSE" chips connect --profile carol "@$work/carol.json" >/dev/null
"$PURSE" chips ticket --user dan --name Diaz --json > "$work/dan.json"
"$PURSE" chips connect --profile dan "@$work/dan.json" >/dev/null
"$PURSE" chips tally new >/dev/null
invite=$("$PURSE" chips tally invite 2 | head -1)
"$PURSE" chips tally accept --profile carol --via "127.0.0.1:${ports[0]}" "$invite" > "$work/carol.out" 2>&1 &
a=$!
"$PURSE" chips tally accept --profile dan --via "127.0.0.1:${ports[1]}" "$invite" > "$work/dan.out" 2>&1 &
b=$!
ok=0
wait "$a" && ok=$((ok + 1)) || true
wait "$b" && ok=$((ok + 1)) || true
[ "$ok" = 1 ] || fail "a tally ticket joined $ok partners: $(cat "$work/carol.out" "$work/dan.out")"
grep -q "TNF" "$work/carol.out" "$work/dan.out" || fail "the second presentation was not refused as used"
pass "a tally ticket presented on two replicas at once joins one partner"

# Racing payments through nginx: Bob owes 0.006 now; 12 × 4 CHIPs against 20 of credit: 4 fit.
for n in $(seq 1 12); do
  ( "$PURSE" chips pay --profile bob Smith 4 --memo "race $n" >/dev/null 2>"$work/race-$n.err" && echo ok > "$work/race-$n" ) &
done
wait
accepted=$(ls "$work"/race-* 2>/dev/null | grep -vc err || true)
refused=$(grep -l "LMT" "$work"/race-*.err 2>/dev/null | wc -l)
[ "$accepted" = 4 ] && [ "$refused" = 8 ] || fail "12 racing payments: $accepted taken, $refused refused over the limit (expected 4 and 8)"
pass "12 payments racing across replicas against a credit limit: the 4 that fit taken, 8 refused"

alice=$("$PURSE" chips tally list --json)
bob=$("$PURSE" chips tally list --profile bob --json)
python3 - "$alice" "$bob" <<'PY' || fail "the two copies of the tally disagree"
import json, sys
a = [t for t in json.loads(sys.argv[1]) if t["state"] == "open"][0]
b = [t for t in json.loads(sys.argv[2]) if t["state"] == "open"][0]
assert a["net"] == -b["net"] == 16006, (a, b)
PY
"$PURSE" chips chits 1 | grep -q "chain: 10 links intact" || fail "the chain does not verify: $("$PURSE" chips chits 1 | tail -1)"
pass "both copies mirror each other (16.006 CHIP) and the chain of 10 chits verifies"
echo "cluster chips: $passed passed, 0 failed"
