#!/usr/bin/env bash
# Regenerates the eBPF object and bindings and fails if they differ from the
# committed ones: the committed files must be exactly what bpf/ produces.
set -euo pipefail
cd "$(dirname "$0")/.."
files=(internal/probe/event/podchron_bpfel.go internal/probe/event/podchron_bpfel.o)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for f in "${files[@]}"; do cp "$f" "$tmp/"; done
(cd internal/probe && go generate ./...)
rc=0
for f in "${files[@]}"; do
	if ! cmp -s "$f" "$tmp/$(basename "$f")"; then
		echo "check-generate: $f differs from what 'make generate' produces from bpf/" >&2
		rc=1
	fi
done
if [ $rc -ne 0 ]; then
	echo "check-generate: run 'make generate' and commit the result" >&2
	for f in "${files[@]}"; do cp "$tmp/$(basename "$f")" "$f"; done
	exit 1
fi
echo "check-generate: committed eBPF objects match bpf/"
