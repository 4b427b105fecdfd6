#!/usr/bin/env bash
# Greps every server log a CI run kept (PURSE_LOG_ARCHIVE) for the secrets the run used — the
# passwords, PINs, API secret keys and passphrases its scripts send — and for the shapes of
# credentials that must never be logged: bearer tokens (JWTs), private keys (PEM, JWK "d"), and
# MyCHIPs login signatures in a query string.
#   scripts/secrets_in_logs.sh DIR
set -euo pipefail
dir=${1:?usage: secrets_in_logs.sh DIR}
shopt -s nullglob
logs=("$dir"/*.log)
[ "${#logs[@]}" -gt 0 ] || { echo "no server logs in $dir"; exit 1; }
lines=$(cat "${logs[@]}" | wc -l)
fixed='correct horse battery|correct-horse-battery|wallet password|river stone 42|sk_test_ci_secret|sk_test_cli_secret|sk_test_bench_secret|sk_test_sandbox_ci|"pin" *: *"[0-9]{4}"|currentPin'
shapes='(^|[^a-z_])private_key"?[=:]|secret_key=|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}|-----BEGIN [A-Z ]*PRIVATE KEY|"d" *: *"[A-Za-z0-9_-]{40,}"|[?&]sign=[A-Za-z0-9_-]{40,}|[?&]token=[0-9a-f]{32}'
if grep -nE "$fixed|$shapes" "${logs[@]}" > /tmp/purse-secret-hits 2>/dev/null; then
  echo "secrets in server logs:"; head -20 /tmp/purse-secret-hits | cut -c1-300; exit 1
fi
echo "secrets in logs: none in $lines lines of ${#logs[@]} server logs"
