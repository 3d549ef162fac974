# syntax=docker/dockerfile:1
#
# podchron tracer image: one static Go binary on distroless.
#
#   docker build -t ghcr.io/podchron/podchron:dev --build-arg VERSION=$(git describe --always --dirty) .
#   docker buildx build --platform linux/amd64,linux/arm64 -t ... --push .
#
# Without a Docker engine, deploy/build-image.sh builds an equivalent OCI
# archive from bin/tracer and imports it with `ctr`.
#
# The eBPF object (internal/probe/podchron_bpfel.o) is generated and
# committed (`make generate`), so this build needs neither clang nor kernel
# headers: it is the same `go build` the Makefile runs, plus the version.

ARG GO_VERSION=1.26.8

# Build stage. It runs on the build host's platform and cross-compiles
# (CGO_ENABLED=0, pure Go; the BPF object is little-endian, which covers
# amd64 and arm64).
FROM --platform=$BUILDPLATFORM golang:${GO_VERSION}-bookworm AS build
ARG TARGETOS=linux
ARG TARGETARCH
ARG VERSION=dev
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod \
    go mod download
COPY cmd/ cmd/
COPY internal/ internal/
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/tracer ./cmd/tracer

# Final stage: distroless static (CA certificates for an https OTLP
# endpoint, /etc/passwd, tzdata; no shell, no package manager).
#
# The root variant on purpose, and USER 0 made explicit: the tracer runs as
# uid 0 with every capability dropped except CAP_BPF and CAP_PERFMON (see
# deploy/daemonset.yaml). A non-root uid would not help: Kubernetes sets no
# ambient capabilities, so a non-root process loses the capabilities the
# pod adds at execve and cannot load BPF; file capabilities on the binary
# would need allowPrivilegeEscalation: true; and the CRI socket
# (root:root 0660) and tracefs (root 0700) are only reachable by uid 0
# without CAP_DAC_OVERRIDE.
FROM gcr.io/distroless/static-debian12:latest
ARG VERSION=dev
LABEL org.opencontainers.image.title="podchron" \
      org.opencontainers.image.description="eBPF pod lifecycle tracer: one OpenTelemetry trace per pod, Prometheus metrics" \
      org.opencontainers.image.source="https://github.com/podchron/podchron" \
      org.opencontainers.image.version="${VERSION}"
COPY --from=build /out/tracer /tracer
USER 0:0
EXPOSE 9464
ENTRYPOINT ["/tracer"]
