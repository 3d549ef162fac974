#!/usr/bin/env bash
# Installs kwok (sigs.k8s.io/kwok, KWOK_VERSION, default below) from the Go module proxy into
# ${PODCHRON_CACHE:-$HOME/.cache/podchron}/scale/bin, once (cold: ~3 min on
# 2 cores), and prints the binary's path.
set -euo pipefail
# deps-behind: kwok: v0.8.0 (the newest on the proxy) did not finish building within the 2026-11-25 session (2 cores under load ~40); try KWOK_VERSION=v0.8.0 make scale SCALE_SHORT=1, then move the pin
v=${KWOK_VERSION:-v0.7.0}
out=${PODCHRON_CACHE:-$HOME/.cache/podchron}/scale/bin
if [ ! -x "$out/kwok" ] || [ "$(cat "$out/.kwok.version" 2>/dev/null)" != "$v" ]; then
	mkdir -p "$out"
	echo "scale: installing kwok $v (cold: ~3 min)" >&2
	GOBIN="$out" GOFLAGS=-mod=mod CGO_ENABLED=0 go install "sigs.k8s.io/kwok/cmd/kwok@$v"
	echo "$v" >"$out/.kwok.version"
fi
echo "$out/kwok"
