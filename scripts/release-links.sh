#!/usr/bin/env bash
# Copyright The deltaq-otel Authors
# SPDX-License-Identifier: Apache-2.0
#
# scripts/release-links.sh DIR REF: the links of the Markdown documents of a
# release archive's directory DIR (README.md, CHANGELOG.md) made to resolve.
# The documents link to the repository's files by relative paths, and the
# archive holds few of them: a relative link to a file that DIR does not hold
# becomes a link to that file in the repository at REF (the release's tag
# vX.Y.Z, or main): blob/ for a file, tree/ for a directory, raw/ for an
# image. Links to files DIR holds (LICENSE, CHANGELOG.md) stay relative;
# in-page anchors (#…) and absolute URLs stay as they are. A relative link
# to a file the repository does not hold either is an error. make release
# (scripts/release.sh) runs it on each archive's directory.
set -euo pipefail

[ $# -eq 2 ] || {
  echo "usage: $0 DIR REF" >&2
  exit 2
}
dir=$1 ref=$2
repo=https://github.com/deltaq-otel/deltaq
root=$(cd "$(dirname "$0")/.." && pwd)

# quote TEXT: TEXT as a literal in a sed regex whose delimiter is |.
quote() { printf '%s' "$1" | sed -e 's/[][\.*^$|]/\\&/g'; }

for f in "$dir"/*.md; do
  script=
  # The targets of the document's relative links: a path from the repository's
  # root, with an anchor or without.
  while IFS= read -r target; do
    path=${target%%#*}
    [ -e "$dir/$path" ] && continue
    [ -e "$root/$path" ] || {
      echo "release-links.sh: $(basename "$f") links to $path, which neither the archive nor the repository holds" >&2
      exit 1
    }
    case $path in
      *.png | *.jpg | *.jpeg | *.gif | *.svg) kind=raw ;;
      *) if [ -d "$root/$path" ]; then kind=tree; else kind=blob; fi ;;
    esac
    script+="s|]($(quote "$target"))|]($repo/$kind/$ref/$target)|g"$'\n'
  done < <(grep -oE '\]\([A-Za-z0-9_][A-Za-z0-9_./-]*(#[^)[:space:]]*)?\)' "$f" | sed -E 's/^\]\((.*)\)$/\1/' | sort -u)
  [ -z "$script" ] || sed -i -e "$script" "$f"
done
