#!/bin/sh
# `npm test`'s tools from outside npm, built on demand from Go modules and cached by version in
# .rig/bin: helm (the chart's unit tests render it) and promtool (the alert rules' unit tests).
# Without them `npm test` on a fresh clone skipped those suites (issue 44). Cold, on 2 cores: helm
# takes several minutes, promtool longer; a rerun with the same versions is free. A missing Go
# toolchain fails here with what to do, not as skipped suites. PROMTOOL=<path> uses that promtool.
set -eu
cd "$(dirname "$0")/../.."

need=""
for t in helm promtool; do
  if [ "$t" = promtool ] && [ -n "${PROMTOOL:-}" ]; then
    [ -x "$PROMTOOL" ] || { echo "test: PROMTOOL=$PROMTOOL is not an executable" >&2; exit 1; }
    continue
  fi
  need="$need $t"
done
[ -n "$need" ] || exit 0

if ! command -v go >/dev/null 2>&1; then
  # Without Go, binaries already in .rig/bin are used as they are (their version cannot be read).
  missing=""
  for t in $need; do [ -x ".rig/bin/$t" ] || missing="$missing $t"; done
  [ -z "$missing" ] && exit 0
  echo "test:$missing missing from .rig/bin and no Go toolchain (go) to build it: install Go, then rerun" \
    "npm test (it builds them once: npm run helm:build, sh hack/prometheus/build.sh promtool)" >&2
  exit 1
fi
for t in $need; do
  case "$t" in
    helm) sh hack/helm/build.sh ;;
    promtool) sh hack/prometheus/build.sh promtool ;;
  esac
done
