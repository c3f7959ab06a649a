#!/usr/bin/env bash
# Prints the version every artefact is stamped with (the collector's
# --version, `deltaq version`, the release archives and the image), from one
# source: a release is a tag vX.Y.Z on a commit whose CHANGELOG.md has
# "## X.Y.Z" (or "## [X.Y.Z]") as its newest version heading; the tag must
# agree with it. Any other commit is a development build of the newest
# released version (0.0.0 before the first): X.Y.Z-dev+REVISION.
set -euo pipefail
cd "$(dirname "$0")/.."

released=$(sed -n -E 's/^## \[?([0-9]+\.[0-9]+\.[0-9]+)\]?([ ].*)?$/\1/p' CHANGELOG.md | head -1)
# Only a repository of these sources says which commit they are: sources copied into another
# one (a source archive unpacked in a repository of one's own) are no commit of it, and
# would take its tag, or its revision, for theirs.
tag= rev=
if [ "$(git rev-parse --show-toplevel 2>/dev/null)" = "$(pwd -P)" ]; then
  tag=$(git describe --tags --exact-match --match 'v[0-9]*' 2>/dev/null || true)
  rev=$(git rev-parse --short=12 HEAD 2>/dev/null || true)
fi
if [ -n "$tag" ]; then
  if [ "${tag#v}" != "$released" ]; then
    echo "version.sh: HEAD is tagged $tag, but the newest version in CHANGELOG.md is ${released:-none}: release it there first" >&2
    exit 1
  fi
  echo "$released"
  exit 0
fi
echo "${released:-0.0.0}-dev${rev:++$rev}"
