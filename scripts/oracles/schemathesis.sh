#!/usr/bin/env bash
# Schemathesis with every check against a running `purse serve` at URL, as a signed-in user:
# the document at /openapi.yaml must describe what the server answers, both ways.
#   scripts/oracles/schemathesis.sh URL [MAX_EXAMPLES]
# The server must run with STRIPE_SANDBOX_SECRET_KEY and CHIPPI_SANDBOX_MERCHANT_KEYS set to the
# values exported here.
set -euo pipefail
url=$1
examples=${2:-30}
cd "$(dirname "$0")/../.."
email="schemathesis-$RANDOM$RANDOM@example.com"
PURSE_ST_TOKEN=$(curl -sf --max-time 10 -X POST -H 'Content-Type: application/json' \
  -d "{\"email\":\"$email\",\"password\":\"correct horse battery\",\"name\":\"Schemathesis\"}" "$url/auth/register" |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["token"])')
CHIPPI_PUBLIC_KEY=${CHIPPI_SANDBOX_MERCHANT_KEYS%%:*}
CHIPPI_SECRET_KEY=${CHIPPI_SANDBOX_MERCHANT_KEYS#*:}
export PURSE_ST_TOKEN STRIPE_SANDBOX_SECRET_KEY CHIPPI_PUBLIC_KEY CHIPPI_SECRET_KEY
# A fixed seed and one worker: the same cases in the same order on every run.
python3 -m schemathesis.cli --no-color --config-file scripts/oracles/schemathesis.toml run "$url/openapi.yaml" \
  --seed 20261123 --max-examples "$examples" --workers 1 \
  --request-timeout 10 --continue-on-failure
