#!/usr/bin/env bash
# The checks that need PostgreSQL: installs Debian's server when missing, starts a throwaway
# cluster on a free 127.0.0.1 port, runs the store contract suite, the ledger migration, the Nexus races and the CLI
# journey against it, then removes it.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/server.sh
start=${start:-$(date +%s)}
step() { printf '\n==== %s (+%ss)\n' "$1" "$(( $(date +%s) - start ))"; }

step "PostgreSQL: install and start a throwaway server on 127.0.0.1"
export DEBIAN_FRONTEND=noninteractive
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  apt-get update -qq
  apt-get install -y -qq postgresql >/dev/null
fi
PGBIN=$(dirname "$(ls /usr/lib/postgresql/*/bin/initdb | sort -V | tail -1)")
PGDATA=$(mktemp -d /tmp/purse-pg.XXXXXX)
PGPORT=${PURSE_CI_PG_PORT:-$(free_port)}
chown postgres "$PGDATA"
runuser -u postgres -- "$PGBIN/initdb" -D "$PGDATA" --auth=trust -U postgres >/dev/null
if ! runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGDATA" -o "-p $PGPORT -k $PGDATA -c listen_addresses=127.0.0.1 -c max_connections=300" -l "$PGDATA/log" -w start >/dev/null; then
  cat "$PGDATA/log"; exit 1
fi
trap 'runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGDATA" -m fast stop >/dev/null 2>&1 || true; rm -rf "$PGDATA"' EXIT
export PURSE_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:$PGPORT/postgres"

step "store contract suite and Nexus races on PostgreSQL"
swift test --skip-build --filter "StoreContractTests|LedgerMigrationTests|twoHundred" 2>&1 | tee .ci-pg-test.log
grep -q "postgres" .ci-pg-test.log || { echo "the PostgreSQL cases did not run"; exit 1; }

step "CLI journey against a live server (PostgreSQL)"
DATABASE_URL="postgres://postgres@127.0.0.1:$PGPORT/postgres" bash scripts/cli-smoke.sh

