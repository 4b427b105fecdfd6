#!/usr/bin/env bash
# Purse as it runs in production, on one machine: Debian's PostgreSQL, N stateless `purse serve`
# replicas on it (the same secrets, each on its own loopback port), and nginx in front —
# round-robin, websocket upgrades passed through. Then runs a command against nginx:
#
#   scripts/cluster.sh [-n REPLICAS] COMMAND...   '$URL' in the arguments is nginx's URL; the
#                                                 command also gets CLUSTER_URL, DATABASE_URL,
#                                                 PURSE_DATA_DIR, CHIPS_HOST/CHIPS_PORT and
#                                                 CLUSTER_PIDS and CLUSTER_PORTS (the replicas' pids and ports)
#
# Everything listens on 127.0.0.1 and is removed afterwards; every wait is bounded.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/server.sh
source scripts/lib/postgres.sh

replicas=3
if [ "${1:-}" = "-n" ]; then replicas=$2; shift 2; fi
[ "$#" -gt 0 ] || { sed -n '2,12p' "$0"; exit 2; }

work=$(mktemp -d /tmp/purse-cluster.XXXXXX)
pids=()
# Replicas must stop within 30 s of SIGTERM (a request or job that never ends would hold one up):
# one that has to be killed fails the run.
cleanup() {
  local status=$? stuck=0
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
      echo "replica pid $pid was still running 30 s after SIGTERM"
      kill -KILL "$pid" 2>/dev/null || true
      stuck=1
    fi
  done
  [ -f "$work/nginx.pid" ] && kill -TERM "$(cat "$work/nginx.pid")" 2>/dev/null || true
  for log in "$work"/replica-*.log; do archive_log "$log"; done
  stop_postgres
  rm -rf "$work"
  if [ "$stuck" = 1 ] && [ "$status" = 0 ]; then exit 1; fi
}
trap cleanup EXIT

if ! command -v nginx >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq nginx-light >/dev/null 2>&1 || apt-get install -y -qq nginx >/dev/null
fi

start_postgres
export DATABASE_URL=$postgres_url PURSE_DATA_DIR=$work/data
proxy_port=$(free_port)
export CHIPS_HOST=127.0.0.1 CHIPS_PORT=$proxy_port PURSE_PUBLIC_URL="http://127.0.0.1:$proxy_port"
# Behind the proxy the websocket shares the proxy's port; clients find /clientinfo there too.
export CHIPS_WS_PORT=0
# The replicas believe nginx's X-Forwarded-For (the client's address for sign-in limits) and
# do not cap its connections as one peer's.
export PURSE_TRUSTED_PROXIES=127.0.0.1
# The load generators are many Cuti-E devices on one address.
export CUTIE_NEW_DEVICES_PER_ADDRESS_HOUR=${CUTIE_NEW_DEVICES_PER_ADDRESS_HOUR:-0}

# The first replica runs the migrations and makes the secrets; the others share both.
ports=()
for i in $(seq 1 "$replicas"); do
  port=$(free_port)
  "$PURSE" serve --port "$port" --data-dir "$work/data" --log-level "${PURSE_SERVER_LOG_LEVEL:-warning}" > "$work/replica-$i.log" 2>&1 &
  pids+=($!)
  ports+=("$port")
  ok=
  for _ in $(seq 1 300); do curl -sf --max-time 5 "http://127.0.0.1:$port/health" >/dev/null && { ok=1; break; }; sleep 0.1; done
  [ -n "$ok" ] || { echo "replica $i did not answer /health"; cat "$work/replica-$i.log"; exit 1; }
done

upstreams=""
for port in "${ports[@]}"; do upstreams="$upstreams    server 127.0.0.1:$port max_fails=0;"$'\n'; done
cat > "$work/nginx.conf" <<EOF
worker_processes 2;
pid $work/nginx.pid;
error_log $work/nginx-error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $work/client_body;
  proxy_temp_path $work/proxy;
  fastcgi_temp_path $work/fastcgi;
  uwsgi_temp_path $work/uwsgi;
  scgi_temp_path $work/scgi;
  # Plain requests reuse kept-alive connections to the replicas; a websocket upgrade takes a fresh
  # one (an upgrade is the first request of its connection).
  map \$http_upgrade \$connection_upgrade { default upgrade; '' ''; }
  map \$http_upgrade \$purse_pool { default purse_ws; '' purse; }
  upstream purse {
$upstreams    keepalive 64;
  }
  upstream purse_ws {
$upstreams  }
  server {
    listen 127.0.0.1:$proxy_port;
    client_max_body_size 2m;
    location / {
      proxy_pass http://\$purse_pool;
      proxy_http_version 1.1;
      proxy_set_header Host \$host:\$server_port;
      proxy_set_header Upgrade \$http_upgrade;
      proxy_set_header Connection \$connection_upgrade;
      proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
      proxy_read_timeout 300s;
      proxy_next_upstream error timeout;
    }
  }
}
EOF
nginx -c "$work/nginx.conf" -p "$work"
for _ in $(seq 1 100); do curl -sf --max-time 5 "http://127.0.0.1:$proxy_port/health" >/dev/null && break; sleep 0.1; done
curl -sf --max-time 5 "http://127.0.0.1:$proxy_port/health" >/dev/null || { echo "nginx did not answer"; cat "$work/nginx-error.log"; exit 1; }

export CLUSTER_URL="http://127.0.0.1:$proxy_port" CLUSTER_PIDS="${pids[*]}" CLUSTER_PORTS="${ports[*]}"
echo "cluster: $replicas replicas (${ports[*]}) on PostgreSQL $PGPORT behind nginx at $CLUSTER_URL"
args=()
for arg in "$@"; do args+=("${arg//\$URL/$CLUSTER_URL}"); done
status=0
"${args[@]}" || status=$?
if [ "$status" != 0 ]; then
  for i in $(seq 1 "$replicas"); do echo "--- replica $i log (tail)"; tail -20 "$work/replica-$i.log"; done
  echo "--- nginx error log (tail)"; tail -10 "$work/nginx-error.log"
fi
exit "$status"
