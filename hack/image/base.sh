#!/bin/sh
# Makes a Node.js 24 base image from Debian packages, for machines that cannot pull the Dockerfile's
# default base (`node:24-slim`) from a registry: `debootstrap --variant=minbase` of the release this
# machine runs, from the mirror its apt sources name, plus the Node.js binary of the `node`
# devDependency (the same version `npm test` runs) and npm from the npm registry. Trimmed the way
# slim images are (no docs, man pages, locales, apt lists). Prints the image's name on stdout.
#
# Cached: the tag carries the release, Node's and npm's versions and a hash of this script, so a
# rerun with the same inputs finds the image and returns at once. Files in the layer get one
# timestamp (SOURCE_DATE_EPOCH, default: this script's last commit) and a sorted, numeric-owner tar.
set -eu
cd "$(dirname "$0")/../.."

NPM_VERSION=11.19.1
node_bin=node_modules/node/bin/node
[ -x "$node_bin" ] || { echo "image base: $node_bin missing: run npm ci first" >&2; exit 1; }
command -v debootstrap >/dev/null || { echo "image base: debootstrap missing (apt-get install debootstrap)" >&2; exit 1; }

. /etc/os-release
suite="${VERSION_CODENAME:?/etc/os-release names no release}"
# The mirror this machine's apt already uses (deb822 sources first, then the one-line format).
mirror="$(awk '/^URIs:/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)"
[ -n "$mirror" ] || mirror="$(awk '$1 == "deb" && $3 == "'"$suite"'" { print $2; exit }' /etc/apt/sources.list 2>/dev/null || true)"
[ -n "$mirror" ] || { echo "image base: no Debian mirror found in this machine's apt sources" >&2; exit 1; }

node_version="$("$node_bin" --version)"
script_hash="$(sha256sum "$0" | cut -c1-12)"
tag="localhost/wave-base:node${node_version#v}-${suite}-${script_hash}"
if podman image exists "$tag"; then
  echo "$tag"
  exit 0
fi

epoch="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct -- "$0" 2>/dev/null || true)}"
[ -n "$epoch" ] || epoch=0
work="$(mktemp -d /var/tmp/wave-base.XXXXXX)"
trap 'rm -rf "$work"' EXIT
root="$work/rootfs"

echo "image base: debootstrap --variant=minbase $suite (this takes a minute or two)" >&2
debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$work/debootstrap.log" 2>&1 ||
  { tail -n 20 "$work/debootstrap.log" >&2; exit 1; }

# Node.js and npm where the official images put them.
install -m 0755 "$node_bin" "$root/usr/local/bin/node"
mkdir -p "$root/usr/local/lib/node_modules"
(cd "$work" && npm pack --silent "npm@$NPM_VERSION" >/dev/null)
tar -xzf "$work/npm-$NPM_VERSION.tgz" -C "$root/usr/local/lib/node_modules"
mv "$root/usr/local/lib/node_modules/package" "$root/usr/local/lib/node_modules/npm"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"

# Slim: what a container never reads.
rm -rf "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* \
  "$root"/usr/share/locale/* "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/* \
  "$root"/var/cache/debconf/*-old "$root"/var/log/* "$root"/tmp/* "$root"/var/tmp/*
: >"$root/etc/machine-id"
chmod 1777 "$root/tmp"

tar --sort=name --numeric-owner --mtime="@$epoch" --clamp-mtime \
  --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
  -C "$root" -cf "$work/rootfs.tar" .
podman import --quiet \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'CMD ["node"]' \
  "$work/rootfs.tar" "$tag" >/dev/null
echo "image base: built $tag" >&2
echo "$tag"
