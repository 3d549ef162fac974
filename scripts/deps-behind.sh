#!/usr/bin/env bash
# Lists every pinned dependency with its pin and the newest release the Go
# module proxy serves (`make deps-behind`):
#   - the module's direct requirements (go.mod; `go list -m -u`), with a count
#     of the indirect ones that have updates (they follow the direct ones);
#   - the tools the scripts build: Helm 3 and Helm 4 and crane
#     (scripts/build-helm.sh), golangci-lint (scripts/build-golangci-lint.sh), gotestsum
#     (scripts/build-gotestsum.sh),
#     runc (scripts/build-runc.sh), kwok (test/scale/build-kwok.sh), the
#     OpenTelemetry Collector builder and its components
#     (test/e2e/tools/build.sh, test/e2e/tools/otelcol/builder.yaml,
#     test/otlp/build-collector.sh), Jaeger and Kubernetes (the wrapper
#     modules test/e2e/tools/*/go.mod), containerd (test/e2e/tools/build.sh),
#     and the Go toolchain (go.mod's go line).
# "Newest" is the newest release (vX.Y.Z, no pre-release) the proxy lists.
# A pin kept behind on purpose says why in its file, in a comment
#   # deps-behind: <name>: <reason>
# which is printed beside its "behind" line. Always exits 0; the last line
# counts what is behind.
#
# Pins whose file is not the place for the comment:
# deps-behind: go (toolchain): Go is installed here and in CI at /usr/local/go (1.26.8, and the Dockerfile's golang:1.26.8 by digest); a newer go line makes every go command download that toolchain: a project-wide move of its own
set -uo pipefail
export PATH="$PATH:/usr/local/go/bin"
GO=${GO:-go}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 0

checked=0 behind=0 deliberate=0 unknown=0

# newest MODULE [PREFIX]: the newest release of MODULE on the proxy whose
# version starts with PREFIX (e.g. v3. for one major of a v0/v1 path).
newest() {
	"$GO" list -m -versions "$1" 2>/dev/null | tr ' ' '\n' | tail -n +2 |
		grep -E "^${2:-v}" | grep -E '^v[0-9]+\.[0-9]+\.[0-9]+$' | sort -V | tail -1
}

# reason NAME: the "# deps-behind: NAME: ..." comment of a pinning file.
reason() {
	local line
	line=$(grep -rhsF --include='*.sh' --include='*.yaml' --include='*.mod' --include=Makefile \
		-e "deps-behind: $1: " scripts test/e2e/tools test/otlp test/scale Makefile go.mod | head -1)
	if [ -n "$line" ]; then
		echo "${line#*"deps-behind: $1: "}"
	elif [[ $1 == go.opentelemetry.io/collector/* ]]; then
		reason "collector builder" # the components move with the builder
	fi
}

# report NAME PINNED NEWEST WHERE: one line; behind ones with their reason.
report() {
	local name=$1 pin=$2 new=$3 where=$4 why
	checked=$((checked + 1))
	if [ -z "$new" ]; then
		unknown=$((unknown + 1))
		printf '%-8s %-44s %-14s %-14s %s\n' "unknown" "$name" "$pin" "?" "$where (the proxy listed no release)"
		return
	fi
	if [ "$pin" = "$new" ] || [ "$(printf '%s\n%s\n' "$pin" "$new" | sort -V | tail -1)" = "$pin" ]; then
		printf '%-8s %-44s %-14s %-14s %s\n' "ok" "$name" "$pin" "$new" "$where"
		return
	fi
	behind=$((behind + 1))
	why=$(reason "$name")
	if [ -n "$why" ]; then
		deliberate=$((deliberate + 1))
		printf '%-8s %-44s %-14s %-14s %s\n%8s %s\n' "behind" "$name" "$pin" "$new" "$where" "" "deliberate: $why"
	else
		printf '%-8s %-44s %-14s %-14s %s\n' "behind" "$name" "$pin" "$new" "$where"
	fi
}

# pin FILE REGEX: the first match's \1 in FILE (sed -E).
pin() { sed -nE "s/$2/\1/p" "$1" | head -1; }

gomod() {
	local line path ver new
	while read -r path ver new; do
		report "$path" "$ver" "${new:-$ver}" go.mod
	done < <("$GO" list -m -u -f '{{if and (not .Main) (not .Indirect)}}{{.Path}} {{.Version}}{{with .Update}} {{.Version}}{{end}}{{end}}' all 2>/dev/null | grep .)
	line=$("$GO" list -m -u -f '{{if and .Indirect .Update}}x{{end}}' all 2>/dev/null | grep -c x)
	echo "info     go.mod: $line indirect modules have newer versions (they follow the direct requirements; go mod tidy keeps them)"
	local gov; gov=$(pin go.mod '^go ([0-9.]+)$')
	report "go (toolchain)" "v$gov" "$("$GO" list -m -versions golang.org/toolchain 2>/dev/null | tr ' ' '\n' |
		sed -nE 's/^v0\.0\.1-go([0-9]+\.[0-9]+\.[0-9]+)\.linux-amd64$/v\1/p' | sort -V | tail -1)" "go.mod (go line)"
}

tools() {
	local v f
	v=$(pin scripts/build-helm.sh '^helm3_version=(v[0-9.]+)$')
	report helm3 "$v" "$(newest helm.sh/helm/v3)" scripts/build-helm.sh
	v=$(pin scripts/build-helm.sh '^helm4_version=(v[0-9.]+)$')
	report helm4 "$v" "$(newest helm.sh/helm/v4)" scripts/build-helm.sh
	v=$(pin scripts/build-helm.sh '^crane_version=\$\{CRANE_VERSION:-(v[0-9.]+)\}$')
	report crane "$v" "$(newest github.com/google/go-containerregistry)" scripts/build-helm.sh
	v=$(pin scripts/build-golangci-lint.sh '^version=\$\{GOLANGCI_LINT_VERSION:-(v[0-9.]+)\}$')
	report golangci-lint "$v" "$(newest github.com/golangci/golangci-lint/v2)" scripts/build-golangci-lint.sh
	v=$(pin scripts/build-gotestsum.sh '^version=\$\{GOTESTSUM_VERSION:-(v[0-9.]+)\}$')
	report gotestsum "$v" "$(newest gotest.tools/gotestsum)" scripts/build-gotestsum.sh
	v=$(newest github.com/opencontainers/runc)
	report runc "$v" "$v" "scripts/build-runc.sh (builds the newest release itself)"
	v=$(pin test/scale/build-kwok.sh '^v=\$\{KWOK_VERSION:-(v[0-9.]+)\}$')
	report kwok "$v" "$(newest sigs.k8s.io/kwok)" test/scale/build-kwok.sh
	v=$(pin test/e2e/tools/build.sh '^containerd_version=(v[0-9.]+)$')
	report containerd "$v" "$(newest github.com/containerd/containerd/v2)" test/e2e/tools/build.sh
	v=$(pin test/e2e/tools/jaeger/go.mod '^require github.com\/jaegertracing\/jaeger (v[0-9.]+)$')
	report jaeger "$v" "$(newest github.com/jaegertracing/jaeger)" test/e2e/tools/jaeger/go.mod
	for f in test/e2e/tools/kubernetes*/go.mod; do
		v=$(pin "$f" '^require k8s.io\/kubernetes (v[0-9.]+)$')
		f=${f%/go.mod}
		report "e2e-${f#test/e2e/tools/}" "$v" "$(newest k8s.io/kubernetes)" "$f/go.mod"
	done
}

# expand FILE: FILE with its own version=vX.Y.Z put in for $version.
expand() {
	local v
	v=$(sed -nE 's/^version=(v[0-9.]+).*/\1/p' "$1" | head -1)
	if [ -n "$v" ]; then sed "s/\$version/$v/g" "$1"; else cat "$1"; fi
}

collector() {
	local f v mod
	for f in test/e2e/tools/build.sh test/otlp/build-collector.sh; do
		v=$(expand "$f" | sed -nE 's/.*go.opentelemetry.io\/collector\/cmd\/builder@(v[0-9.]+).*/\1/p' | head -1)
		report "collector builder" "$v" "$(newest go.opentelemetry.io/collector/cmd/builder)" "$f"
	done
	for f in test/e2e/tools/otelcol/builder.yaml test/otlp/build-collector.sh; do
		while read -r mod v; do
			report "$mod" "$v" "$(newest "$mod")" "$f"
		done < <(expand "$f" | sed -nE 's/^[[:space:]]*- gomod: ([^ ]+) (v[0-9.]+)$/\1 \2/p')
	done
}

printf '%-8s %-44s %-14s %-14s %s\n' "" "dependency" "pinned" "newest" "where"
gomod
tools
collector
echo "deps-behind: $checked checked, $behind behind ($deliberate on purpose, reasons above), $unknown unknown"
exit 0
