#!/usr/bin/env bash
# Builds a minimal OpenTelemetry Collector (OTLP receiver -> debug exporter)
# with the collector builder, for test/runtime's OTLP test. Prints its path.
# Cached under ${PODCHRON_CACHE:-$HOME/.cache/podchron}/otelcol/<version>.
set -euo pipefail
cache=${PODCHRON_CACHE:-$HOME/.cache/podchron}/otelcol/v0.165.0 # per version: a pin change rebuilds
bin=$cache/dist/otelcol-podchron
if [ -x "$bin" ]; then echo "$bin"; exit 0; fi
mkdir -p "$cache"
cat >"$cache/builder.yaml" <<YAML
dist:
  name: otelcol-podchron
  output_path: $cache/dist
receivers:
  - gomod: go.opentelemetry.io/collector/receiver/otlpreceiver v0.165.0
processors:
  - gomod: go.opentelemetry.io/collector/processor/batchprocessor v0.165.0
exporters:
  - gomod: go.opentelemetry.io/collector/exporter/debugexporter v0.165.0
providers:
  - gomod: go.opentelemetry.io/collector/confmap/provider/fileprovider v1.71.0
  - gomod: go.opentelemetry.io/collector/confmap/provider/envprovider v1.71.0
YAML
GOBIN=$cache go install go.opentelemetry.io/collector/cmd/builder@v0.165.0 >&2
(cd "$cache" && ./builder --config builder.yaml >&2)
echo "$bin"
