#!/usr/bin/env bash
# Installs etcd (go.etcd.io/etcd/server/v3, ETCD_VERSION, default below) from the Go module proxy
# into ${PODCHRON_CACHE:-$HOME/.cache/podchron}/fleet/bin, once (~3 min), and prints the binary's path.
# The fleet test needs an etcd with RequestWatchProgress (>= 3.4.31, 3.5.13):
# without it (Debian's 3.4.23) kube-apiserver serves no consistent read from its
# watch cache, so every tracer's initial pod and event-window list goes to etcd.
set -euo pipefail
v=${ETCD_VERSION:-v3.5.21}
out=${PODCHRON_CACHE:-$HOME/.cache/podchron}/fleet/bin
if [ ! -x "$out/etcd" ] || [ "$(cat "$out/.etcd.version" 2>/dev/null)" != "$v" ]; then
	mkdir -p "$out"
	echo "fleet: installing etcd $v" >&2
	# go install refuses server/v3 (its go.mod has replace directives):
	# build it from a throwaway module.
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	(cd "$tmp" && go mod init fleetetcd >/dev/null 2>&1 &&
		GOFLAGS=-mod=mod go get "go.etcd.io/etcd/server/v3@$v" >/dev/null 2>&1 &&
		CGO_ENABLED=0 GOFLAGS=-mod=mod go build -o "$out/etcd" go.etcd.io/etcd/server/v3)
	echo "$v" >"$out/.etcd.version"
fi
echo "$out/etcd"
