#!/bin/sh
# `npm run release`: Wave's release artifacts in dist/release/<version>/ (version: package.json's):
#   wave-<version>.tgz                    the Helm chart (`helm package`, version = appVersion)
#   wave-<version>-npm.tgz                `wave` as an npm package of compiled JavaScript
#                                         (hack/pack/pack.sh): `npm i -g ./wave-<version>-npm.tgz`
#   wave-<version>-linux-<arch>.tar.gz    the image (`podman save`, docker-archive, gzip -n); load
#                                         with `docker load -i` or `gunzip -c … | podman load`
#                                         (podman 4.3's `load -i` reads no gzip)
#   wave-<version>.cdx.json               CycloneDX SBOM of the production dependencies
#                                         (hack/release/sbom.sh: its pinned generator is installed
#                                         on demand from hack/release/package-lock.json)
#   SHA256SUMS                            `sha256sum -c SHA256SUMS` checks all of the above
# linux/arm64 is built beside the host's architecture only when the kernel runs arm64 binaries
# (binfmt_misc with qemu-aarch64 registered); otherwise it is skipped with the reason.
#   --dry-run   print the plan (version, artifacts, architectures) and check the versions; build nothing
#   WAVE_RELEASE_DIR  output root (default dist/release)
#   WAVE_RELEASE_ALLOW_DIRTY=1  release from a work tree with uncommitted changes (refused otherwise:
#                     the image's revision label would name a commit that is not what was built)
set -eu
cd "$(dirname "$0")/../.."

dry_run=false
for arg in "$@"; do
  case "$arg" in
    --dry-run) dry_run=true ;;
    *) echo "release: unknown argument $arg (usage: npm run release [-- --dry-run])" >&2; exit 2 ;;
  esac
done

version="$(node -p 'require("./package.json").version')"
# One version everywhere: the chart's version and appVersion are package.json's.
chart_version="$(awk '$1 == "version:" { print $2; exit }' deploy/helm/wave/Chart.yaml | tr -d '"')"
app_version="$(awk '$1 == "appVersion:" { print $2; exit }' deploy/helm/wave/Chart.yaml | tr -d '"')"
if [ "$chart_version" != "$version" ] || [ "$app_version" != "$version" ]; then
  echo "release: deploy/helm/wave/Chart.yaml has version $chart_version, appVersion $app_version; package.json has $version: make them equal" >&2
  exit 1
fi
case "$version" in
  *[!0-9A-Za-z.+-]* | "") echo "release: package.json version '$version' is not a semantic version" >&2; exit 1 ;;
esac

host_arch="$(uname -m)"
case "$host_arch" in
  x86_64) host_arch=amd64 ;;
  aarch64) host_arch=arm64 ;;
esac
archs="$host_arch"
arm64_note=""
if [ "$host_arch" != arm64 ]; then
  if [ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] && grep -q '^enabled' /proc/sys/fs/binfmt_misc/qemu-aarch64 2>/dev/null; then
    archs="$archs arm64"
  elif [ ! -e /proc/sys/fs/binfmt_misc/register ]; then
    arm64_note="linux/arm64 skipped: binfmt_misc is not mounted in this kernel namespace (/proc/sys/fs/binfmt_misc/register missing), so qemu-user-static cannot run arm64 build steps"
  else
    arm64_note="linux/arm64 skipped: no qemu-aarch64 binfmt handler registered (apt-get install qemu-user-static binfmt-support)"
  fi
fi

root="${WAVE_RELEASE_DIR:-dist/release}"
out="$root/$version"
artifacts="wave-$version.tgz wave-$version-npm.tgz"
for a in $archs; do artifacts="$artifacts wave-$version-linux-$a.tar.gz"; done
artifacts="$artifacts wave-$version.cdx.json SHA256SUMS"

echo "release: version $version (chart version $chart_version, appVersion $app_version)"
echo "release: into $out"
for a in $artifacts; do echo "release: artifact $a"; done
echo "release: platforms $(for a in $archs; do printf 'linux/%s ' "$a"; done)"
[ -z "$arm64_note" ] || echo "release: $arm64_note"
if [ "$dry_run" = true ]; then
  exit 0
fi

# The image's revision label is HEAD's commit: refuse to label uncommitted changes with it.
if [ -n "$(git status --porcelain 2>/dev/null)" ] && [ "${WAVE_RELEASE_ALLOW_DIRTY:-}" != 1 ]; then
  echo "release: the work tree has uncommitted changes (git status); commit them or set WAVE_RELEASE_ALLOW_DIRTY=1" >&2
  exit 1
fi

helm="${HELM:-}"
[ -n "$helm" ] || { [ -x .rig/bin/helm ] && helm=.rig/bin/helm; } || helm="$(command -v helm || true)"
[ -n "$helm" ] || { echo "release: helm missing: npm run helm:build" >&2; exit 1; }

# The SBOM generator is not in the root install (hack/release/sbom.sh): fetch it before the long
# image build, so a missing registry fails the release early.
sh hack/release/sbom.sh --install-only

rm -rf "$out"
mkdir -p "$out"

"$helm" package deploy/helm/wave --version "$version" --app-version "$version" --destination "$out" >/dev/null
npm_tgz="$(sh hack/pack/pack.sh | tail -n 1)"
cp "$npm_tgz" "$out/wave-$version-npm.tgz"

for a in $archs; do
  image="localhost/wave:$version"
  [ "$a" = "$host_arch" ] || image="localhost/wave:$version-$a"
  platform=""
  [ "$a" = "$host_arch" ] || platform="--platform linux/$a"
  WAVE_IMAGE="$image" WAVE_IMAGE_BUILD_FLAGS="$platform ${WAVE_IMAGE_BUILD_FLAGS:-}" sh hack/image/build.sh
  podman save --format docker-archive -o "$out/wave-$version-linux-$a.tar" "$image"
  gzip -n "$out/wave-$version-linux-$a.tar"
done

sh hack/release/sbom.sh "$out/wave-$version.cdx.json"

(cd "$out" && sha256sum $(ls | grep -v '^SHA256SUMS$') >SHA256SUMS)
echo "release: done"
(cd "$out" && ls -l)
