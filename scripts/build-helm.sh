#!/usr/bin/env bash
# Builds Helm (HELM_VERSION, default below) from the Go module proxy for the
# chart's checks (deploy/helm_test.go, make lint) and the e2e, and prints the
# binary's path. Cached under ${PODCHRON_CACHE:-$HOME/.cache/podchron}/helm/<version>/helm.
# HELM_VERSION=v4 (the Helm 4 pin below) or v4.x.y builds Helm 4 (module
# helm.sh/helm/v4) the same way; v3 or unset, the Helm 3 pin.
# deploy/helm_test.go lints and installs the chart with both.
#
# Beside it goes crane (go-containerregistry, CRANE_VERSION), whose
# `crane registry serve` is the OCI registry deploy/helm_test.go pushes the
# packaged chart to (helm push oci://...) and installs it back from.
#
# The versions are pinned, not "newest": the module proxy here is a filtered
# mirror, and these are the releases seen building (`go install` works: their
# go.mod files have no replace directives; Helm about 3 min cold on 2 cores,
# crane about 15 s). scripts/deps-behind.sh lists newer ones. Only stdout
# carries the path.
set -euo pipefail
export PATH="$PATH:/usr/local/go/bin"
GO=${GO:-go}
helm3_version=v3.22.0
helm4_version=v4.3.1
version=${HELM_VERSION:-v3}
case "$version" in
v3) version=$helm3_version ;;
v4) version=$helm4_version ;;
esac
crane_version=${CRANE_VERSION:-v0.22.1}
# The module's major version follows the release's: helm.sh/helm/v3, helm.sh/helm/v4.
major=${version%%.*}
case "$major" in
v3 | v4) mod=helm.sh/helm/$major ;;
*) echo "build-helm: HELM_VERSION=$version: only Helm 3 and 4 (v3.x, v4.x) are built" >&2; exit 2 ;;
esac

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
	echo "build-helm: building $mod/cmd/helm@$version" >&2
	# Helm's version string comes from ldflags (release builds set it); name
	# it, so `helm version` tells which release this is.
	ldflags="-X $mod/internal/version.version=$version"
	if [ "$major" = v3 ]; then
		# Helm 3's default Kubernetes version (helm template and lint without a
		# cluster, checked against a chart's kubeVersion) is also an ldflag,
		# 1.20 when unset; its Makefile derives it from its client-go, as here.
		# Helm 4 reads its client-go version from the binary's build info.
		gomod=$("$GO" mod download -json "$mod@$version" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
		cg=$(sed -nE 's/^[[:space:]]*k8s.io\/client-go v0\.([0-9]+)\..*/\1/p' "$gomod" | head -1)
		[ -n "$cg" ] || { echo "build-helm: no k8s.io/client-go in $gomod" >&2; exit 1; }
		for p in pkg/lint/rules pkg/chartutil; do
			ldflags="$ldflags -X $mod/$p.k8sVersionMajor=1 -X $mod/$p.k8sVersionMinor=$cg"
		done
	fi
	GOBIN="$work" GOFLAGS=-mod=mod CGO_ENABLED=0 "$GO" install -trimpath -ldflags "$ldflags" \
		"$mod/cmd/helm@$version" >&2
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
