#!/usr/bin/env bash
# Runs a command against a fresh `purse serve` on a free loopback port; '$URL' in the
# arguments becomes the server's URL. The server and its data are removed afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
PURSE=${PURSE:-.build/debug/purse}
work=$(mktemp -d /tmp/purse-server.XXXXXX)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$PURSE" serve --port "$port" --data-dir "$work/data" --log-level warning > "$work/serve.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true; wait $server 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.1; done
curl -sf "http://127.0.0.1:$port/health" >/dev/null || { cat "$work/serve.log"; exit 1; }
args=()
for arg in "$@"; do args+=("${arg//\$URL/http://127.0.0.1:$port}"); done
"${args[@]}"
