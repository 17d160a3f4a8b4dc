#!/bin/sh
# The release's CycloneDX SBOM of the production dependencies: sh hack/release/sbom.sh <output.cdx.json>
# (release.sh calls it; it runs alone too). The generator is pinned in hack/release/package.json
# with its own lockfile, not in the root install: its optional libxmljs2 (XML validation; the
# release writes JSON) and the 135 packages only it needs were most of the 157 of the root's 579
# packages, and libxml2's compile took minutes of a fresh `npm install` (issue 44). It is installed
# here on demand without optional dependencies or install scripts, again only when the lockfile
# changed.
#   --install-only   install the generator (release.sh does this before the long image build)
set -eu
cd "$(dirname "$0")/../.."

tools=hack/release
stamp="$tools/node_modules/.wave-release-lock"
if ! cmp -s "$tools/package-lock.json" "$stamp"; then
  echo "release: installing the SBOM generator ($tools/package-lock.json)" >&2
  npm ci --prefix "$tools" --omit=optional --ignore-scripts --no-audit --no-fund >&2
  cp "$tools/package-lock.json" "$stamp"
fi
[ "${1:-}" != --install-only ] || exit 0
[ $# -eq 1 ] || { echo "usage: sh hack/release/sbom.sh <output.cdx.json> | --install-only" >&2; exit 2; }

"$tools/node_modules/.bin/cyclonedx-npm" --omit dev --output-format JSON --output-reproducible \
  --output-file "$1" >/dev/null
