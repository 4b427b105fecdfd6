#!/usr/bin/env bash
# Starts `purse serve` on a free port with a throwaway data dir and walks the account journey
# with the CLI, as a user would: register -> whoami -> logout -> login -> whoami.
set -euo pipefail
trap 'echo "cli-smoke: failed at line $LINENO: $BASH_COMMAND" >&2' ERR

# expect_in TEXT COMMAND...: runs COMMAND and fails, showing its output, unless TEXT is in it.
# (Not `COMMAND | grep -q`: with pipefail, grep leaving early can fail the pipeline by SIGPIPE.)
expect_in() {
  local text=$1 out
  shift
  out=$("$@")
  if ! grep -qF -- "$text" <<<"$out"; then echo "expected '$text' in the output of: $*"; echo "$out"; return 1; fi
}
cd "$(dirname "$0")/.."
source scripts/lib/server.sh
work=$(mktemp -d /tmp/purse-cli.XXXXXX)
export PURSE_HOME="$work/home"
trap 'stop_server || true; kill "${hook:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
export VTPASS_SANDBOX_PENDING_SECONDS=1
# ChippiPay: known sandbox merchant keys, a fast sandbox supplier, and a webhook receiver that
# records what it is sent (bounded: it exits after 60 s).
export CHIPPI_SANDBOX_MERCHANT_KEYS=pk_test_cli:sk_test_cli_secret CHIPPI_SANDBOX_FULFILMENT_SECONDS=0.5
hook_port=$(free_port)
python3 - "$hook_port" "$work/webhooks" <<'PY' &
import http.server, sys, threading
port, out = int(sys.argv[1]), sys.argv[2]
class Hook(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        with open(out, "a") as f:
            f.write(self.headers.get("Chipi-Signature", "-") + " " + body.decode() + "\n")
        self.send_response(200); self.end_headers()
    def log_message(self, *args): pass
server = http.server.HTTPServer(("127.0.0.1", port), Hook)
threading.Timer(60, server.shutdown).start()
server.serve_forever()
PY
hook=$!
export CHIPPI_SANDBOX_WEBHOOK_URL="http://127.0.0.1:$hook_port/chippi"
start_server "$work"

email="cli-$RANDOM$RANDOM@example.com"
"$PURSE" account register --server "$url" --email "$email" --password "correct horse" --name "CLI User"
expect_in "$email" "$PURSE" account whoami --server "$url"
"$PURSE" account whoami --server "$url" --json | python3 -c 'import json,sys; assert json.load(sys.stdin)["email"] == sys.argv[1]' "$email"
"$PURSE" account logout --server "$url"
if "$PURSE" account whoami --server "$url" 2>/dev/null; then echo "whoami worked after logout"; exit 1; fi
PURSE_PASSWORD="correct horse" "$PURSE" account login --server "$url" --email "$email"
"$PURSE" account whoami --server "$url"
if "$PURSE" account login --server "$url" --email "$email" --password "wrong password" 2>"$work/err"; then echo "bad password accepted"; exit 1; fi
grep -q "Invalid credentials" "$work/err"

# Nexus Data: fund, enrol a passkey, buy airtime by biometric step-up, then by PIN.
expect_in AIRTIME_MTN "$PURSE" nexus products --server "$url"
"$PURSE" nexus fund --server "$url" --amount 5000
"$PURSE" nexus enroll --server "$url" --yes
"$PURSE" nexus buy-airtime --server "$url" --yes --product AIRTIME_MTN --phone 08012345678 --amount 500
"$PURSE" nexus balance --server "$url" --json | python3 -c 'import json,sys; b=json.load(sys.stdin); assert b["balance"] == 4500, b'
PURSE_NEW_PIN=2580 PURSE_PIN= "$PURSE" nexus set-pin --server "$url" < /dev/null
PURSE_PIN=2580 "$PURSE" nexus buy-airtime --server "$url" --pin --product AIRTIME_GLO --phone +2348012345678 --amount 1000
"$PURSE" nexus balance --server "$url" --json | python3 -c 'import json,sys; b=json.load(sys.stdin); assert b["balance"] == 3500, b'
if PURSE_PIN=1111 "$PURSE" nexus buy-airtime --server "$url" --pin --product AIRTIME_GLO --phone 08012345678 --amount 100 < /dev/null 2>"$work/err"; then echo "wrong PIN bought airtime"; exit 1; fi
grep -q "Incorrect PIN" "$work/err"
expect_in "AIRTIME_GLO" "$PURSE" nexus history --server "$url"
# The VTpass sandbox refuses numbers ending in 000: the CLI says so (exit 2) and the wallet is refunded.
if PURSE_PIN=2580 "$PURSE" nexus buy-airtime --server "$url" --pin --product AIRTIME_MTN --phone 08012340000 --amount 200 < /dev/null 2>"$work/err"; then echo "a refused top-up reported success"; exit 1; fi
grep -q "back in your wallet" "$work/err" || { cat "$work/err"; exit 1; }
"$PURSE" nexus balance --server "$url" --json | python3 -c 'import json,sys; b=json.load(sys.stdin); assert b["balance"] == 3500, b'
expect_in "[failed, refunded" "$PURSE" nexus history --server "$url"
# Numbers ending in 999 stay processing: the purchase is pending, `status --wait` follows it.
expect_in "delivery not yet confirmed" env PURSE_PIN=2580 "$PURSE" nexus buy-airtime --server "$url" --pin --no-wait --product AIRTIME_MTN --phone 08012345999 --amount 100
pending=$("$PURSE" nexus history --server "$url" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"][0]["transactionId"])')
expect_in "[pending]" "$PURSE" nexus history --server "$url"
expect_in "completed" "$PURSE" nexus status --server "$url" --wait "$pending"
"$PURSE" nexus balance --server "$url" --json | python3 -c 'import json,sys; b=json.load(sys.stdin); assert b["balance"] == 3400, b'
expect_in "mtn-10mb-100 (N100 100MB - 24 hrs, ₦100) is not in the catalogue" env PURSE_DATA_DIR="$work/data" PURSE_PUBLIC_URL="$url" "$PURSE" nexus products sync
"$PURSE" nexus unlock --server "$url" --yes

# Maly: create the Connect account and get the onboarding link, complete the sandbox form as a
# person would, then the CLI's wait ends when the signed webhook has marked onboarding complete.
expect_in "No Stripe Connect account" "$PURSE" connect status --server "$url"
link=$("$PURSE" connect onboard --server "$url" --no-wait --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["url"])')
"$PURSE" connect status --server "$url" --json | python3 -c 'import json,sys; s=json.load(sys.stdin); assert s == {"hasAccount": True, "onboardingComplete": False}, s'
"$PURSE" connect onboard --server "$url" --timeout 30 > "$work/onboard.out" 2>&1 &
waiter=$!
# Submit the form only once the waiter is waiting; otherwise it may find onboarding already complete.
for _ in $(seq 1 100); do grep -q "Open this page" "$work/onboard.out" && break; sleep 0.1; done
grep -q "Open this page" "$work/onboard.out" || { echo "connect onboard did not present the link"; cat "$work/onboard.out"; exit 1; }
status=$(curl -s --max-time 30 -o "$work/form.out" -w '%{http_code}' -X POST "$link" \
  --data 'business_type=individual&business_name=CLI+Events&email=cli%40example.com&first_name=Jenny&last_name=Rosen&phone=%2B12025550143&dob=1990-01-01&address_line1=address_full_match&city=SF&postal_code=94103&ssn_last_4=0000&routing_number=110000000&account_number=000123456789&tos=accepted&action=submit')
if [ "$status" != 303 ]; then echo "sandbox onboarding form answered $status, not 303"; cat "$work/form.out"; exit 1; fi
if ! wait "$waiter"; then echo "connect onboard did not see completion"; cat "$work/onboard.out"; exit 1; fi
grep -q "Onboarding complete" "$work/onboard.out" || { echo "connect onboard ended without seeing completion"; cat "$work/onboard.out"; exit 1; }
"$PURSE" connect verify --server "$url" --json | python3 -c 'import json,sys; s=json.load(sys.stdin); assert s["onboardingComplete"] and s["chargesEnabled"] and s["payoutsEnabled"], s'

# ChippiPay: connect a predeployed sandbox account (key on stdin), deposit to the vault, withdraw
# part of it to another address, and refuse what the vault does not hold.
read -r address key < <("$PURSE" starknet accounts --server "$url" --json |
  python3 -c 'import json,sys; a=json.load(sys.stdin)["accounts"][0]; print(a["address"], a["private_key"])')
echo "$key" | "$PURSE" chippi vault connect --server "$url" --address "$address" > /dev/null
expect_in "accepted on L2" "$PURSE" chippi vault deposit --server "$url" 10
expect_in "vault  7.5 STRK" "$PURSE" chippi vault withdraw --server "$url" 2.5 --to 0x1234
"$PURSE" starknet balance --server "$url" 0x1234 --json | python3 -c 'import json,sys; b=json.load(sys.stdin); assert b["wallet"] == "2.5" and b["vault"] == "0", b'
if "$PURSE" chippi vault withdraw --server "$url" 8 2>"$work/err"; then echo "withdrew more than the vault holds"; exit 1; fi
grep -q "Not enough STRK in the vault (7.5 STRK available)" "$work/err" || { cat "$work/err"; exit 1; }
expect_in "balance 5.5 STRK" "$PURSE" starknet mint --server "$url" 0x1234 3
if grep -rq "$key" "$PURSE_HOME"; then echo "the private key is stored in clear"; exit 1; fi
# The seed's purchase: a gasless wallet for the signed-in user, then Telcel 50 MXN for 5512345678
# paid from the vault (exactly 2.5 STRK), delivered, and the merchant told by a signed webhook.
# User mode: the CLI keeps the publishable key only and buys as the signed-in user.
"$PURSE" chippi configure --server "$url" --api-key pk_test_cli > /dev/null
expect_in "2.5 STRK" "$PURSE" chippi quote --server "$url" telcel_50
echo "wallet password" | "$PURSE" chippi wallet create --server "$url" > /dev/null
expect_in "Purchase Successful!" "$PURSE" chippi buy --server "$url" telcel_50 --reference 5512345678
expect_in "vault  5 STRK" "$PURSE" chippi vault balance --server "$url"
expect_in "[completed]" "$PURSE" chippi history --server "$url"
if "$PURSE" chippi buy --server "$url" telcel_50 --reference 5512340000 2>"$work/err"; then echo "a refused purchase reported success"; exit 1; fi
grep -q "2.5 STRK refunded" "$work/err" || { cat "$work/err"; exit 1; }
for _ in $(seq 1 100); do [ "$(grep -c "sku_transaction" "$work/webhooks" 2>/dev/null)" -ge 2 ] && break; sleep 0.1; done
grep -q '^t=[0-9]*,v1=[0-9a-f]\{64\} .*"type":"sku_transaction.completed"' "$work/webhooks" || { echo "no signed completion webhook"; cat "$work/webhooks"; exit 1; }
grep -q '"type":"sku_transaction.failed"' "$work/webhooks" || { echo "no failure webhook"; exit 1; }
"$PURSE" chippi vault disconnect --server "$url" > /dev/null
if "$PURSE" chippi vault balance --server "$url" 2>/dev/null; then echo "a disconnected wallet still answered"; exit 1; fi
# The developer tools agree with starknet-py's vectors (committed as fixtures).
vectors=Tests/StarknetTests/Fixtures/starknet_vectors.json
python3 - "$vectors" "$work" <<'PY'
import json, sys
vectors = json.load(open(sys.argv[1]))
invoke = dict(vectors["invoke_v3"][0]); expected = invoke.pop("hash"); invoke.pop("calls")
invoke.update(type="INVOKE", signature=[])
json.dump(invoke, open(sys.argv[2] + "/invoke.json", "w"))
open(sys.argv[2] + "/invoke.hash", "w").write(expected)
json.dump([{"to": c["to"], "selector": c["selector"], "calldata": c["calldata"]} for c in vectors["invoke_v3"][0]["calls"]], open(sys.argv[2] + "/calls.json", "w"))
open(sys.argv[2] + "/calldata", "w").write("\n".join(vectors["invoke_v3"][0]["calldata"]) + "\n")
PY
[ "$("$PURSE" starknet tx-hash "$work/invoke.json")" = "$(cat "$work/invoke.hash")" ]
"$PURSE" starknet calldata "$work/calls.json" | diff - "$work/calldata"
[ "$("$PURSE" starknet selector transfer)" = "$(python3 -c 'import json,sys; print(next(s["selector"] for s in json.load(open(sys.argv[1]))["selectors"] if s["name"] == "transfer"))' "$vectors")" ]
signature=$(echo 0x1 | "$PURSE" starknet sign 0x1 2>/dev/null | tr '\n' ' ')
[ "$signature" = "0xedf3922fdf0c1b98a861a38874120a437e33c08841923317aeb8ec6bad1400 0xa658327ad247b8e816aadd7758d96450f8d43c691aadf768cadd8784f3b8ef " ]
# shellcheck disable=SC2086
expect_in valid "$PURSE" starknet verify 0x1 $signature "$(echo 0x1 | "$PURSE" starknet public-key 2>/dev/null)"
if "$PURSE" starknet pedersen 0x800000000000011000000000000000000000000000000000000000000000001 1 2>"$work/err"; then echo "a felt >= P was accepted"; exit 1; fi
grep -q "A is not a felt" "$work/err"

# Cuti-E: write to support, register for pushes, an admin answers (the APNs sandbox receives the
# push), the reply is unread until opened; link a second device by its QR code and share the inbox.
conversation=$("$PURSE" cutie feedback --server "$url" --json "The app crashes in settings" --category bug --title Crash --name Ana \
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["conversation_id"])')
apns_token=00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff
"$PURSE" cutie push --server "$url" "$apns_token" --bundle-id com.purse.cutie.sandbox > /dev/null
CUTIE_ADMIN_PASSWORD=correct-horse-battery PURSE_DATA_DIR="$work/data" "$PURSE" cutie admin create --email desk@example.com --name Sam --role agent > /dev/null
CUTIE_ADMIN_PASSWORD=correct-horse-battery "$PURSE" cutie admin reply --server "$url" --email desk@example.com "$conversation" "A fix ships tomorrow" > /dev/null
expect_in "[1 unread]" "$PURSE" cutie inbox --server "$url"
for _ in $(seq 1 50); do curl -sf "$url/sandbox/apns/deliveries?device_token=$apns_token" | grep -q "A fix ships tomorrow" && break; sleep 0.1; done
curl -sf "$url/sandbox/apns/deliveries?device_token=$apns_token" | grep -q '\\"badge\\":1'
expect_in "Sam: A fix ships tomorrow" "$PURSE" cutie open --server "$url" "$conversation"
expect_in "0 unread." "$PURSE" cutie inbox --server "$url"
"$PURSE" cutie link initiate --server "$url" --qr-png "$work/link.png" > "$work/link.txt"
link=$(grep -o 'lnk_[A-Za-z0-9_-]*' "$work/link.txt" | head -1)
[ -s "$work/link.png" ]
expect_in "Linked" "$PURSE" cutie link confirm --server "$url" --profile tablet --device-name iPad "$link"
expect_in "$conversation" "$PURSE" cutie inbox --server "$url" --profile tablet
expect_in "confirmed" "$PURSE" cutie link status --server "$url" "$link"
if "$PURSE" cutie link confirm --server "$url" --profile third "$link" 2>"$work/err"; then echo "a used link token linked again"; exit 1; fi
grep -q "already used" "$work/err"

# App Attest, offline: Apple's published sample attestation verifies inside its certificates' validity, not after.
sample=Tests/CutiETests/Fixtures/apple_sample_attestation.b64
attest=(cutie attest verify "$sample" --app-id 0352187391.com.apple.example_app_attest --challenge test_server_challenge
        --key-id bSrEhF8TIzIvWSPwvZ0i2+UOBre4ASH84rK15m6emNY= --client-data raw)
expect_in "valid: key" "$PURSE" "${attest[@]}" --at 2024-04-18T12:00:00Z
if "$PURSE" "${attest[@]}" --at 2024-04-21T12:00:00Z 2>"$work/err"; then echo "an expired attestation verified"; exit 1; fi
grep -q "certificate chain" "$work/err"
# App Attest online: a profile attests its key (software attester, the sandbox's development CA)
# and from then on its requests carry assertions; the same attestation verifies offline against
# the development root. Subscriptions: the sandbox's StoreKit signs, the server verifies.
expect_in "Attested: key" "$PURSE" cutie attest device --server "$url" --profile attested
expect_in "free (none)" "$PURSE" cutie usage --server "$url" --profile attested --app-attest
expect_in "Subscribed: pro" "$PURSE" cutie subscription grant --server "$url" --profile attested --app-attest --tier pro
expect_in "pro (active)" "$PURSE" cutie usage --server "$url" --profile attested --app-attest
[ -s "$work/data/cutie-app-attest-dev-root.pem" ]

# MyCHIPs: the provider makes a ticket; the wallet connects with it (a new P-521 connection key),
# logs in again by signature, switches language; the same ticket is refused a second time.
# The ticket names where the running server serves (recorded by it): no CHIPS_PORT needed.
PURSE_DATA_DIR="$work/data" "$PURSE" chips ticket --user alice --name Smith --json > "$work/ticket.json"
grep -q "\"port\":$((port + 1))" "$work/ticket.json" || { echo "the ticket does not name the running server's websocket port"; cat "$work/ticket.json"; exit 1; }
expect_in "CHIP address: alice:" "$PURSE" chips connect "@$work/ticket.json"
expect_in "certificate: {\"chad\"" "$PURSE" chips whoami
expect_in "Nacido el" "$PURSE" chips lang spa
expect_in "* spa" "$PURSE" chips lang
expect_in "state: connected" "$PURSE" chips status
if "$PURSE" chips lang xx 2>"$work/err"; then echo "chips lang accepted a language the provider does not have"; exit 1; fi
grep -q "no language xx" "$work/err"
if "$PURSE" chips connect --profile second "@$work/ticket.json" 2>"$work/err"; then echo "a used MyCHIPs ticket logged in again"; exit 1; fi
grep -q "refused the login" "$work/err"
# The signing key's backup link opens with its passphrase only; links name their kind.
echo "a backup passphrase" | "$PURSE" chips key export > "$work/signkey.txt"
signkey=$(head -1 "$work/signkey.txt")
echo "a backup passphrase" | expect_in "not stored (--dry-run)" "$PURSE" chips key import --dry-run "$signkey"
if echo "another passphrase" | "$PURSE" chips key import "$signkey" 2>/dev/null; then echo "a signkey opened with the wrong passphrase"; exit 1; fi
expect_in "kind: pay" "$PURSE" chips link parse "https://mychips.org/pay?chad=alice:agent&units=2500"
# Two users in two terminals open a tally and pay each other: Alice drafts and invites, Bob
# presents the ticket, Alice offers, Bob accepts; Bob pays, Alice asks for more, Bob pays that.
PURSE_DATA_DIR="$work/data" "$PURSE" chips ticket --user bob --name Baker --json > "$work/bob.json"
expect_in "CHIP address: bob:" "$PURSE" chips connect --profile bob "@$work/bob.json"
expect_in "draft" "$PURSE" chips tally new --lend 50 --borrow 20 --comment "Garden work"
invite=$("$PURSE" chips tally invite 1 | head -1)
expect_in "joined the tally" "$PURSE" chips tally accept --profile bob "$invite"
expect_in "H.offer" "$PURSE" chips tally offer 1
bob_tally=$("$PURSE" chips tally list --profile bob --json | python3 -c 'import json,sys; print([t for t in json.load(sys.stdin) if t["state"]=="P.offer"][0]["tally_seq"])')
expect_in "open" "$PURSE" chips tally open --profile bob "$bob_tally"
expect_in "L.good" "$PURSE" chips pay --profile bob Smith 12.5 --memo Hedges
expect_in "A.pend" "$PURSE" chips request Baker 3 --memo Mulch
invoice=$("$PURSE" chips history --profile bob --json | python3 -c 'import json,sys; print([c for c in map(json.loads, sys.stdin) if c["state"]=="L.pend"][0]["chit_uuid"])')
expect_in "L.good" "$PURSE" chips answer --profile bob "$invoice" --pay
expect_in "net 15.5 CHIP" "$PURSE" chips balance --visual "$work/balance.svg"
grep -q "<svg" "$work/balance.svg"
chit_link=$("$PURSE" chips pay --profile bob Smith 0.5 --memo "by hand" --link --json)
expect_in "A.good" "$PURSE" chips receive "$chit_link"
expect_in "chain: 3 links intact" "$PURSE" chips chits 1
if "$PURSE" chips pay --profile bob Smith 40 2>"$work/err"; then echo "a payment beyond the credit limit was taken"; exit 1; fi
grep -q "Over Limit: The payment would go beyond the credit the partner grants (!mychips.chits:LMT)" "$work/err"
# A refusal reads in the profile's language (Smith chose Spanish above).
if "$PURSE" chips pay Baker 1000 2>"$work/err"; then echo "a payment beyond the credit limit was taken"; exit 1; fi
grep -q "Sobre el límite" "$work/err"
# A payment whose answer is lost (a relay forwards it, then drops the connection before the
# provider's answer): the CLI logs in again and sends the same chit, stored once.
relay_port=$(free_port)
python3 scripts/lib/lose_answer_relay.py "$relay_port" "$port" "$work/lost" 60 &
relay=$!
for _ in $(seq 1 50); do (echo > "/dev/tcp/127.0.0.1/$relay_port") 2>/dev/null && break; sleep 0.1; done
expect_in "L.good" "$PURSE" chips pay --profile bob --via "127.0.0.1:$relay_port" Smith 1.5 --memo "through the relay"
kill "$relay" 2>/dev/null || true
[ "$(cat "$work/lost" 2>/dev/null)" = 1 ] || { echo "the relay lost no answer"; exit 1; }
relayed=$("$PURSE" chips history --profile bob --json | python3 -c 'import json,sys; print(sum(1 for c in map(json.loads, sys.stdin) if c.get("memo")=="through the relay"))')
[ "$relayed" = 1 ] || { echo "the relayed payment was stored $relayed times"; exit 1; }
# Scan → invoice → pay: Bob's scanner pays Alice's invoice on their tally; at her payment address
# (no amount) he asks her for an invoice instead. The agreement comes as a page.
invoice_link=$("$PURSE" chips invoice 2.5 --memo Tomatoes --json)
expect_in "invoice from Smith" "$PURSE" chips scan --profile bob "$invoice_link"
expect_in "L.good" "$PURSE" chips scan --profile bob --pay "$invoice_link"
address_link=$("$PURSE" chips invoice --json)
if "$PURSE" chips scan --profile bob --pay "$address_link" 2>"$work/err"; then echo "a payment address without an amount was paid"; exit 1; fi
grep -q "names no amount" "$work/err"
expect_in "asked Smith for an invoice" "$PURSE" chips invoice --profile bob --ask Smith --memo "Table 4"
expect_in "wrote" "$PURSE" chips tally agreement 1 --out "$work/agreement.html"
grep -q "<h1>" "$work/agreement.html"
# A second device of Alice: it reads, but does not sign with, or replace, a key it does not hold;
# the backup brings it; replacing is explicit.
PURSE_DATA_DIR="$work/data" "$PURSE" chips ticket --user alice --json > "$work/tablet.json"
expect_in "CHIP address: alice:" "$PURSE" chips connect --profile tablet "@$work/tablet.json"
expect_in "Baker" "$PURSE" chips tally list --profile tablet
if "$PURSE" chips pay --profile tablet Baker 0.1 2>"$work/err"; then echo "a device without the signing key paid"; exit 1; fi
grep -q "purse chips key import --profile tablet" "$work/err"
echo "a backup passphrase" | expect_in "stored" "$PURSE" chips key import --profile tablet "$signkey"
expect_in "L.good" "$PURSE" chips pay --profile tablet Baker 0.1 --memo "from the tablet"
if echo "no" | "$PURSE" chips key replace --profile tablet --new 2>/dev/null; then echo "the signing key was replaced unconfirmed"; exit 1; fi
# The connection key moves to another profile sealed with a passphrase; that profile logs in as Alice.
echo "a backup passphrase" | "$PURSE" chips key export --connection --profile tablet > "$work/connect.txt"
connect_link=$(head -1 "$work/connect.txt")
echo "a backup passphrase" | expect_in "stored: this profile logs in as alice" "$PURSE" chips key import --profile phone "$connect_link"
expect_in "state: connected" "$PURSE" chips status --profile phone

# A provider behind its own development CA (a TLS relay): the CLI trusts it only with --ca-file.
tls_port=$(free_port)
python3 scripts/lib/tls_relay.py "$tls_port" "$port" "$work/dev-ca.pem" 60 > "$work/tls.log" 2>&1 &
tls_relay=$!
for _ in $(seq 1 100); do grep -q ready "$work/tls.log" 2>/dev/null && break; sleep 0.1; done
CHIPS_HOST=localhost CHIPS_PORT="$tls_port" PURSE_DATA_DIR="$work/data" "$PURSE" chips ticket --user erin --name Ellis --json > "$work/erin.json"
if "$PURSE" chips connect --profile erin --secure "@$work/erin.json" 2>"$work/err"; then echo "an untrusted development CA was accepted"; exit 1; fi
CHIPS_HOST=localhost CHIPS_PORT="$tls_port" PURSE_DATA_DIR="$work/data" "$PURSE" chips ticket --user erin --json > "$work/erin.json"
expect_in "CHIP address: erin:" "$PURSE" chips connect --profile erin --secure --ca-file "$work/dev-ca.pem" "@$work/erin.json"
expect_in "state: connected" "$PURSE" chips status --profile erin --ca-file "$work/dev-ca.pem"
expect_in "wss://localhost:$tls_port" "$PURSE" chips status --profile erin --ca-file "$work/dev-ca.pem"
kill "$tls_relay" 2>/dev/null || true

# Graceful shutdown: SIGTERM stops the server cleanly (exit 0) within 30 s.
stop_server

# Secrets stay out of the server log, to its last line.
chips_token=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ticket"]["token"])' "$work/ticket.json")
# (The PIN as a number of its own: random hex ids may contain its digits.)
if grep -qE "correct horse|correct-horse-battery|(^|[^0-9a-fA-F])2580([^0-9a-fA-F]|$)|wallet password|cdt_|lnk_|$chips_token" "$work/serve.log"; then
  echo "secret in server log:"; grep -nE "correct horse|correct-horse-battery|(^|[^0-9a-fA-F])2580([^0-9a-fA-F]|$)|wallet password|cdt_|lnk_|$chips_token" "$work/serve.log" | head -3; exit 1
fi
echo "cli-smoke: 1 passed, 0 failed"
