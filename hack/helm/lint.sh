#!/bin/sh
# `helm lint` and `helm template` of deploy/helm/wave with default values and with external
# PostgreSQL values (deploy/helm/wave/ci/postgres-values.yaml). There is no cluster here, so the
# APIs the chart requires are declared with --api-versions (lint: checks.crds=false, since
# `helm lint` has no --api-versions); a missing API is also shown to fail clearly. A helm built with
# `go install` assumes Kubernetes v1.20 when templating, hence --kube-version (chart: >= 1.29).
set -eu
root="$(cd "$(dirname "$0")/../.." && pwd)"
helm="${HELM:-$root/.rig/bin/helm}"
chart="$root/deploy/helm/wave"
if [ ! -x "$helm" ]; then
  echo "helm not found at $helm: run npm run helm:build" >&2
  exit 1
fi
apis="--kube-version 1.33.0 --api-versions karpenter.sh/v1/NodePool --api-versions cert-manager.io/v1/Certificate --api-versions monitoring.coreos.com/v1/ServiceMonitor"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

for values in "" "$chart/ci/postgres-values.yaml"; do
  label="${values:+$(basename "$values")}"
  label="${label:-default values}"
  set -- --namespace wave
  [ -n "$values" ] && set -- "$@" -f "$values"
  echo "== helm lint ($label)"
  "$helm" lint --strict "$chart" "$@" --set checks.crds=false
  echo "== helm template ($label)"
  # shellcheck disable=SC2086
  "$helm" template wave "$chart" "$@" $apis --set serviceMonitor.enabled=true > "$out/manifest.yaml"
  echo "   $(grep -c '^kind:' "$out/manifest.yaml") objects"
done

echo "== helm lint deploy/helm/wave-crds (Wave's CRDs, their own chart)"
"$helm" lint --strict "$root/deploy/helm/wave-crds" --kube-version 1.33.0

echo "== without Karpenter's API the install must fail with a clear message"
if "$helm" template wave "$chart" --namespace wave --kube-version 1.33.0 --api-versions cert-manager.io/v1/Certificate > /dev/null 2> "$out/err"; then
  echo "expected a failure without karpenter.sh/v1" >&2
  exit 1
fi
grep -q "Wave needs Karpenter" "$out/err"
echo "   ok: $(grep -o 'Wave needs Karpenter[^:]*' "$out/err")"
