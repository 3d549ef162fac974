# syntax=docker/dockerfile:1.7@sha256:a57df69d0ea827fb7266491f2813635de6f17269be881f696fbfdf2d83dda33e
#
# podchron tracer image: one static Go binary, FROM scratch.
#
#   docker build -t ghcr.io/podchron/podchron:dev --build-arg VERSION=$(git describe --always --dirty) .
#   docker buildx build --platform linux/amd64,linux/arm64 -t ... --push .
#
# Without a Docker engine, deploy/build-image.sh builds the same image (both
# platforms, one OCI archive) and imports it with `ctr`.
#
# The eBPF object (internal/probe/event/podchron_bpfel.o) is generated and
# committed (`make generate`), so this build needs neither clang nor kernel
# headers: it is the same `go build` the Makefile runs, plus the version.
#
# Every image named here is pinned by digest (the frontend above, the Go
# image below); the final image has no base image at all. The digests are
# those of the tags' multi-platform indexes; refresh them together with
# go.mod's go version (deploy_test.go checks that the tag and go.mod agree):
#   docker buildx imagetools inspect golang:<version>-bookworm
#   docker buildx imagetools inspect docker/dockerfile:1.7

# Build stage. It runs on the build host's platform and cross-compiles
# (CGO_ENABLED=0, pure Go; the BPF object is little-endian CO-RE, which
# covers amd64 and arm64).
FROM --platform=$BUILDPLATFORM golang:1.26.8-bookworm@sha256:9fdc884aacc3bec89b20ffc69f4bb369c78210e3e4f600387b5128b12c199f81 AS build
ARG TARGETOS=linux
ARG TARGETARCH
ARG VERSION=dev
ARG SOURCE_DATE_EPOCH
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod \
    go mod download
COPY cmd/ cmd/
COPY internal/ internal/
COPY deploy/imagebuild/ deploy/imagebuild/
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/tracer ./cmd/tracer
# The image's files, as deploy/build-image.sh writes them: /tracer,
# /etc/passwd, /etc/group, Debian's CA bundle (for an https OTLP endpoint)
# and the SPDX SBOM (the binary's modules, the Go toolchain, the
# ca-certificates package version) at /usr/share/doc/podchron/.
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    go run ./deploy/imagebuild -rootfs /rootfs -binary /out/tracer -name podchron -version "${VERSION}" \
      -ca-version "$(dpkg-query -W -f='${Version}' ca-certificates)"

# Final stage: nothing but those files (no shell, no package manager).
#
# Root on purpose, and USER 0 made explicit: the tracer runs as uid 0 with
# every capability dropped except CAP_BPF and CAP_PERFMON (see
# deploy/daemonset.yaml). A non-root uid would not help: Kubernetes sets no
# ambient capabilities, so a non-root process loses the capabilities the
# pod adds at execve and cannot load BPF; file capabilities on the binary
# would need allowPrivilegeEscalation: true; and the CRI socket
# (root:root 0660) and tracefs (root 0700) are only reachable by uid 0
# without CAP_DAC_OVERRIDE.
FROM scratch
ARG VERSION=dev
LABEL org.opencontainers.image.title="podchron" \
      org.opencontainers.image.description="eBPF pod lifecycle tracer: one OpenTelemetry trace per pod, Prometheus metrics" \
      org.opencontainers.image.source="https://github.com/podchron/podchron" \
      org.opencontainers.image.version="${VERSION}"
COPY --from=build /rootfs/ /
USER 0:0
EXPOSE 9464
ENTRYPOINT ["/tracer"]
