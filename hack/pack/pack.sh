#!/bin/sh
# `npm run pack`: Wave as an npm package, dist/npm/wave-<version>.tgz, for `npm i -g` / `npx`.
# Node strips types only outside node_modules, so the package carries JavaScript: tsc emits bin/ and
# every src/ module bin/wave.ts reaches (imports rewritten .ts → .js, hack/pack/tsconfig.json), plus
# the non-TypeScript files src/ reads at run time (pricing table), the web UI bundle and a
# package.json of its own (hack/pack/manifest.ts: runtime dependencies only, no scripts).
#   WAVE_PACK_UI=skip  leave the UI bundle out (tests of the CLI; `wave core` then serves no UI)
set -eu
cd "$(dirname "$0")/../.."
out=dist/npm
stage="$out/package"
rm -rf "$stage"
mkdir -p "$stage"
npx --no-install tsc -p hack/pack/tsconfig.json --outDir "$stage"
# Only what the CLI's import graph holds: nothing of test/, bench/ or hack/ may be in it.
for d in test bench hack; do
  [ ! -e "$stage/$d" ] || { echo "pack: $d/ is imported by the CLI's modules: $(cd "$stage" && find "$d" -name '*.js' | head -3)" >&2; exit 1; }
done
find src -type f ! -name '*.ts' ! -path '*/testdata/*' ! -path '*/testing/*' -exec cp --parents {} "$stage" \;
if [ "${WAVE_PACK_UI:-}" != skip ]; then
  npm run --silent build:ui
  mkdir -p "$stage/ui"
  cp -r ui/dist "$stage/ui/dist"
fi
cp LICENSE README.md CHANGELOG.md "$stage"
node hack/pack/manifest.ts >"$stage/package.json"
tgz="$(cd "$stage" && npm pack --silent --pack-destination ..)"
echo "$out/$tgz"
