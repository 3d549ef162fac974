#!/usr/bin/env bash
# Builds Helm (HELM_VERSION, default below) from the Go module proxy for the
# chart's checks (deploy/helm_test.go, make lint) and the e2e, and prints the
# binary's path. Cached under ${PODCHRON_CACHE:-$HOME/.cache/podchron}/helm/<version>/helm.
#
# Beside it goes crane (go-containerregistry, CRANE_VERSION), whose
# `crane registry serve` is the OCI registry deploy/helm_test.go pushes the
# packaged chart to (helm push oci://...) and installs it back from.
#
# The versions are pinned, not "newest": the module proxy here is a filtered
# mirror, and these are the releases seen building (`go install` works: their
# go.mod files have no replace directives; Helm about 3 min cold on 2 cores,
# crane about 15 s). Only stdout carries the path.
set -euo pipefail
export PATH="$PATH:/usr/local/go/bin"
GO=${GO:-go}
version=${HELM_VERSION:-v3.19.2}
crane_version=${CRANE_VERSION:-v0.22.1}

cache=${PODCHRON_CACHE:-$HOME/.cache/podchron}/helm/$version
bin=$cache/helm
crane=$cache/crane
if [ -x "$bin" ] && "$bin" version --short >/dev/null 2>&1 && [ -x "$crane" ] && "$crane" version >/dev/null 2>&1; then
	echo "$bin"
	exit 0
fi

start=$(date +%s)
mkdir -p "$cache"
work=$(mktemp -d "$cache/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
if ! { [ -x "$bin" ] && "$bin" version --short >/dev/null 2>&1; }; then
	echo "build-helm: building helm.sh/helm/v3/cmd/helm@$version" >&2
	# Helm's version string comes from ldflags (release builds set it); name
	# it, so `helm version` tells which release this is.
	GOBIN="$work" GOFLAGS=-mod=mod CGO_ENABLED=0 "$GO" install -trimpath \
		-ldflags "-X helm.sh/helm/v3/internal/version.version=$version" \
		"helm.sh/helm/v3/cmd/helm@$version" >&2
	"$work/helm" version --short >&2
	mv -f "$work/helm" "$bin"
fi
if ! { [ -x "$crane" ] && "$crane" version >/dev/null 2>&1; }; then
	echo "build-helm: building github.com/google/go-containerregistry/cmd/crane@$crane_version" >&2
	GOBIN="$work" GOFLAGS=-mod=mod CGO_ENABLED=0 "$GO" install -trimpath \
		"github.com/google/go-containerregistry/cmd/crane@$crane_version" >&2
	mv -f "$work/crane" "$crane"
fi
echo "build-helm: $bin, $crane ($(($(date +%s) - start)) s)" >&2
echo "$bin"
