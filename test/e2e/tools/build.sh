#!/usr/bin/env bash
# Builds what the e2e cluster runs that Debian does not ship: kube-apiserver,
# kube-controller-manager, kube-scheduler, kubelet, kubectl (v1.35.4,
# v1.36.3 or v1.37.2, see below) and Jaeger v2 (v1.76.0), from the Go module proxy through the wrapper modules
# beside this script, and an OpenTelemetry Collector (v0.165.0, from
# otelcol/builder.yaml with the collector builder) that fans the tracer's
# spans out to the trace back ends. Output: <base>-<stack>, base being
# $PODCHRON_E2E_BIN (default ${PODCHRON_CACHE:-$HOME/.cache/podchron}/e2e/bin),
# which holds Jaeger and the collector (linked into each stack's directory); a
# binary is rebuilt only when its wrapper module changes. Prints the directory.
#
# PODCHRON_E2E_STACK picks the node's stack:
#   k8s135-containerd16 (default): Kubernetes v1.35.4 (wrapper kubernetes/), Debian's containerd 1.6
#     (1.35 is the last Kubernetes minor that supports containerd 1.x);
#   k8s137-containerd2: Kubernetes v1.37.2 (wrapper kubernetes-1.37/) and containerd v2.4.2's
#     containerd + containerd-shim-runc-v2 built from its Go module;
#   k8s136-containerd2: Kubernetes v1.36.3 (wrapper kubernetes-1.36/) and the same containerd:
#     the minor between the two legs, proven by hand (`make e2e-stack136`), not in `make test`
#     (another ~11 min cold build and ~15 min suite would take CI past its budget).
# Each stack has its own directory, so switching stacks never rebuilds the other's Kubernetes.
# The e2e test runs the containerd found in the output directory, else Debian's.
# (A comment here, not in the wrapper's go.mod, whose change would rebuild Kubernetes:)
# deps-behind: e2e-kubernetes: the default stack (k8s135-containerd16) runs Debian's containerd 1.6, which Kubernetes 1.36+ refuse; v1.35.4 is 1.35's newest patch on the proxy; the newest, v1.37.2, is the k8s137-containerd2 stack's (kubernetes-1.37/)
# deps-behind: e2e-kubernetes-1.36: the k8s136-containerd2 stack proves the minor between the legs; v1.36.3 is 1.36's newest patch on the proxy
# Measured 2026-11-25 on 2 shared cores under load ~8-13 (module cache warm for
# Kubernetes 1.34's deps only): containerd v2.4.2 474 s, Kubernetes v1.37.2 2502 s;
# Kubernetes v1.35.4 4378 s (25 min of CPU) under load 25-42;
# expect about half on an idle CI machine.
#
# Cold, on 2 cores: Kubernetes ~11 min, Jaeger ~12 min, the collector ~2 min. Peak link memory ~2.3 GB.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
stack=${PODCHRON_E2E_STACK:-k8s135-containerd16}
base=${PODCHRON_E2E_BIN:-${PODCHRON_CACHE:-$HOME/.cache/podchron}/e2e/bin}
case "$stack" in
k8s135-containerd16) out=$base-$stack kdir=kubernetes kv=v1.35.4 ;;
k8s136-containerd2) out=$base-$stack kdir=kubernetes-1.36 kv=v1.36.3 ;;
k8s137-containerd2) out=$base-$stack kdir=kubernetes-1.37 kv=v1.37.2 ;;
*) echo "build.sh: unknown PODCHRON_E2E_STACK=$stack (k8s135-containerd16 | k8s136-containerd2 | k8s137-containerd2)" >&2; exit 2 ;;
esac
containerd_version=v2.4.2
mkdir -p "$out" "$base"
export GOFLAGS="-buildvcs=false -trimpath"
export CGO_ENABLED=0

stamp() { cat "$1/go.mod" "$1/go.sum" "$1/tools.go" | sha256sum | cut -c1-16; }

build_kubernetes() {
	local s; s=$(stamp "$here/$kdir")
	if [ "$(cat "$out/.kubernetes.stamp" 2>/dev/null)" = "$s" ]; then return; fi
	local v=$kv pkg=k8s.io/kubernetes/cmd minor; minor=$(echo "$kv" | cut -d. -f2)
	local ld="-s -w -X k8s.io/component-base/version.gitVersion=$v -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
	echo "e2e: building Kubernetes $v (cold: ~11 min)" >&2
	local t0=$SECONDS
	# kubelet uses cgo-free code paths here; CGO off gives static binaries.
	(cd "$here/$kdir" && go build -ldflags "$ld" -o "$out/" \
		$pkg/kube-apiserver $pkg/kube-controller-manager $pkg/kube-scheduler $pkg/kubelet $pkg/kubectl)
	echo "$s" >"$out/.kubernetes.stamp"
	echo "e2e: Kubernetes built in $((SECONDS - t0)) s" >&2
}

# containerd 2 from its Go module (no replace directives: go install works).
# Without cgo the btrfs snapshotter drops out by itself; the tags drop the
# others this node does not use. The runc v2 shim is the one the CRI runtimes use.
build_containerd() {
	case "$stack" in *-containerd2) ;; *) return 0 ;; esac
	local s; s=$(echo "$containerd_version no_btrfs,no_devmapper,no_zfs" | sha256sum | cut -c1-16)
	if [ "$(cat "$out/.containerd.stamp" 2>/dev/null)" = "$s" ]; then return; fi
	echo "e2e: building containerd $containerd_version (cold: ~4 min)" >&2
	local t0=$SECONDS m=github.com/containerd/containerd/v2
	GOBIN=$out go install -tags no_btrfs,no_devmapper,no_zfs \
		-ldflags "-s -w -X $m/version.Version=$containerd_version -X $m/version.Revision=module-proxy" \
		$m/cmd/containerd@$containerd_version $m/cmd/containerd-shim-runc-v2@$containerd_version
	echo "$s" >"$out/.containerd.stamp"
	echo "e2e: containerd built in $((SECONDS - t0)) s" >&2
}

# Jaeger and the collector do not depend on the stack: built once in $base.
link_shared() {
	[ "$out" = "$base" ] && return 0
	ln -sf "$base/jaeger" "$out/jaeger"
	ln -sf "$base/otelcol" "$out/otelcol"
}

build_jaeger() {
	local out=$base
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
	local out=$base
	local s; s=$(sha256sum <"$here/otelcol/builder.yaml" | cut -c1-16)
	if [ "$(cat "$out/.otelcol.stamp" 2>/dev/null)" = "$s" ]; then return; fi
	echo "e2e: building the OpenTelemetry Collector v0.165.0 (cold: ~2 min)" >&2
	local t0=$SECONDS w; w=$(mktemp -d)
	GOBIN=$w go install go.opentelemetry.io/collector/cmd/builder@v0.165.0
	cp "$here/otelcol/builder.yaml" "$w/"
	(cd "$w" && ./builder --config builder.yaml --ldflags "-s -w" >"$w/build.log" 2>&1) || { cat "$w/build.log" >&2; rm -rf "$w"; return 1; }
	mv "$w/dist/otelcol" "$out/otelcol"
	rm -rf "$w"
	echo "$s" >"$out/.otelcol.stamp"
	echo "e2e: collector built in $((SECONDS - t0)) s" >&2
}

case "${1:-all}" in
kubernetes) build_kubernetes ;;
containerd) build_containerd ;;
jaeger) build_jaeger ;;
otelcol) build_otelcol ;;
all) build_kubernetes; build_containerd; build_jaeger; build_otelcol; link_shared ;;
*) echo "usage: $0 [all|kubernetes|containerd|jaeger|otelcol]" >&2; exit 2 ;;
esac
echo "$out"
