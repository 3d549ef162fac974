#!/usr/bin/env bash
# Builds gotestsum (GOTESTSUM_VERSION, default below) from the Go module
# proxy and prints the binary's path. Cached under
# ${PODCHRON_CACHE:-$HOME/.cache/podchron}/gotestsum/<version>/.
#
# The e2e runs `go test -json` through it, printed as `go test -v` prints
# it; scripts/test-failures.sh reads the same JSON after a failure and
# prints why each scenario failed at the end, so the tail of a long CI log
# says why, not only that (2026-12-07: CI's tail showed "--- FAIL:
# TestCluster/62-..." and no message; the message was 14 minutes up the
# log). Only stdout carries the path.
set -euo pipefail
version=${GOTESTSUM_VERSION:-v1.13.0}
exec bash "$(dirname "$0")/build-go-tool.sh" gotestsum gotest.tools/gotestsum "$version" --version
