#!/usr/bin/env bash
# make image: the otelcol-deltaq OCI image (deploy/image/Containerfile) with
# buildah, from a statically linked collector built outside it: no base image,
# no registry, no daemon.
#
#   scripts/image.sh [BINARY [ARCH [OCI_ARCHIVE]]]
#
# BINARY defaults to bin/otelcol-deltaq (make build links it statically), ARCH
# to amd64; the image is named otelcol-deltaq:TAG (TAG is the version of
# scripts/version.sh with "+" written "-", which an image tag cannot hold) in
# buildah's storage, and written to OCI_ARCHIVE (an oci-archive tar, for
# podman load or skopeo copy) when given. Environment: VERSION (default
# scripts/version.sh), BUILDAH_FLAGS (default --storage-driver vfs, which
# needs no kernel support).
set -euo pipefail
cd "$(dirname "$0")/.."

binary=${1:-bin/otelcol-deltaq}
arch=${2:-amd64}
archive=${3:-}
VERSION=${VERSION:-$(scripts/version.sh)}
read -r -a buildah_flags <<<"${BUILDAH_FLAGS:---storage-driver vfs}"
tag=otelcol-deltaq:${VERSION//+/-}

command -v buildah >/dev/null || { echo "image: buildah not found (Debian: apt-get install buildah)" >&2; exit 1; }
[ -x "$binary" ] || { echo "image: $binary missing: run make build" >&2; exit 1; }
certs=/etc/ssl/certs/ca-certificates.crt
[ -f "$certs" ] || { echo "image: $certs missing (Debian: apt-get install ca-certificates)" >&2; exit 1; }

ctx=$(mktemp -d "${TMPDIR:-/tmp}/otelcol-deltaq-image.XXXXXX")
trap 'rm -rf "$ctx"' EXIT
cp "$binary" "$ctx/otelcol-deltaq"
chmod 0755 "$ctx/otelcol-deltaq"
cp deploy/config.yaml "$ctx/config.yaml"
cp "$certs" "$ctx/ca-certificates.crt"
printf 'root:x:0:0:root:/:/sbin/nologin\notelcol:x:10001:10001:otelcol-deltaq:/:/sbin/nologin\n' >"$ctx/passwd"
printf 'root:x:0:\notelcol:x:10001:\n' >"$ctx/group"
chmod 0644 "$ctx"/config.yaml "$ctx"/ca-certificates.crt "$ctx"/passwd "$ctx"/group

buildah "${buildah_flags[@]}" bud --quiet --isolation chroot --platform "linux/$arch" \
  --build-arg VERSION="$VERSION" --build-arg REVISION="$(git rev-parse HEAD 2>/dev/null || echo unknown)" \
  -f deploy/image/Containerfile -t "$tag" "$ctx" >/dev/null
echo "image: $tag (linux/$arch)"
if [ -n "$archive" ]; then
  mkdir -p "$(dirname "$archive")"
  rm -f "$archive"
  buildah "${buildah_flags[@]}" push --quiet "$tag" "oci-archive:$archive:$tag"
  echo "image: $archive"
fi
