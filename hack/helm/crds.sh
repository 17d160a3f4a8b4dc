#!/bin/sh
# Copies Wave's CRDs from their one source, deploy/helm/wave-crds/templates/, into the wave
# chart's crds/ folder (installed by `helm install`, never upgraded by Helm: the wave-crds chart
# does that, docs/install-eks.md). test/unit/helm-chart.test.ts fails when the two differ.
set -eu
root="$(cd "$(dirname "$0")/../.." && pwd)"
src="$root/deploy/helm/wave-crds/templates"
dst="$root/deploy/helm/wave/crds"
mkdir -p "$dst"
rm -f "$dst"/*.yaml
cp "$src"/*.yaml "$dst"/
echo "copied $(ls "$src"/*.yaml | wc -l) CRDs into $dst"
