#!/bin/sh
# Builds Prometheus and promtool from Go modules into .rig/bin (no binary download), the way
# hack/helm/build.sh builds helm. Cached by version: the module version and build tags recorded
# in each binary say what it was built from, so a rerun with the same version is free.
# remove_all_sd drops every service-discovery plugin but file and http (Wave's tests scrape
# static targets), which cuts the build roughly in half; -p 1 because the machines are small.
#   sh hack/prometheus/build.sh [prometheus] [promtool]   the binaries to build (default both;
#   `npm test` builds promtool only, hack/test/tools.sh)
set -eu
PROMETHEUS_VERSION="${PROMETHEUS_VERSION:-v0.316.0}"
root="$(cd "$(dirname "$0")/../.." && pwd)"
bin="$root/.rig/bin"
mkdir -p "$bin"
built() {
  [ -x "$bin/$1" ] && go version -m "$bin/$1" 2>/dev/null |
    grep -Eq "^[[:space:]]+mod[[:space:]]+github.com/prometheus/prometheus[[:space:]]+$PROMETHEUS_VERSION[[:space:]]"
}
targets="${*:-prometheus promtool}"
todo=""
for t in $targets; do
  case "$t" in
    prometheus | promtool) built "$t" || todo="$todo github.com/prometheus/prometheus/cmd/$t@$PROMETHEUS_VERSION" ;;
    *) echo "usage: sh hack/prometheus/build.sh [prometheus] [promtool]" >&2; exit 2 ;;
  esac
done
if [ -z "$todo" ]; then
  echo "$targets $PROMETHEUS_VERSION already in $bin"
  exit 0
fi
echo "building$todo into $bin (cold: tens of minutes on 2 cores)"
start=$(date +%s)
# shellcheck disable=SC2086 # one word per module
GOBIN="$bin" GOFLAGS=-buildvcs=false go install -p "${GO_BUILD_PARALLELISM:-1}" -tags remove_all_sd -ldflags "-s -w" $todo
echo "built in $(($(date +%s) - start)) s"
for t in $targets; do "$bin/$t" --version | head -1; done
