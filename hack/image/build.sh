#!/bin/sh
# `npm run image:build`: Wave's image from the Dockerfile with podman (buildah underneath).
#   WAVE_IMAGE       the name to tag (default wave:<package version>, also tagged wave:latest)
#   WAVE_IMAGE_BASE  the Dockerfile's BASE; unset: the default `node:24-slim` when it is present
#                    or can be pulled, otherwise one made from Debian packages (hack/image/base.sh)
#   WAVE_IMAGE_BUILD_FLAGS  extra `podman build` flags (hack/image/reproducible.sh: --no-cache)
#   WAVE_IMAGE_SOURCE  the org.opencontainers.image.source label (default: git's origin remote URL)
# Runs with runc and explicit ulimits (crun and podman's default ulimits fail on some kernels'
# cgroup setups) and host networking (the build stages run `npm ci`). Layers are cached by podman:
# a rerun with unchanged inputs rebuilds nothing. Exit 3: no base image could be had.
set -eu
cd "$(dirname "$0")/../.."
command -v podman >/dev/null || { echo "image: podman missing (apt-get install podman buildah runc)" >&2; exit 1; }

version="$(node -p 'require("./package.json").version')"
image="${WAVE_IMAGE:-wave:$version}"
default_base=node:24-slim
base="${WAVE_IMAGE_BASE:-}"
if [ -z "$base" ]; then
  if podman image exists "$default_base" || timeout 60 podman pull -q "$default_base" >/dev/null 2>&1; then
    base="$default_base"
  else
    echo "image: $default_base cannot be pulled here; using a base made from Debian packages (hack/image/base.sh, cached)" >&2
    # Exit 3: no base to build on (a registry or mirror out of reach here), not a fault in Wave's
    # build — CI tells the two apart (.ci/run).
    base="$(sh hack/image/base.sh)" || { echo "image: no base image could be made (hack/image/base.sh failed)" >&2; exit 3; }
  fi
fi

# Behind a TLS-inspecting proxy the build's `npm ci` needs the machine's CA: passed as a build
# secret (mounted for that step only, in no layer). WAVE_IMAGE_BUILD_CA overrides.
ca="${WAVE_IMAGE_BUILD_CA:-$(npm config get cafile 2>/dev/null || true)}"
case "$ca" in null | undefined) ca="" ;; esac
[ -n "$ca" ] || ca="${NODE_EXTRA_CA_CERTS:-}"
secret=""
[ -n "$ca" ] && [ -s "$ca" ] && secret="--secret=id=npm-ca,src=$ca"

# One timestamp for every layer's files and the image's dates: same inputs, same layers.
epoch="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}"
# OCI labels (org.opencontainers.image.*) of this build, the static ones are in the Dockerfile: as
# --label, not build args (buildah's cache ignores build-arg values in a LABEL step).
revision="$(git rev-parse HEAD 2>/dev/null || echo unknown)"
created="$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)"
source_url="${WAVE_IMAGE_SOURCE:-$(git remote get-url origin 2>/dev/null || true)}"
start="$(date +%s)"
podman --runtime runc build \
  --network host --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 \
  --build-arg "BASE=$base" --timestamp "$epoch" $secret ${WAVE_IMAGE_BUILD_FLAGS:-} \
  --label "org.opencontainers.image.version=$version" \
  --label "org.opencontainers.image.revision=$revision" \
  --label "org.opencontainers.image.created=$created" \
  --label "org.opencontainers.image.source=$source_url" \
  --tag "$image" --tag "${image%:*}:latest" .
secs=$(($(date +%s) - start))
bytes="$(podman image inspect --format '{{.Size}}' "$image")"
echo "image: $image on $base built in ${secs}s, $((bytes / 1000000)) MB"
