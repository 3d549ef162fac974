#!/usr/bin/env bash
# Builds Inspektor Gadget's ig (v0.26.0) from the Go module proxy, for
# bench/execstorm.sh's optional ig mode (IG=$(bash bench/build-ig.sh)).
# Prints its path. Cached under ${PODCHRON_CACHE:-$HOME/.cache/podchron}/ig.
#
# Why this version and these steps (checked on 2026-11-24, Go 1.26):
# - v0.26.0 still has built-in gadgets (`ig trace exec`); later versions
#   fetch gadgets as OCI images from ghcr.io, which is unreachable here.
# - `go install ...@v0.26.0` is refused: its go.mod has replace directives.
#   A writable copy of the module builds with -mod=mod.
# - Its columns/formatter/json package reaches into encoding/json with
#   go:linkname (safeSet), which the Go 1.23+ linker refuses by default:
#   -ldflags=-checklinkname=0.
# - At run time it needs debugfs: the benchmark passes
#   --auto-mount-filesystems and unmounts what ig mounted afterwards.
set -euo pipefail
export PATH=$PATH:/usr/local/go/bin
version=v0.26.0
cache=${PODCHRON_CACHE:-$HOME/.cache/podchron}/ig/$version
bin=$cache/ig
if [ -x "$bin" ]; then echo "$bin"; exit 0; fi
mkdir -p "$cache"
dir=$(go mod download -json "github.com/inspektor-gadget/inspektor-gadget@$version" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
rm -rf "$cache/src"
cp -r "$dir" "$cache/src"
chmod -R u+w "$cache/src"
(cd "$cache/src" && go build -mod=mod -ldflags=-checklinkname=0 -o "$bin" ./cmd/ig >&2)
rm -rf "$cache/src"
echo "$bin"
