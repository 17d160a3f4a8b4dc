#!/bin/sh
# Builds the helm CLI from Go modules into .rig/bin/helm (no binary download).
# One package at a time (-p 1): the rig machines are small and often busy compiling Kubernetes.
set -eu
HELM_VERSION="${HELM_VERSION:-v3.22.0}"
root="$(cd "$(dirname "$0")/../.." && pwd)"
bin="$root/.rig/bin"
mkdir -p "$bin"
# The module version recorded in the binary says what it was built from.
if [ -x "$bin/helm" ] && go version -m "$bin/helm" 2>/dev/null | grep -Eq "^[[:space:]]+mod[[:space:]]+helm.sh/helm/v3[[:space:]]+$HELM_VERSION[[:space:]]"; then
  echo "helm $HELM_VERSION already in $bin"
  exit 0
fi
echo "building helm $HELM_VERSION into $bin (several minutes)"
GOBIN="$bin" GOFLAGS=-buildvcs=false go install -p 1 -ldflags "-s -w" \
  "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
"$bin/helm" version --short
