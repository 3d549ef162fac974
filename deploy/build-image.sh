#!/usr/bin/env bash
# Build podchron's container image WITHOUT Docker: the static tracer,
# cross-compiled for each platform, packed into one multi-platform OCI image
# archive (deploy/imagebuild: FROM scratch, an image index over the
# platforms, an SPDX SBOM in each image and attached to it), optionally
# imported into containerd's k8s.io namespace, where the kubelet finds it.
#
#   deploy/build-image.sh                      # -> bin/podchron-image.tar (linux/amd64 + linux/arm64)
#   deploy/build-image.sh --import             # ... and ctr import into /run/containerd/containerd.sock
#   IMAGE=registry.example/podchron:v1 VERSION=v1 deploy/build-image.sh
#
# Environment:
#   IMAGE     image name (default ghcr.io/podchron/podchron:dev, what deploy/daemonset.yaml uses)
#   VERSION   version baked into the binary and the image label (default: git describe)
#   PLATFORMS platforms to build (default "linux/amd64 linux/arm64"; the eBPF
#             object is little-endian CO-RE, the binary pure Go: CGO_ENABLED=0)
#   OUT       archive path (default bin/podchron-image.tar)
#   SOURCE_DATE_EPOCH  timestamp of the image and SBOM (default: the last commit's)
#   CONTAINERD_ADDRESS  containerd socket for --import (default /run/containerd/containerd.sock;
#             k3s: /run/k3s/containerd/containerd.sock)
#
# --import imports the node's own platform (ctr picks it from the index).
# Copy the archive to each node and import it there (see deploy/README.md),
# or push every platform to a registry with a tool that reads OCI archives
# (skopeo copy --multi-arch all oci-archive:ARCHIVE:TAG docker://...).
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
PLATFORMS="${PLATFORMS:-linux/amd64 linux/arm64}"
OUT="${OUT:-bin/podchron-image.tar}"
CONTAINERD_ADDRESS="${CONTAINERD_ADDRESS:-/run/containerd/containerd.sock}"
GO="${GO:-go}"
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
	SOURCE_DATE_EPOCH="$(git log -1 --format=%ct 2>/dev/null || true)"
fi
export SOURCE_DATE_EPOCH

bindir="$(mktemp -d)"
trap 'rm -rf "$bindir"' EXIT

binaries=()
for platform in $PLATFORMS; do
	os="${platform%%/*}" arch="${platform#*/}"
	if [ "$os" != linux ] || [ "$arch" = "$platform" ]; then
		echo "build-image.sh: platform $platform: want linux/<arch>" >&2
		exit 2
	fi
	echo ">> building the tracer ($VERSION, $platform)"
	# Same flags as the Dockerfile's build stage.
	CGO_ENABLED=0 GOOS="$os" GOARCH="$arch" "$GO" build -trimpath -ldflags "-s -w -X main.version=${VERSION}" \
		-o "$bindir/tracer-$arch" ./cmd/tracer
	binaries+=(-binary "$bindir/tracer-$arch")
done

# The CA bundle's Debian package, for the SBOM.
ca_version="$(dpkg-query -W -f='${Version}' ca-certificates 2>/dev/null || true)"

echo ">> writing the OCI archive"
"$GO" run ./deploy/imagebuild "${binaries[@]}" -name "$IMAGE" -out "$OUT" -version "$VERSION" -ca-version "$ca_version"

if $import; then
	echo ">> importing into containerd ($CONTAINERD_ADDRESS, namespace k8s.io)"
	ctr -a "$CONTAINERD_ADDRESS" -n k8s.io images import "$OUT"
	ctr -a "$CONTAINERD_ADDRESS" -n k8s.io images ls "name==$IMAGE"
fi
