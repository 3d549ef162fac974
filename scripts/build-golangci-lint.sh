#!/usr/bin/env bash
# Builds golangci-lint (GOLANGCI_LINT_VERSION, default below) from the Go
# module proxy for `make lint`, and prints the binary's path. Cached under
# ${PODCHRON_CACHE:-$HOME/.cache/podchron}/golangci-lint/<version>/.
#
# The version is pinned (the module proxy here is a filtered mirror; this
# release is known to build: its go.mod has no replace directives). About
# 3 min cold on 2 cores. Only stdout carries the path.
# deps-behind: golangci-lint: v2.15.0 (the newest on the proxy) did not finish building here within the 2026-11-25 session (2 cores under load ~40); v2.15's new checks are unrun against the tree: try GOLANGCI_LINT_VERSION=v2.15.0 make lint, then move the pin
set -euo pipefail
export PATH="$PATH:/usr/local/go/bin"
GO=${GO:-go}
version=${GOLANGCI_LINT_VERSION:-v2.6.2}
cache=${PODCHRON_CACHE:-$HOME/.cache/podchron}/golangci-lint/$version
bin=$cache/golangci-lint
if [ -x "$bin" ] && "$bin" version >/dev/null 2>&1; then
	echo "$bin"
	exit 0
fi
start=$(date +%s)
mkdir -p "$cache"
work=$(mktemp -d "$cache/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "build-golangci-lint: building github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$version" >&2
GOBIN="$work" GOFLAGS=-mod=mod CGO_ENABLED=0 "$GO" install -trimpath \
	"github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$version" >&2
mv -f "$work/golangci-lint" "$bin"
"$bin" version >&2
echo "build-golangci-lint: built in $(($(date +%s) - start)) s" >&2
echo "$bin"
