#!/usr/bin/env bash
# Certificate pinning against a real man in the middle. Two mitmproxy reverse proxies stand in
# front of `purse serve` (URL): one presents our own CA's certificate (the legitimate TLS front),
# the other mitmproxy's own CA, which this script makes the system trust. The pinned SDK (the
# CLI with --pin our CA's key) works through the first and refuses the second without sending a
# request; an unpinned client goes through the second, as any client trusting the system would.
# Usage: pinning_mitmproxy.sh URL PURSE
set -euo pipefail
url=$1
purse=$2
upstream=${url#http://}
work=$(mktemp -d /tmp/purse-pin.XXXXXX)
system_ca=/usr/local/share/ca-certificates/purse-ci-mitmproxy.crt
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  if [ -f "$system_ca" ]; then rm -f "$system_ca"; update-ca-certificates --fresh > /dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }

# Our CA and a certificate for 127.0.0.1.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$work/ca.key" -out "$work/ca.pem" -days 2 \
  -subj "/CN=Purse pinning CI CA" -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$work/leaf.key" -out "$work/leaf.csr" -subj "/CN=127.0.0.1" 2>/dev/null
printf "subjectAltName=IP:127.0.0.1\nbasicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n" > "$work/leaf.ext"
openssl x509 -req -in "$work/leaf.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" -CAcreateserial -out "$work/leaf.pem" -days 2 -extfile "$work/leaf.ext" 2>/dev/null
cat "$work/leaf.key" "$work/leaf.pem" "$work/ca.pem" > "$work/legit.pem"
pin=$(openssl x509 -in "$work/ca.pem" -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64)

legit=$(free_port)
mitm=$(free_port)
mitmdump --mode "reverse:http://$upstream@$legit" --set confdir="$work/legit-conf" --certs "*=$work/legit.pem" --set flow_detail=1 > "$work/legit.log" 2>&1 &
pids+=($!)
mitmdump --mode "reverse:http://$upstream@$mitm" --set confdir="$work/mitm-conf" --set flow_detail=1 > "$work/mitm.log" 2>&1 &
pids+=($!)
for port in "$legit" "$mitm"; do
  for _ in $(seq 1 100); do (echo > "/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
done
for _ in $(seq 1 50); do [ -s "$work/mitm-conf/mitmproxy-ca-cert.pem" ] && break; sleep 0.1; done
# The system trusts mitmproxy's CA, as a device with an installed profile would.
cp "$work/mitm-conf/mitmproxy-ca-cert.pem" "$system_ca"
update-ca-certificates > /dev/null 2>&1

checks=0
export PURSE_HOME="$work/home"
# 1. Pinned, through the legitimate front: works.
"$purse" cutie inbox --server "https://127.0.0.1:$legit" --pin "$pin" --ca-file "$work/ca.pem" --profile pinned > "$work/out" 2>&1 \
  || { cat "$work/out"; echo "pinned client refused the legitimate chain"; exit 1; }
grep -qE "GET [^ ]*/v1/conversations" "$work/legit.log" || { echo "the legitimate front saw no request"; exit 1; }
checks=$((checks + 1))
# 2. Pinned, through mitmproxy (whose CA the system trusts): refused, and no request reaches it.
if "$purse" cutie inbox --server "https://127.0.0.1:$mitm" --pin "$pin" --ca-file "$work/ca.pem" --profile pinned > "$work/out" 2>&1; then
  echo "the pinned client went through the man in the middle"; exit 1
fi
grep -q "certificate pinning" "$work/out" || { head -40 "$work/out"; echo "no pinning error"; exit 1; }
sleep 0.3
if grep -q "/v1/" "$work/mitm.log"; then echo "a request reached the man in the middle"; exit 1; fi
checks=$((checks + 1))
# 3. The same pins with Google Trust Services' roots (the SDK's default): refused too.
if "$purse" cutie inbox --server "https://127.0.0.1:$mitm" --pin gts --profile pinned-gts > "$work/out" 2>&1; then
  echo "the default pins went through the man in the middle"; exit 1
fi
grep -q "certificate pinning" "$work/out" || { head -40 "$work/out"; echo "no pinning error"; exit 1; }
checks=$((checks + 1))
# 4. Unpinned clients trust the system, so the man in the middle reads their requests.
"$purse" cutie inbox --server "https://127.0.0.1:$mitm" --profile unpinned > "$work/out" 2>&1 || { cat "$work/out"; echo "the unpinned client failed"; exit 1; }
curl -sf "https://127.0.0.1:$mitm/health" > /dev/null
sleep 0.3
grep -qE "GET [^ ]*/v1/conversations" "$work/mitm.log" || { echo "the unpinned request did not pass the man in the middle"; exit 1; }
checks=$((checks + 1))
echo "pinning_mitmproxy: $checks checks passed (pinned: legitimate chain accepted, mitmproxy refused with nothing sent; unpinned: intercepted)"
