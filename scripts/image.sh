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
# buildah's storage; or, with OCI_ARCHIVE, written there alone (an oci-archive
# tar, for podman load or skopeo copy), built in a storage of its own that is
# removed after: make release, two images a run, leaves none in buildah's
# storage, where every run's would stay (the vfs driver copies each whole).
# Environment: VERSION (default
# scripts/version.sh), BUILDAH_FLAGS (default --storage-driver vfs, which
# needs no kernel support), IMAGE_CA_CERTS (the CA bundle the image holds for
# its exporters' TLS; default the system's, wherever its distribution keeps
# it).
set -euo pipefail
cd "$(dirname "$0")/.."

binary=${1:-bin/otelcol-deltaq}
arch=${2:-amd64}
archive=${3:-}
VERSION=${VERSION:-$(scripts/version.sh)}
read -r -a buildah_flags <<<"${BUILDAH_FLAGS:---storage-driver vfs}"
tag=otelcol-deltaq:${VERSION//+/-}
# The commit, when these sources are one of their repository's (as scripts/version.sh reads it).
revision=unknown
if [ "$(git rev-parse --show-toplevel 2>/dev/null)" = "$(pwd -P)" ]; then
  revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
fi

command -v buildah >/dev/null || { echo "image: buildah not found (Debian: apt-get install buildah)" >&2; exit 1; }
[ -x "$binary" ] || { echo "image: $binary missing: run make build" >&2; exit 1; }
# The system's CA bundle, where each distribution keeps it (Go's crypto/x509 list, Debian's
# first: the image holds it where Go looks first), or IMAGE_CA_CERTS.
certs=${IMAGE_CA_CERTS:-}
if [ -z "$certs" ]; then
  for f in /etc/ssl/certs/ca-certificates.crt /etc/pki/tls/certs/ca-bundle.crt /etc/ssl/ca-bundle.pem \
    /etc/pki/tls/cacert.pem /etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem /etc/ssl/cert.pem; do
    [ -f "$f" ] && { certs=$f; break; }
  done
fi
[ -n "$certs" ] && [ -f "$certs" ] || {
  echo "image: no CA certificates${certs:+ at $certs}: install the ca-certificates package, or set IMAGE_CA_CERTS to a PEM bundle" >&2
  exit 1
}

ctx=$(mktemp -d "${TMPDIR:-/tmp}/otelcol-deltaq-image.XXXXXX")
store=
trap 'rm -rf "$ctx"' EXIT
if [ -n "$archive" ]; then
  # Not in the build context, which buildah reads. Emptied by buildah first: a rootless
  # buildah's files may belong to another user of its namespace.
  store=$(mktemp -d "${TMPDIR:-/tmp}/otelcol-deltaq-storage.XXXXXX")
  buildah_flags+=(--root "$store/root" --runroot "$store/run")
  trap 'rm -rf "$ctx"; buildah "${buildah_flags[@]}" rmi --all --force >/dev/null 2>&1; rm -rf "$store"' EXIT
fi
cp "$binary" "$ctx/otelcol-deltaq"
chmod 0755 "$ctx/otelcol-deltaq"
cp deploy/config.yaml "$ctx/config.yaml"
cp "$certs" "$ctx/ca-certificates.crt"
printf 'root:x:0:0:root:/:/sbin/nologin\notelcol:x:10001:10001:otelcol-deltaq:/:/sbin/nologin\n' >"$ctx/passwd"
printf 'root:x:0:\notelcol:x:10001:\n' >"$ctx/group"
chmod 0644 "$ctx"/config.yaml "$ctx"/ca-certificates.crt "$ctx"/passwd "$ctx"/group

buildah "${buildah_flags[@]}" bud --quiet --isolation chroot --platform "linux/$arch" \
  --build-arg VERSION="$VERSION" --build-arg REVISION="$revision" \
  -f deploy/image/Containerfile -t "$tag" "$ctx" >/dev/null
if [ -z "$archive" ]; then
  echo "image: $tag (linux/$arch)"
  exit 0
fi
mkdir -p "$(dirname "$archive")"
rm -f "$archive"
buildah "${buildah_flags[@]}" push --quiet "$tag" "oci-archive:$archive:$tag"
echo "image: $archive ($tag, linux/$arch)"
