#!/usr/bin/env bash
# Builds gotestsum (GOTESTSUM_VERSION, default below) from the Go module
# proxy and prints the binary's path. Cached under
# ${PODCHRON_CACHE:-$HOME/.cache/podchron}/gotestsum/<version>/.
#
# The e2e runs `go test -json` through it: it prints what `go test -v`
# prints, and after the run each failed test's own output again, so the
# tail of a long CI log says why a scenario failed, not only that it did
# (2026-12-07: CI's tail showed "--- FAIL: TestCluster/62-..." and no
# message; the message was 14 minutes up the log). Only stdout carries
# the path.
set -euo pipefail
export PATH="$PATH:/usr/local/go/bin"
GO=${GO:-go}
version=${GOTESTSUM_VERSION:-v1.13.0}
cache=${PODCHRON_CACHE:-$HOME/.cache/podchron}/gotestsum/$version
bin=$cache/gotestsum
if [ -x "$bin" ] && "$bin" --version >/dev/null 2>&1; then
	echo "$bin"
	exit 0
fi
start=$(date +%s)
mkdir -p "$cache"
work=$(mktemp -d "$cache/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "build-gotestsum: building gotest.tools/gotestsum@$version" >&2
GOBIN="$work" GOFLAGS=-mod=mod CGO_ENABLED=0 "$GO" install -trimpath "gotest.tools/gotestsum@$version" >&2
mv -f "$work/gotestsum" "$bin"
"$bin" --version >&2
echo "build-gotestsum: built in $(($(date +%s) - start)) s" >&2
echo "$bin"
