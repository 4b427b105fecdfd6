#!/usr/bin/env bash
# Schemathesis with every check against a running `purse serve` at URL, as a signed-in user:
# the document at /openapi.yaml must describe what the server answers, both ways.
#   scripts/oracles/schemathesis.sh URL [MAX_EXAMPLES]
# The server must run with STRIPE_SANDBOX_SECRET_KEY and CHIPPI_SANDBOX_MERCHANT_KEYS set to the
# values exported here, on the data directory PURSE_DATA_DIR (scripts/with-server.sh sets it).
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
# A Cuti-E support agent's session (the admin is created on the server's database, PURSE_DATA_DIR).
admin_email="schemathesis-$RANDOM$RANDOM@example.com"
CUTIE_ADMIN_PASSWORD=correct-horse-battery "${PURSE:-.build/debug/purse}" cutie admin create --email "$admin_email" --name Schemathesis --role agent >/dev/null
admin_login=$(curl -sf --max-time 10 -D - -X POST -H 'Content-Type: application/json' \
  -d "{\"email\":\"$admin_email\",\"password\":\"correct-horse-battery\"}" "$url/v1/admin/login")
# The session cookie only (the sign-in also sets the sign-in device cookie).
PURSE_ST_ADMIN_COOKIE=$(grep -i '^set-cookie: *cutie_admin=' <<<"$admin_login" | sed -E 's/^[^:]+: *([^;]+);.*/\1/' | tr -d '\r')
PURSE_ST_CSRF=$(tail -1 <<<"$admin_login" | python3 -c 'import json, sys; print(json.load(sys.stdin)["csrf_token"])')
export PURSE_ST_TOKEN STRIPE_SANDBOX_SECRET_KEY CHIPPI_PUBLIC_KEY CHIPPI_SECRET_KEY PURSE_ST_ADMIN_COOKIE PURSE_ST_CSRF
# A fixed seed and one worker: the same cases in the same order on every run.
python3 -m schemathesis.cli --no-color --config-file scripts/oracles/schemathesis.toml run "$url/openapi.yaml" \
  --seed 20261123 --max-examples "$examples" --workers 1 \
  --request-timeout 10 --continue-on-failure
