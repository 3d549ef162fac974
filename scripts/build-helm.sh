#!/usr/bin/env bash
# Builds Helm (HELM_VERSION, default below) from the Go module proxy for the
# chart's checks (deploy/helm_test.go, make lint) and the e2e, and prints the
# binary's path. Cached under ${PODCHRON_CACHE:-$HOME/.cache/podchron}/helm/<version>/helm.
#
# The version is pinned, not "newest": the module proxy here is a filtered
# mirror, and v3.19.2 is the release seen building (`go install` works: Helm's
# go.mod has no replace directives; about 3 min cold on 2 cores).
# Only stdout carries the path.
set -euo pipefail
export PATH="$PATH:/usr/local/go/bin"
GO=${GO:-go}
version=${HELM_VERSION:-v3.19.2}

cache=${PODCHRON_CACHE:-$HOME/.cache/podchron}/helm/$version
bin=$cache/helm
if [ -x "$bin" ] && "$bin" version --short >/dev/null 2>&1; then
	echo "$bin"
	exit 0
fi

echo "build-helm: building helm.sh/helm/v3/cmd/helm@$version" >&2
start=$(date +%s)
mkdir -p "$cache"
work=$(mktemp -d "$cache/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
# Helm's version string comes from ldflags (release builds set it); name it,
# so `helm version` tells which release this is.
GOBIN="$work" GOFLAGS=-mod=mod CGO_ENABLED=0 "$GO" install -trimpath \
	-ldflags "-X helm.sh/helm/v3/internal/version.version=$version" \
	"helm.sh/helm/v3/cmd/helm@$version" >&2
"$work/helm" version --short >&2
mv -f "$work/helm" "$bin"
echo "build-helm: $bin ($(($(date +%s) - start)) s)" >&2
echo "$bin"
