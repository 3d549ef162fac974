#!/usr/bin/env bash
# Builds what the e2e cluster runs that Debian does not ship: kube-apiserver,
# kube-controller-manager, kube-scheduler, kubelet, kubectl (v1.34.4) and
# Jaeger v2 (v1.76.0), from the Go module proxy through the wrapper modules
# beside this script, and an OpenTelemetry Collector (v0.162.0, from
# otelcol/builder.yaml with the collector builder) that fans the tracer's
# spans out to the trace back ends. Output: $PODCHRON_E2E_BIN (default
# ${PODCHRON_CACHE:-$HOME/.cache/podchron}/e2e/bin); a binary is rebuilt only
# when its wrapper module changes. Prints the directory.
#
# Cold, on 2 cores: Kubernetes ~11 min, Jaeger ~12 min, the collector ~2 min. Peak link memory ~2.3 GB.
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

build_otelcol() {
	local s; s=$(sha256sum <"$here/otelcol/builder.yaml" | cut -c1-16)
	if [ "$(cat "$out/.otelcol.stamp" 2>/dev/null)" = "$s" ]; then return; fi
	echo "e2e: building the OpenTelemetry Collector v0.162.0 (cold: ~2 min)" >&2
	local t0=$SECONDS w; w=$(mktemp -d)
	GOBIN=$w go install go.opentelemetry.io/collector/cmd/builder@v0.162.0
	cp "$here/otelcol/builder.yaml" "$w/"
	(cd "$w" && ./builder --config builder.yaml --ldflags "-s -w" >"$w/build.log" 2>&1) || { cat "$w/build.log" >&2; rm -rf "$w"; return 1; }
	mv "$w/dist/otelcol" "$out/otelcol"
	rm -rf "$w"
	echo "$s" >"$out/.otelcol.stamp"
	echo "e2e: collector built in $((SECONDS - t0)) s" >&2
}

case "${1:-all}" in
kubernetes) build_kubernetes ;;
jaeger) build_jaeger ;;
otelcol) build_otelcol ;;
all) build_kubernetes; build_jaeger; build_otelcol ;;
*) echo "usage: $0 [all|kubernetes|jaeger|otelcol]" >&2; exit 2 ;;
esac
echo "$out"
