# Sourced by the scripts that need a throwaway PostgreSQL server. Nothing here waits without a bound.
#   start_postgres [server settings...]   installs Debian's server when missing and starts a cluster
#                                         in a temporary directory on a free 127.0.0.1 port; sets
#                                         $PGBIN, $PGDATA, $PGPORT and $postgres_url (PGBIN and
#                                         PGDATA exported; the server's options are kept in
#                                         $PGDATA/purse-start-options for a restart after a crash)
#   stop_postgres                         stops it and removes its directory
# Settings are postgres `-c` options (`shared_buffers=1GB`). Runs the server as the `postgres` user.
start_postgres() {
  export DEBIAN_FRONTEND=noninteractive
  if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    apt-get update -qq
    apt-get install -y -qq postgresql >/dev/null
  fi
  PGBIN=$(dirname "$(ls /usr/lib/postgresql/*/bin/initdb | sort -V | tail -1)")
  PGDATA=$(mktemp -d /tmp/purse-pg.XXXXXX)
  PGPORT=${PURSE_CI_PG_PORT:-$(free_port)}
  chown postgres "$PGDATA"
  runuser -u postgres -- "$PGBIN/initdb" -D "$PGDATA" --auth=trust -U postgres >/dev/null
  local options="-p $PGPORT -k $PGDATA -c listen_addresses=127.0.0.1 -c max_connections=300"
  local setting
  for setting in "$@"; do options="$options -c $setting"; done
  printf '%s\n' "$options" > "$PGDATA/purse-start-options"
  export PGBIN PGDATA
  if ! timeout 60 runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGDATA" -o "$options" -l "$PGDATA/log" -w -t 50 start >/dev/null; then
    cat "$PGDATA/log"; return 1
  fi
  postgres_url="postgres://postgres@127.0.0.1:$PGPORT/postgres"
}

stop_postgres() {
  [ -n "${PGDATA:-}" ] || return 0
  timeout 60 runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGDATA" -m fast -t 50 stop >/dev/null 2>&1 || true
  rm -rf "$PGDATA"
  PGDATA=
}
