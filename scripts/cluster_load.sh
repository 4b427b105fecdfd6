#!/usr/bin/env bash
# Load through nginx with 1, 2 and 3 replicas on one PostgreSQL, side by side: Nexus top-ups (the
# lean load generator, `purse bench nexus --server`), ChippiPay purchases (quote → vault withdrawal
# on the sandbox chain → purchase → delivered, `purse bench chippi --server`), MyCHIPs signed chits
# (`purse bench chips --chits --server`), Cuti-E signed message posts (`purse bench cutie
# --server`), and PostgreSQL's own `pgbench -N` on the same server in the same run. After each run
# the invariants are checked in the database: the ledger's entries sum to zero per currency, no
# purchase is left pending, no job (fulfilment, delivery, push, webhook) was queued twice or died,
# both copies of every tally mirror each other, every tally's balance is its good chits, every
# chit chain verifies from its rows (scripts/chips_chains.py), and no message is stored twice.
#   scripts/cluster_load.sh [SECONDS]   (default 5 per phase; PURSE selects the binary)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-5}
out=$(mktemp -d /tmp/purse-cluster-load.XXXXXX)
trap 'rm -rf "$out"' EXIT
# The ChippiPay sandbox merchant the load generator signs in as; purchases delivered at once.
export CHIPPI_SANDBOX_MERCHANT_KEYS=pk_test_bench:sk_test_bench_secret CHIPPI_SANDBOX_FULFILMENT_SECONDS=0 CHIPPI_RATE_LIMIT=100000

for n in 1 2 3; do
  bash scripts/cluster.sh -n "$n" bash -c '
    set -euo pipefail
    seconds=$0 out=$1 n=$2
    PURSE=${PURSE:-.build/debug/purse}
    "$PURSE" bench nexus --server "$CLUSTER_URL" --connections 16 --duration "$seconds" > "$out/nexus-$n.txt" 2>&1
    "$PURSE" bench chippi --server "$CLUSTER_URL" --connections 8 --duration "$seconds" > "$out/chippi-$n.txt" 2>&1
    "$PURSE" bench chips --chits --server "$CLUSTER_URL" --connections 8 --duration "$seconds" > "$out/chips-$n.txt" 2>&1
    "$PURSE" bench cutie --server "$CLUSTER_URL" --connections 8 --duration "$seconds" --qr-seconds 1 > "$out/cutie-$n.txt" 2>&1
    pgbin=$(dirname "$(ls /usr/lib/postgresql/*/bin/pgbench | sort -V | tail -1)")
    "$pgbin/pgbench" -q -i -s 4 "$DATABASE_URL" > /dev/null 2>&1
    "$pgbin/pgbench" -N -c 16 -j 2 -T "$seconds" "$DATABASE_URL" 2>/dev/null | grep -E "^tps" | head -1 > "$out/pgbench-$n.txt"
    psql "$DATABASE_URL" -At -c "
      SELECT (SELECT COUNT(*) FROM (SELECT currency FROM ledger_entries GROUP BY currency HAVING SUM(amount) <> 0) s),
             (SELECT COUNT(*) FROM chippi_sku_transactions WHERE status = '"'"'pending'"'"')
               + (SELECT COUNT(*) FROM jobs WHERE kind = '"'"'chippi.fulfil'"'"' AND state <> '"'"'done'"'"')
               + (SELECT COUNT(*) FROM (SELECT kind, payload FROM jobs GROUP BY kind, payload HAVING COUNT(*) > 1) j)
               + (SELECT COUNT(*) FROM jobs WHERE state = '"'"'dead'"'"'),
             (SELECT COUNT(*) FROM chips_tallies a JOIN chips_tallies b ON a.tally_uuid = b.tally_uuid AND a.tally_ent <> b.tally_ent
               WHERE a.status = '"'"'open'"'"' AND (a.net_c <> -b.net_c OR a.chain_last IS DISTINCT FROM b.chain_last)),
             (SELECT COUNT(*) FROM chips_tallies t WHERE t.net_c <> COALESCE((SELECT SUM(CASE WHEN c.issuer = t.tally_type THEN -c.units ELSE c.units END)
               FROM chips_chits c WHERE c.chit_ent = t.tally_ent AND c.chit_seq = t.tally_seq AND c.status = '"'"'good'"'"' AND c.chit_type = '"'"'tran'"'"'), 0)),
             (SELECT COUNT(*) FROM (SELECT conversation_id, client_id FROM cutie_messages WHERE client_id IS NOT NULL
               GROUP BY conversation_id, client_id HAVING COUNT(*) > 1) d)
    " > "$out/invariants-$n.txt"
    python3 scripts/chips_chains.py "$DATABASE_URL" > "$out/chains-$n.txt"
  ' "$seconds" "$out" "$n" > "$out/cluster-$n.log" 2>&1 || { echo "cluster of $n failed:"; tail -30 "$out/cluster-$n.log"; exit 1; }
  IFS='|' read -r ledger purchases mirrors balances duplicates < "$out/invariants-$n.txt"
  [ "$ledger" = 0 ] && [ "$purchases" = 0 ] && [ "$mirrors" = 0 ] && [ "$balances" = 0 ] && [ "$duplicates" = 0 ] || {
    echo "invariants broken with $n replicas: currencies not summing to zero $ledger, purchases pending, jobs queued twice or dead $purchases, tallies not mirrored $mirrors, balances not their chits $balances, messages stored twice $duplicates"; exit 1; }
  grep -q "purchase (quote.*, 0 errors)" "$out/chippi-$n.txt" || { echo "ChippiPay purchases failed with $n replicas:"; cat "$out/chippi-$n.txt"; exit 1; }
done

rate() { grep -E "$2" "$1" | head -1 | sed -E 's/.* ([0-9]+) \/s .*/\1/'; }
printf '%-44s %12s %12s %12s\n' "through nginx (debug build unless PURSE says)" "1 replica" "2 replicas" "3 replicas"
printf '%-44s %12s %12s %12s\n' "Nexus top-up alone (/s)" "$(rate "$out/nexus-1.txt" '^top-up')" "$(rate "$out/nexus-2.txt" '^top-up')" "$(rate "$out/nexus-3.txt" '^top-up')"
printf '%-44s %12s %12s %12s\n' "Nexus full step-up flow (/s)" "$(rate "$out/nexus-1.txt" '^full')" "$(rate "$out/nexus-2.txt" '^full')" "$(rate "$out/nexus-3.txt" '^full')"
printf '%-44s %12s %12s %12s\n' "ChippiPay purchase, chain paid → delivered (/s)" "$(rate "$out/chippi-1.txt" '^purchase')" "$(rate "$out/chippi-2.txt" '^purchase')" "$(rate "$out/chippi-3.txt" '^purchase')"
printf '%-44s %12s %12s %12s\n' "MyCHIPs signed chit → partner notified (/s)" "$(rate "$out/chips-1.txt" '^signed chit')" "$(rate "$out/chips-2.txt" '^signed chit')" "$(rate "$out/chips-3.txt" '^signed chit')"
printf '%-44s %12s %12s %12s\n' "Cuti-E message post, signed (/s)" "$(rate "$out/cutie-1.txt" '^POST')" "$(rate "$out/cutie-2.txt" '^POST')" "$(rate "$out/cutie-3.txt" '^POST')"
printf '%-44s %12s %12s %12s\n' "pgbench -N on the same PostgreSQL (tps)" "$(sed -E 's/tps = ([0-9]+).*/\1/' "$out/pgbench-1.txt")" "$(sed -E 's/tps = ([0-9]+).*/\1/' "$out/pgbench-2.txt")" "$(sed -E 's/tps = ([0-9]+).*/\1/' "$out/pgbench-3.txt")"
echo "invariants after each run: the ledger sums to zero per currency, no purchase pending, no job queued twice or dead, both copies of every tally mirror each other, every tally's balance is its good chits, every chit chain verifies, no message stored twice"
for n in 1 2 3; do echo "  $n replica(s): $(cat "$out/chains-$n.txt")"; done
