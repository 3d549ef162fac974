#!/usr/bin/env bash
# Builds upstream runc (the newest release on the Go module proxy, or
# RUNC_VERSION=vX.Y.Z) for test/runtime's runtime matrix and prints the
# binary's path. Cached under ${PODCHRON_CACHE:-$HOME/.cache/podchron}/runc/<version>/runc.
#
# `go install github.com/opencontainers/runc@vX` does not work for every
# release (1.3's go.mod replaces opencontainers/selinux with a nested module
# the module zip lacks, and its vendor/ is incomplete), so the module is
# copied, the replace dropped, vendor/ removed and the module built with
# libseccomp (needs libseccomp-dev and cgo). Only stdout carries the path.
set -euo pipefail
export PATH="$PATH:/usr/local/go/bin"
GO=${GO:-go}
mod=github.com/opencontainers/runc

version=${RUNC_VERSION:-}
if [ -z "$version" ]; then
	# Newest release: the proxy's versions, semver-sorted, without pre-releases.
	version=$("$GO" list -m -versions "$mod" | tr ' ' '\n' | grep -E '^v[0-9]+\.[0-9]+\.[0-9]+$' | tail -1)
	[ -n "$version" ] || { echo "build-runc: no runc release found on the module proxy" >&2; exit 1; }
fi
cache=${PODCHRON_CACHE:-$HOME/.cache/podchron}/runc/$version
bin=$cache/runc
if [ -x "$bin" ] && "$bin" --version >/dev/null 2>&1; then
	echo "$bin"
	exit 0
fi

if ! pkg-config --exists libseccomp 2>/dev/null && [ ! -e /usr/include/seccomp.h ]; then
	echo "build-runc: libseccomp-dev is missing (scripts/install-deps.sh installs it)" >&2
	exit 1
fi

echo "build-runc: building $mod@$version" >&2
start=$(date +%s)
src=$("$GO" mod download -json "$mod@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$src" ] || { echo "build-runc: go mod download $mod@$version gave no directory" >&2; exit 1; }

mkdir -p "$cache"
work=$(mktemp -d "$cache/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp -r "$src/." "$work/src"
chmod -R u+w "$work/src"
cd "$work/src"
# Replaces pointing at directories (nested modules absent from the zip) go;
# the upstream module of the same path resolves instead.
sed -i -E '/^replace[[:space:]].*=>[[:space:]]*\.\.?\//d' go.mod
rm -rf vendor
# The module zip has no .git: name the source in `runc --version`.
CGO_ENABLED=1 GOFLAGS=-buildvcs=false "$GO" build -mod=mod -trimpath \
	-tags "seccomp urfave_cli_no_docs" \
	-ldflags "-X main.gitCommit=go-module-$version" \
	-o "$work/runc" . >&2
"$work/runc" --version >&2
mv -f "$work/runc" "$bin"
echo "build-runc: $bin ($(($(date +%s) - start)) s)" >&2
echo "$bin"
