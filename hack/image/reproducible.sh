#!/bin/sh
# `npm run image:reproducible`: builds Wave's image twice from scratch (no layer cache, same base,
# same SOURCE_DATE_EPOCH) and compares the two builds layer by layer. Exit 0 when every layer
# digest (and so the image's config digest) is equal; otherwise lists the layers that differ and
# the files that differ in the first of them.
#   WAVE_IMAGE_BASE   the base to build on (default: what hack/image/build.sh picks)
set -eu
cd "$(dirname "$0")/../.."

epoch="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}"
export SOURCE_DATE_EPOCH="$epoch"
for n in 1 2; do
  echo "image reproducible: build $n of 2 (no cache, SOURCE_DATE_EPOCH=$epoch)" >&2
  WAVE_IMAGE="localhost/wave-repro-$n:check" WAVE_IMAGE_BUILD_FLAGS="--no-cache" sh hack/image/build.sh >&2
done

layers() { podman image inspect --format '{{range .RootFS.Layers}}{{println .}}{{end}}' "localhost/wave-repro-$1:check" | grep .; }
layers 1 >/tmp/wave-repro-1.layers
layers 2 >/tmp/wave-repro-2.layers
id1="$(podman image inspect --format '{{.Id}}' localhost/wave-repro-1:check)"
id2="$(podman image inspect --format '{{.Id}}' localhost/wave-repro-2:check)"
total="$(grep -c . /tmp/wave-repro-1.layers)"
same="$(paste /tmp/wave-repro-1.layers /tmp/wave-repro-2.layers | awk '$1 == $2' | grep -c . || true)"
echo "image reproducible: $same of $total layers identical; image id ${id1%"${id1#????????????}"} vs ${id2%"${id2#????????????}"}"
status=0
if [ "$same" != "$total" ] || [ "$id1" != "$id2" ]; then
  status=1
  paste /tmp/wave-repro-1.layers /tmp/wave-repro-2.layers | awk '$1 != $2 { print "  layer " NR ": " $1 " vs " $2 }'
  # The files behind the first differing layer: a listing of each image's filesystem, compared.
  for n in 1 2; do
    c="$(podman create "localhost/wave-repro-$n:check")"
    podman export "$c" | tar -tv --full-time 2>/dev/null | sort -k6 >"/tmp/wave-repro-$n.files"
    podman rm "$c" >/dev/null
  done
  echo "image reproducible: files that differ (first 20):"
  diff /tmp/wave-repro-1.files /tmp/wave-repro-2.files | head -n 20 || true
fi
podman rmi localhost/wave-repro-1:check localhost/wave-repro-1:latest localhost/wave-repro-2:check localhost/wave-repro-2:latest >/dev/null 2>&1 || true
exit "$status"
