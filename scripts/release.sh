#!/usr/bin/env bash
# make release: the release archives and images, stamped with one version
# (scripts/version.sh), into build/release:
#
#   deltaq_VERSION_OS_ARCH.tar.gz        otelcol-deltaq (the collector with the
#                                        deltaq components) and deltaq (the
#                                        command line), statically linked, with
#                                        config.yaml (deploy/config.yaml),
#                                        LICENSE, README.md and CHANGELOG.md
#                                        (their links to files the archive
#                                        does not hold point at the
#                                        repository: scripts/release-links.sh)
#   otelcol-deltaq_VERSION_linux_ARCH.oci.tar
#                                        the image (scripts/image.sh) as an
#                                        oci-archive, for the linux platforms
#   SHA256SUMS                           sha256sum -c checks them all
#
# Environment: RELEASE_PLATFORMS (default "linux/amd64 linux/arm64
# darwin/arm64"), RELEASE_DIR (default build/release; emptied first, so it
# must be new, empty or an earlier release's), RELEASE_IMAGES (0: no
# images), VERSION, GO, OCB (the Collector Builder command). The archives are
# reproducible: files sorted, owned by 0:0, dated at the commit, 0755 for the
# binaries and the directory and 0644 for the rest, whatever the builder's
# umask (0002 would make them group-writable; 0077 readable by their owner
# only, who is root when root unpacks them).
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
OCB=${OCB:-$GO run go.opentelemetry.io/collector/cmd/builder@v0.162.0}
VERSION=${VERSION:-$(scripts/version.sh)}
PLATFORMS=${RELEASE_PLATFORMS:-linux/amd64 linux/arm64 darwin/arm64}
OUT=${RELEASE_DIR:-build/release}
IMAGES=${RELEASE_IMAGES:-1}
root=$PWD
# The commit's time, when these sources are one of their repository's (as scripts/version.sh
# reads it).
epoch=
if [ "$(git rev-parse --show-toplevel 2>/dev/null)" = "$(pwd -P)" ]; then
  epoch=$(git log -1 --format=%ct 2>/dev/null || true)
fi
epoch=${epoch:-$(date +%s)}
# Where the documents' links to the repository's files point: the release's tag, or main
# for a development build (its revision may be pushed nowhere).
case $VERSION in
  *-*) ref=main ;;
  *) ref=v$VERSION ;;
esac
log() { echo "release: $*"; }

# Checked before anything is built: the images come after each platform's compilation.
if [ "$IMAGES" != 0 ] && [[ " $PLATFORMS " == *" linux/"* ]] && ! command -v buildah >/dev/null; then
  echo "release: buildah not found, which builds the images (Debian: apt-get install buildah); RELEASE_IMAGES=0 makes the archives alone" >&2
  exit 1
fi

# The directory is emptied first: refuse one that holds anything but what this script writes
# there, so that a RELEASE_DIR naming a directory of other files (RELEASE_DIR=$HOME) costs
# nothing.
if [ -e "$OUT" ]; then
  [ -d "$OUT" ] || { echo "release: RELEASE_DIR $OUT is not a directory" >&2; exit 1; }
  stray=$(find "$OUT" -mindepth 1 -maxdepth 1 ! -name SHA256SUMS ! -name 'deltaq_*.tar.gz' \
    ! -name 'otelcol-deltaq_*.oci.tar' ! -name stage ! -name otelcol-deltaq-src ! -name builder-config.yaml \
    ! -name builder.log -printf ' %f')
  [ -z "$stray" ] || {
    echo "release: $OUT holds files of no release (${stray:1:200}); set RELEASE_DIR to a new or empty directory" >&2
    exit 1
  }
fi
rm -rf "$OUT"
mkdir -p "$OUT/stage"
OUT=$(cd "$OUT" && pwd)
src=$OUT/otelcol-deltaq-src

# The collector's sources once, stamped with the version; compiled per platform.
sed -e "s|^  version: .*|  version: $VERSION|" \
  -e "s|^  output_path: .*|  output_path: $src|" \
  -e "s|^    path: \./$|    path: $root|" \
  -e "s|=> \.\./\.\./sdk/deltaqstart|=> $root/sdk/deltaqstart|" \
  builder-config.yaml >"$OUT/builder-config.yaml"
log "collector sources, version $VERSION"
$OCB --config "$OUT/builder-config.yaml" --skip-compilation >"$OUT/builder.log" 2>&1 ||
  { tail -20 "$OUT/builder.log" >&2; exit 1; }

sums=()
for platform in $PLATFORMS; do
  os=${platform%/*} arch=${platform#*/}
  name=deltaq_${VERSION}_${os}_${arch}
  stage=$OUT/stage/$name
  mkdir -p "$stage"
  log "$name"
  (cd "$src" && CGO_ENABLED=0 GOOS=$os GOARCH=$arch $GO build -trimpath -ldflags='-s -w' -o "$stage/otelcol-deltaq" .)
  CGO_ENABLED=0 GOOS=$os GOARCH=$arch $GO build -trimpath -ldflags="-s -w -X main.version=$VERSION" \
    -o "$stage/deltaq" ./cmd/deltaq
  cp LICENSE README.md CHANGELOG.md "$stage/"
  cp deploy/config.yaml "$stage/config.yaml"
  scripts/release-links.sh "$stage" "$ref"
  tar --sort=name --owner=0 --group=0 --numeric-owner --mode=u=rwX,go=rX --mtime="@$epoch" -C "$OUT/stage" -cf - "$name" |
    gzip -n -9 >"$OUT/$name.tar.gz"
  sums+=("$name.tar.gz")
  if [ "$os" = linux ] && [ "$IMAGES" != 0 ]; then
    image=otelcol-deltaq_${VERSION}_linux_${arch}.oci.tar
    VERSION=$VERSION scripts/image.sh "$stage/otelcol-deltaq" "$arch" "$OUT/$image"
    sums+=("$image")
  fi
done
(cd "$OUT" && sha256sum "${sums[@]}" >SHA256SUMS)
# The directory holds the artefacts and SHA256SUMS alone, ready to publish: the builder's
# configuration and log name this machine's paths.
rm -rf "$OUT/stage" "$src" "$OUT/builder-config.yaml" "$OUT/builder.log"
log "$OUT/SHA256SUMS:"
sed 's/^/  /' "$OUT/SHA256SUMS"
