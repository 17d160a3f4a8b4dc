#!/usr/bin/env bash
# Starts a throwaway PostgreSQL server for tests and prints its connection URL (the only thing on
# stdout), e.g.  export WAVE_TEST_POSTGRES_URL="$(bash hack/postgres/start.sh)"
#
# - Needs Debian's server binaries: apt-get install -y postgresql (or PG_BIN=/path/to/bin).
# - Data lives in a fresh /tmp/wave-pg.* directory; fsync is off (throwaway, fast).
# - Listens on 127.0.0.1 only, on a free port, with a random password (scram-sha-256).
# - As root the server runs as the `postgres` user (PostgreSQL refuses to run as root).
# - State (data dir, URL) is kept in $WAVE_PG_STATE (default .wave/pg); running this again while
#   the server is up prints the same URL. hack/postgres/stop.sh stops it and deletes the data.
# Exit codes: 0 started (or already running), 3 binaries missing, 1 anything else.
set -euo pipefail

repo="$(cd "$(dirname "$0")/../.." && pwd)"
state="${WAVE_PG_STATE:-$repo/.wave/pg}"
log() { echo "postgres: $*" >&2; }

bindir="${PG_BIN:-}"
if [[ -z "$bindir" ]]; then
  bindir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
fi
if [[ -z "$bindir" || ! -x "$bindir/initdb" || ! -x "$bindir/pg_ctl" ]]; then
  log "server binaries not found (apt-get install -y postgresql, or set PG_BIN)"
  exit 3
fi

if [[ "$(id -u)" -eq 0 ]]; then
  id postgres >/dev/null 2>&1 || { log "user postgres missing (the Debian package creates it)"; exit 3; }
  as_pg() { runuser -u postgres -- "$@"; }
else
  as_pg() { "$@"; }
fi

mkdir -p "$state"
if [[ -f "$state/url" && -f "$state/datadir" ]]; then
  old="$(cat "$state/datadir")"
  if [[ -d "$old/data" ]] && as_pg "$bindir/pg_ctl" status -D "$old/data" >/dev/null 2>&1; then
    cat "$state/url"
    exit 0
  fi
  log "removing stale state from a server that is no longer running"
  rm -rf -- "$old"
  rm -f -- "$state/url" "$state/datadir"
fi

dir="$(mktemp -d /tmp/wave-pg.XXXXXX)"
password="$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
printf '%s\n' "$password" >"$dir/pw"
chmod 600 "$dir/pw"
if [[ "$(id -u)" -eq 0 ]]; then chown -R postgres: "$dir"; fi
cleanup_on_error() {
  log "failed; server log:"
  tail -n 20 "$dir/log" >&2 2>/dev/null || true
  as_pg "$bindir/pg_ctl" stop -D "$dir/data" -m immediate >/dev/null 2>&1 || true
  rm -rf -- "$dir"
}
trap cleanup_on_error ERR

as_pg "$bindir/initdb" -D "$dir/data" -U postgres --auth=scram-sha-256 --pwfile="$dir/pw" -E UTF8 \
  --locale=C --no-sync >"$dir/initdb.log" 2>&1

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
started=""
for _ in $(seq 1 20); do
  port=$((20000 + RANDOM % 30000))
  port_busy "$port" && continue
  if as_pg "$bindir/pg_ctl" start -D "$dir/data" -l "$dir/log" -w -t 60 -o \
    "-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories=$dir -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=50" \
    >/dev/null; then
    started=1
    break
  fi
  log "port $port did not work; trying another"
done
[[ -n "$started" ]] || { log "could not start the server"; false; }

as_pg env PGPASSWORD="$password" "$bindir/createdb" -h 127.0.0.1 -p "$port" -U postgres wave_test
trap - ERR

url="postgres://postgres:$password@127.0.0.1:$port/wave_test"
printf '%s\n' "$dir" >"$state/datadir"
printf '%s\n' "$url" >"$state/url"
chmod 600 "$state/url"
log "started on 127.0.0.1:$port (data in $dir)"
printf '%s\n' "$url"
