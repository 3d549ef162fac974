#!/usr/bin/env bash
# Builds what the e2e cluster runs that Debian does not ship: kube-apiserver,
# kube-controller-manager, kube-scheduler, kubelet, kubectl (v1.34.4) and
# Jaeger v2 (v1.76.0), from the Go module proxy through the wrapper modules
# beside this script. Output: $PODCHRON_E2E_BIN (default
# ${PODCHRON_CACHE:-$HOME/.cache/podchron}/e2e/bin); a binary is rebuilt only
# when its wrapper module changes. Prints the directory.
#
# Cold, on 2 cores: Kubernetes ~11 min, Jaeger ~12 min. Peak link memory ~2.3 GB.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${PODCHRON_E2E_BIN:-${PODCHRON_CACHE:-$HOME/.cache/podchron}/e2e/bin}
mkdir -p "$out"
export GOFLAGS="-buildvcs=false -trimpath"
export CGO_ENABLED=0

stamp() { cat "$1/go.mod" "$1/go.sum" "$1/tools.go" | sha256sum | cut -c1-16; }

build_kubernetes() {
	local s; s=$(stamp "$here/kubernetes")
	if [ "$(cat "$out/.kubernetes.stamp" 2>/dev/null)" = "$s" ]; then return; fi
	local v=v1.34.4 pkg=k8s.io/kubernetes/cmd
	local ld="-s -w -X k8s.io/component-base/version.gitVersion=$v -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=34 -X k8s.io/component-base/version.gitTreeState=clean"
	echo "e2e: building Kubernetes $v (cold: ~11 min)" >&2
	local t0=$SECONDS
	# kubelet uses cgo-free code paths here; CGO off gives static binaries.
	(cd "$here/kubernetes" && go build -ldflags "$ld" -o "$out/" \
		$pkg/kube-apiserver $pkg/kube-controller-manager $pkg/kube-scheduler $pkg/kubelet $pkg/kubectl)
	echo "$s" >"$out/.kubernetes.stamp"
	echo "e2e: Kubernetes built in $((SECONDS - t0)) s" >&2
}

build_jaeger() {
	local s; s=$(stamp "$here/jaeger")
	if [ "$(cat "$out/.jaeger.stamp" 2>/dev/null)" = "$s" ]; then return; fi
	echo "e2e: building Jaeger v1.76.0 (cold: ~12 min)" >&2
	local t0=$SECONDS
	# upstream go.sum, not tidy-able here: -mod=mod (checksums still verified)
	(cd "$here/jaeger" && GOFLAGS="$GOFLAGS -mod=mod" go build -ldflags "-s -w" -o "$out/jaeger" github.com/jaegertracing/jaeger/cmd/jaeger)
	echo "$s" >"$out/.jaeger.stamp"
	echo "e2e: Jaeger built in $((SECONDS - t0)) s" >&2
}

case "${1:-all}" in
kubernetes) build_kubernetes ;;
jaeger) build_jaeger ;;
all) build_kubernetes; build_jaeger ;;
*) echo "usage: $0 [all|kubernetes|jaeger]" >&2; exit 2 ;;
esac
echo "$out"
