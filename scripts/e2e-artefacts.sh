#!/usr/bin/env bash
# Copyright The deltaq-otel Authors
# SPDX-License-Identifier: Apache-2.0
#
# make e2e-artefacts: what a user installs without building, checked as a user
# would use it (about half a minute with warm caches):
#   1. make release for linux/amd64 (RELEASE_PLATFORMS), under umask 0002:
#      SHA256SUMS verifies every artefact; the archive holds exactly the two
#      binaries (0755), config.yaml, LICENSE, README.md and CHANGELOG.md
#      (0644), owned by 0:0; both binaries print the version of
#      scripts/version.sh; the collector accepts config.yaml (also with its
#      variables set but empty), deltaq checks it; every link of README.md and
#      CHANGELOG.md resolves, in the archive or in the repository; it leaves
#      no image in buildah's storage;
#   2. the image, loaded from the release's oci-archive into an empty buildah
#      storage (containers cannot start on this project's machines; buildah
#      run --isolation chroot runs the image's own binary in its own root):
#      non-root user, entrypoint, default configuration, exposed ports and
#      version label as built; the collector in it prints the version,
#      validates its default configuration, and, started with it (its
#      addresses moved to free loopback ports, its own metrics off), answers its health check and
#      accepts a server span over OTLP/HTTP, which its deltaq connector
#      counts; SIGTERM stops it.
set -euo pipefail
cd "$(dirname "$0")/.."

D=$PWD/build/e2e-artefacts
# Messages go to the script's standard output also from within wait_for,
# which silences the checks it runs.
exec 3>&1
log() { printf 'e2e-artefacts %(%H:%M:%S)T %s\n' -1 "$*" >&3; }
fail() {
  log "FAIL: $*"
  exit 1
}
for t in buildah curl sha256sum; do
  command -v "$t" >/dev/null || fail "$t missing (Debian: buildah curl coreutils; .ci/run installs them)"
done
rm -rf "$D"
mkdir -p "$D"
# shellcheck source=scripts/harness.sh
. scripts/harness.sh

VERSION=$(scripts/version.sh)
export VERSION

# --- 1. the release archive --------------------------------------------------------
# Under a umask that makes files group-writable: the archive's modes must not depend on it.
# buildah's storage is one of this run's, to see that the release leaves no image in it.
U=(--storage-driver vfs --root "$D/user-storage" --runroot "$D/user-run")
(umask 0002 && RELEASE_PLATFORMS=linux/amd64 RELEASE_DIR="$D/release" BUILDAH_FLAGS="${U[*]}" scripts/release.sh) \
  >"$D/release.log" 2>&1 || fail "make release: $(tail -20 "$D/release.log")"
left=$(buildah "${U[@]}" images --all --quiet 2>&1) || fail "buildah images: $left"
[ -z "$left" ] || fail "make release left images in buildah's storage: $left"
name=deltaq_${VERSION}_linux_amd64
image=otelcol-deltaq_${VERSION}_linux_amd64.oci.tar
(cd "$D/release" && sha256sum -c --strict SHA256SUMS) >"$D/sha256sum.log" 2>&1 || fail "sha256sum -c: $(cat "$D/sha256sum.log")"
[ "$(cut -d' ' -f3 "$D/release/SHA256SUMS" | sort | tr '\n' ' ')" = "$name.tar.gz $image " ] ||
  fail "SHA256SUMS lists $(cut -d' ' -f3 "$D/release/SHA256SUMS" | tr '\n' ' '), want $name.tar.gz and $image"
[ "$(ls -A "$D/release" | LC_ALL=C sort | tr '\n' ' ')" = "SHA256SUMS $name.tar.gz $image " ] ||
  fail "the release directory holds $(ls -A "$D/release" | tr '\n' ' '), want the artefacts and SHA256SUMS alone"
want="$name/ $name/CHANGELOG.md $name/LICENSE $name/README.md $name/config.yaml $name/deltaq $name/otelcol-deltaq "
got=$(tar -tzf "$D/release/$name.tar.gz" | sort | tr '\n' ' ')
[ "$got" = "$want" ] || fail "the archive holds: $got; want: $want"
got=$(tar -tvzf "$D/release/$name.tar.gz" | awk '{print $1, $2, $6}' | LC_ALL=C sort -k3 | tr '\n' ' ')
want="drwxr-xr-x 0/0 $name/ -rw-r--r-- 0/0 $name/CHANGELOG.md -rw-r--r-- 0/0 $name/LICENSE -rw-r--r-- 0/0 $name/README.md "
want+="-rw-r--r-- 0/0 $name/config.yaml -rwxr-xr-x 0/0 $name/deltaq -rwxr-xr-x 0/0 $name/otelcol-deltaq "
[ "$got" = "$want" ] || fail "the archive's modes and owners: $got; want: $want"
tar -xzf "$D/release/$name.tar.gz" -C "$D"
got=$("$D/$name/otelcol-deltaq" --version)
[ "$got" = "otelcol-deltaq version $VERSION" ] || fail "otelcol-deltaq --version: $got; want version $VERSION"
got=$("$D/$name/deltaq" version)
[[ "$got" == "deltaq $VERSION "* ]] || fail "deltaq version: $got; want deltaq $VERSION …"
"$D/$name/otelcol-deltaq" validate --config="$D/$name/config.yaml" >"$D/validate.log" 2>&1 ||
  fail "otelcol-deltaq validate config.yaml: $(cat "$D/validate.log")"
# The memory limiter's hard limit of a small container (docs/install.md: below its limit).
DELTAQ_MEMORY_LIMIT_MIB=64 "$D/$name/otelcol-deltaq" validate --config="$D/$name/config.yaml" >"$D/validate.log" 2>&1 ||
  fail "otelcol-deltaq validate config.yaml with DELTAQ_MEMORY_LIMIT_MIB=64: $(cat "$D/validate.log")"
# Set but empty (a template's empty value): the defaults, as when unset (docs/install.md).
DELTAQ_MEMORY_LIMIT_MIB= DELTAQ_DMAX= "$D/$name/otelcol-deltaq" validate --config="$D/$name/config.yaml" >"$D/validate.log" 2>&1 ||
  fail "otelcol-deltaq validate config.yaml with DELTAQ_MEMORY_LIMIT_MIB= and DELTAQ_DMAX= (empty: the defaults): $(cat "$D/validate.log")"
"$D/$name/deltaq" check --config="$D/$name/config.yaml" >"$D/check.log" 2>&1 ||
  fail "deltaq check --config config.yaml: $(cat "$D/check.log")"
# Every link of the archive's documents resolves: a relative one to a file of the archive, one
# to the repository (scripts/release-links.sh) to a file the repository holds.
for doc in README.md CHANGELOG.md; do
  while IFS= read -r target; do
    path=${target%%#*}
    case $target in
      '#'*) ;;
      https://github.com/deltaq-otel/deltaq/*)
        path=${path#https://github.com/deltaq-otel/deltaq/*/*/}
        [ -e "$path" ] || fail "$name/$doc links to $target: the repository holds no $path"
        ;;
      *://*) ;;
      *) [ -e "$D/$name/$path" ] || fail "$name/$doc links to $target, which the archive does not hold" ;;
    esac
  done < <(grep -oE '\]\([A-Za-z0-9_.#][^)[:space:]]*\)' "$D/$name/$doc" | sed -E 's/^\]\((.*)\)$/\1/' | sort -u)
done
log "ok: $name.tar.gz: checksums, contents, version $VERSION, its config.yaml valid"

# --- 2. the image, from the release's oci-archive -----------------------------------
B=(buildah --root "$D/storage" --runroot "$D/run" --storage-driver vfs)
"${B[@]}" pull --quiet "oci-archive:$D/release/$image" >"$D/pull.log" 2>&1 || fail "buildah pull: $(cat "$D/pull.log")"
c=$("${B[@]}" from --quiet "oci-archive:$D/release/$image" 2>"$D/from.log") || fail "buildah from: $(cat "$D/from.log")"
# The container goes at the end; stop_all reads the script's exit status from $?.
trap 'rc=$?; "${B[@]}" rm "$c" >/dev/null 2>&1 || true; (exit "$rc"); stop_all' EXIT
config=$("${B[@]}" inspect --format '{{.OCIv1.Config.User}}|{{.OCIv1.Config.Entrypoint}}|{{.OCIv1.Config.Cmd}}|{{.OCIv1.Config.ExposedPorts}}|{{index .OCIv1.Config.Labels "org.opencontainers.image.version"}}|{{.OCIv1.Architecture}}' "$c")
want="10001:10001|[/otelcol-deltaq]|[--config=/etc/otelcol-deltaq/config.yaml]|map[13133/tcp:{} 4317/tcp:{} 4318/tcp:{} 8888/tcp:{}]|$VERSION|amd64"
[ "$config" = "$want" ] || fail "image configuration: $config; want $want"
run() { "${B[@]}" run --isolation chroot "$c" /otelcol-deltaq "$@"; }
got=$(run --version 2>&1) || fail "the image's collector --version: $got"
[ "$got" = "otelcol-deltaq version $VERSION" ] || fail "the image's collector --version: $got; want version $VERSION"
run validate --config=/etc/otelcol-deltaq/config.yaml >"$D/image-validate.log" 2>&1 ||
  fail "the image's collector refuses its default configuration: $(cat "$D/image-validate.log")"
log "ok: image $image: user 10001, entrypoint and default configuration, version $VERSION"

mapfile -t P < <(free_ports 3)
[ "${#P[@]}" -eq 3 ] || fail "no 3 free loopback ports found"
HEALTH=127.0.0.1:${P[0]} HTTP=127.0.0.1:${P[2]}
start image "${B[@]}" run --isolation chroot "$c" /otelcol-deltaq --config=/etc/otelcol-deltaq/config.yaml \
  --set=extensions::health_check::endpoint="$HEALTH" \
  --set=receivers::otlp::protocols::grpc::endpoint="127.0.0.1:${P[1]}" \
  --set=receivers::otlp::protocols::http::endpoint="$HTTP" \
  --set=connectors::deltaq::interval=1s --set=exporters::debug::verbosity=detailed \
  --set=service::telemetry::metrics::level=none
healthy() { alive image && curl -sf "http://$HEALTH/" | grep -q 'Server available'; }
wait_for "the image's health check on $HEALTH" 30 healthy
now=$(date +%s%N)
span='{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"shop"}}]},
  "scopeSpans":[{"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174",
  "name":"GET /checkout","kind":2,"startTimeUnixNano":"'$((now - 20000000))'","endTimeUnixNano":"'$now'"}]}]}]}'
code=$(curl -s -o "$D/post.log" -w '%{http_code}' -H 'Content-Type: application/json' --data "$span" "http://$HTTP/v1/traces")
[ "$code" = 200 ] || fail "POST /v1/traces: HTTP $code $(cat "$D/post.log")"
# The debug exporter logs the connector's output: deltaq.outcomes of probe server (the
# configuration's one probe) counts one success once the span's window closed.
counted() { alive image && grep -A3 'deltaq.outcome: Str(success)' "$D/image.log" | grep -q '^Value: 1$'; }
wait_for "the image's deltaq connector counting the span (deltaq.outcomes, success: 1)" 20 counted
log "ok: the image's collector answers its health check and counts a server span"
p=$(pid_of image)
kill -TERM "$p"
for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
kill -0 "$p" 2>/dev/null && fail "the image's collector did not stop within 5 s of SIGTERM"
log "PASS"
