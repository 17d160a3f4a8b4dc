#!/usr/bin/env bash
# Stops the throwaway PostgreSQL started by hack/postgres/start.sh and deletes its data.
# Uses the same $WAVE_PG_STATE (default .wave/pg). Doing nothing is success.
set -euo pipefail

repo="$(cd "$(dirname "$0")/../.." && pwd)"
state="${WAVE_PG_STATE:-$repo/.wave/pg}"
[[ -f "$state/datadir" ]] || exit 0
dir="$(cat "$state/datadir")"

bindir="${PG_BIN:-}"
if [[ -z "$bindir" ]]; then
  bindir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
fi
if [[ "$(id -u)" -eq 0 ]]; then
  as_pg() { runuser -u postgres -- "$@"; }
else
  as_pg() { "$@"; }
fi
if [[ -n "$bindir" && -d "$dir/data" ]]; then
  as_pg "$bindir/pg_ctl" stop -D "$dir/data" -m fast -w -t 60 >/dev/null 2>&1 || true
fi
# Only ever delete a directory this script family created.
case "$dir" in
  /tmp/wave-pg.*) rm -rf -- "$dir" ;;
  *) echo "postgres: not deleting unexpected data dir $dir" >&2 ;;
esac
rm -f -- "$state/datadir" "$state/url"
echo "postgres: stopped" >&2
