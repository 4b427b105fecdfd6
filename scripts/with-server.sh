#!/usr/bin/env bash
# Runs a command against a fresh `purse serve` on a free loopback port; '$URL' in the
# arguments becomes the server's URL. The server and its data are removed afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/server.sh
work=$(mktemp -d /tmp/purse-server.XXXXXX)
trap 'stop_server || true; rm -rf "$work"' EXIT
start_server "$work"
args=()
for arg in "$@"; do args+=("${arg//\$URL/$url}"); done
PURSE_DATA_DIR="$work/data" PURSE_PORT="$port" "${args[@]}"
# The server must also stop cleanly, within 30 s of SIGTERM.
stop_server
