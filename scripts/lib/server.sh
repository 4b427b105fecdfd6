# Sourced by the scripts that need a free loopback port (`free_port`) or a live `purse serve`: start_server runs one on a free loopback
# port with a throwaway data directory, stop_server stops it with SIGTERM and gives it 30 s to
# exit. Nothing here waits without a bound.
#   start_server WORKDIR [extra serve args...]   sets $server (pid), $port, $url
#   stop_server                                  returns 1 unless the server exited cleanly in time
# With PURSE_LOG_ARCHIVE set, each server's log is kept there when it stops (CI greps them all for
# secrets); PURSE_SERVER_LOG_LEVEL sets the servers' level (default warning).
PURSE=${PURSE:-.build/debug/purse}

# A free port whose next port is free too: `purse serve` also listens one above its port, for
# MyCHIPs' websocket (CHIPS_WS_PORT). Both are below Linux's ephemeral range (32768–60999), so no
# outgoing connection takes either before the server binds them.
free_port() {
  python3 - <<'PY'
import random, socket
def free(port):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port)); return True
    except OSError:
        return False
    finally:
        s.close()
for _ in range(500):
    port = random.randrange(20000, 32700)
    if free(port) and free(port + 1):
        print(port); break
PY
}

start_server() {
  local work=$1
  shift
  port=${PORT:-$(free_port)}
  url="http://127.0.0.1:$port"
  server_log="$work/serve.log"
  "$PURSE" serve --port "$port" --data-dir "$work/data" --log-level "${PURSE_SERVER_LOG_LEVEL:-warning}" "$@" > "$server_log" 2>&1 &
  server=$!
  for _ in $(seq 1 100); do curl -sf --max-time 5 "$url/health" >/dev/null && return 0; sleep 0.1; done
  curl -sf --max-time 5 "$url/health" >/dev/null || { echo "purse serve did not answer /health"; cat "$server_log"; return 1; }
}

archive_log() {
  [ -n "${PURSE_LOG_ARCHIVE:-}" ] && [ -f "$1" ] || return 0
  mkdir -p "$PURSE_LOG_ARCHIVE"
  cp "$1" "$PURSE_LOG_ARCHIVE/$(date +%s%N)-$(basename "$1")"
}

stop_server() {
  [ -n "${server:-}" ] || return 0
  kill -TERM "$server" 2>/dev/null || true
  for _ in $(seq 1 300); do kill -0 "$server" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$server" 2>/dev/null; then
    echo "purse serve was still running 30 s after SIGTERM; its log ends:"; tail -50 "$server_log"
    kill -KILL "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; server=
    return 1
  fi
  local status=0
  wait "$server" 2>/dev/null || status=$?
  server=
  archive_log "$server_log"
  if [ "$status" != 0 ]; then echo "purse serve exited with status $status on SIGTERM; its log ends:"; tail -50 "$server_log"; return 1; fi
}
