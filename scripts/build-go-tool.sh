#!/usr/bin/env bash
# Builds a pinned Go command from the module proxy into the cache and prints
# the binary's path; the build-<tool>.sh scripts call it with their pin.
# Cached under ${PODCHRON_CACHE:-$HOME/.cache/podchron}/<name>/<version>/.
# Only stdout carries the path.
# usage: scripts/build-go-tool.sh NAME PACKAGE VERSION VERSION-FLAG
#   e.g. build-go-tool.sh gotestsum gotest.tools/gotestsum v1.13.0 --version
set -euo pipefail
export PATH="$PATH:/usr/local/go/bin"
GO=${GO:-go}
name=$1 pkg=$2 version=$3 vflag=$4
cache=${PODCHRON_CACHE:-$HOME/.cache/podchron}/$name/$version
bin=$cache/$name
if [ -x "$bin" ] && "$bin" "$vflag" >/dev/null 2>&1; then
	echo "$bin"
	exit 0
fi
start=$(date +%s)
mkdir -p "$cache"
work=$(mktemp -d "$cache/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "build-$name: building $pkg@$version" >&2
GOBIN="$work" GOFLAGS=-mod=mod CGO_ENABLED=0 "$GO" install -trimpath "$pkg@$version" >&2
mv -f "$work/$name" "$bin"
"$bin" "$vflag" >&2
echo "build-$name: built in $(($(date +%s) - start)) s" >&2
echo "$bin"
