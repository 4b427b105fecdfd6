#!/usr/bin/env bash
# The checks that need PostgreSQL: installs Debian's server when missing, starts a throwaway
# cluster on a free 127.0.0.1 port, runs the store contract suite, the ledger migration, the Nexus races (top-ups, PIN guesses) and the CLI
# journey against it, then removes it.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/server.sh
start=${start:-$(date +%s)}
step() { printf '\n==== %s (+%ss)\n' "$1" "$(( $(date +%s) - start ))"; }

step "PostgreSQL: install and start a throwaway server on 127.0.0.1"
source scripts/lib/postgres.sh
start_postgres
trap stop_postgres EXIT
export PURSE_TEST_POSTGRES_URL="$postgres_url"

step "store contract suite, Nexus races, MyCHIPs logins and notices across replicas (LISTEN/NOTIFY) on PostgreSQL"
swift test --skip-build --filter "StoreContractTests|DatabaseSeamTests|ConnectStoreTests|WalletStoreTests|CutiEStoreTests|LedgerMigrationTests|twoHundred|aHundredPinRetries|concurrentWrongPins|concurrentSettlers|ChipsLoginTests|ChipsReplicaTests|ChipsProviderTests|ChipsWalletTests|ChipsDeviceTests|ChipsPagesTests|racingAttestations|ChipsConformanceTests|RealSDKConformanceTests|DefenceTests|DeviceIdentityTests" 2>&1 | tee .ci-pg-test.log
grep -q "postgres" .ci-pg-test.log || { echo "the PostgreSQL cases did not run"; exit 1; }

# The abuse limits' races run on their own: a hundred requests at once each, beside the MyCHIPs
# races above they would only measure two loads on two cores.
step "Cuti-E device limits and the paymaster's budget under a hundred requests at once, on PostgreSQL"
swift test --skip-build --filter "DeviceLimitTests|thePaymastersBudgetHoldsUnderAHundredDraws" 2>&1 | tee .ci-pg-limits.log
grep -q "postgres" .ci-pg-limits.log || { echo "the PostgreSQL cases did not run"; exit 1; }

step "CLI journey against a live server (PostgreSQL)"
DATABASE_URL="$postgres_url" bash scripts/cli-smoke.sh

