#!/usr/bin/env bash
# Installs kwok (sigs.k8s.io/kwok, v0.7.0) from the Go module proxy into
# ${PODCHRON_CACHE:-$HOME/.cache/podchron}/scale/bin, once (cold: ~3 min on
# 2 cores), and prints the binary's path.
set -euo pipefail
v=v0.7.0
out=${PODCHRON_CACHE:-$HOME/.cache/podchron}/scale/bin
if [ ! -x "$out/kwok" ] || [ "$(cat "$out/.kwok.version" 2>/dev/null)" != "$v" ]; then
	mkdir -p "$out"
	echo "scale: installing kwok $v (cold: ~3 min)" >&2
	GOBIN="$out" GOFLAGS=-mod=mod CGO_ENABLED=0 go install "sigs.k8s.io/kwok/cmd/kwok@$v"
	echo "$v" >"$out/.kwok.version"
fi
echo "$out/kwok"
