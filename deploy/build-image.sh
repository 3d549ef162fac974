#!/usr/bin/env bash
# Build podchron's container image WITHOUT Docker: a static tracer binary
# packed into an OCI image archive (deploy/imagebuild), optionally imported
# into containerd's k8s.io namespace, where the kubelet finds it.
#
#   deploy/build-image.sh                      # -> bin/podchron-image.tar
#   deploy/build-image.sh --import             # ... and ctr import into /run/containerd/containerd.sock
#   IMAGE=registry.example/podchron:v1 VERSION=v1 deploy/build-image.sh
#
# Environment:
#   IMAGE     image name (default ghcr.io/podchron/podchron:dev, what deploy/daemonset.yaml uses)
#   VERSION   version baked into the binary and the image label (default: git describe)
#   OUT       archive path (default bin/podchron-image.tar)
#   CONTAINERD_ADDRESS  containerd socket for --import (default /run/containerd/containerd.sock;
#             k3s: /run/k3s/containerd/containerd.sock)
#
# The image is for this machine's architecture. Copy the archive to each
# node and import it there (see deploy/README.md), or push it to a registry
# with a tool that reads OCI archives (skopeo copy oci-archive:...).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

import=false
for arg in "$@"; do
	case "$arg" in
	--import) import=true ;;
	-h | --help)
		sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "build-image.sh: unknown argument $arg (try --help)" >&2
		exit 2
		;;
	esac
done

IMAGE="${IMAGE:-ghcr.io/podchron/podchron:dev}"
VERSION="${VERSION:-$(git describe --always --dirty 2>/dev/null || echo dev)}"
OUT="${OUT:-bin/podchron-image.tar}"
CONTAINERD_ADDRESS="${CONTAINERD_ADDRESS:-/run/containerd/containerd.sock}"
GO="${GO:-go}"

bindir="$(mktemp -d)"
trap 'rm -rf "$bindir"' EXIT

echo ">> building the tracer ($VERSION)"
# Same flags as the Dockerfile's build stage.
CGO_ENABLED=0 GOOS=linux "$GO" build -trimpath -ldflags "-s -w -X main.version=${VERSION}" \
	-o "$bindir/tracer" ./cmd/tracer

echo ">> writing the OCI archive"
"$GO" run ./deploy/imagebuild -binary "$bindir/tracer" -name "$IMAGE" -out "$OUT" -version "$VERSION"

if $import; then
	echo ">> importing into containerd ($CONTAINERD_ADDRESS, namespace k8s.io)"
	ctr -a "$CONTAINERD_ADDRESS" -n k8s.io images import "$OUT"
	ctr -a "$CONTAINERD_ADDRESS" -n k8s.io images ls "name==$IMAGE"
fi
