#!/usr/bin/env bash
# Builds cosign (COSIGN_VERSION) and syft (SYFT_VERSION) from the Go module
# proxy for the local release dry run (scripts/release-local.sh, make
# release-local) and prints cosign's path; syft sits beside it. Cached under
# ${PODCHRON_CACHE:-$HOME/.cache/podchron}/cosign/<cosign version>/ like
# scripts/build-helm.sh caches Helm.
#
# cosign signs and verifies the images, the chart and the SBOM attestation;
# syft writes the SBOM (SPDX JSON) of the image the way anchore/sbom-action
# does in .github/workflows/release.yaml.
#
# Pinned, not "newest": the module proxy here is a filtered mirror; these are
# the newest releases it serves that were seen building (`go install` works:
# no replace directives). Cold build times on this 2-core machine, shared
# with other work: see BUILD_TIMES below. Only stdout carries the path.
#
# BUILD_TIMES (2026-11-25, cold module cache, this machine at load average
# 25-38 on 2 cores from parallel builds): cosign v3.1.3 built in 3678 s of
# wall time (9 min 20 s user + 3 min 13 s system CPU); syft v1.57.1 not
# finished after 30 min (stopped); to be measured again on an idle machine.
# release.sh works without syft (SYFT=0): the image's own SPDX SBOM.
set -euo pipefail
export PATH="$PATH:/usr/local/go/bin"
GO=${GO:-go}
version=${COSIGN_VERSION:-v3.1.3}
syft_version=${SYFT_VERSION:-v1.57.1}

cache=${PODCHRON_CACHE:-$HOME/.cache/podchron}/cosign/$version
bin=$cache/cosign
syft=$cache/syft
ok() { [ -x "$1" ] && "$1" version >/dev/null 2>&1; }
# SYFT=0: cosign only (scripts/release.sh then attests the SBOM the image
# build wrote itself, deploy/imagebuild).
want_syft=${SYFT:-1}
if ok "$bin" && { [ "$want_syft" = 0 ] || ok "$syft"; }; then
	echo "$bin"
	exit 0
fi

mkdir -p "$cache"
work=$(mktemp -d "$cache/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
major=${version%%.*}
if ! ok "$bin"; then
	start=$(date +%s)
	echo "build-cosign: building github.com/sigstore/cosign/$major/cmd/cosign@$version" >&2
	# cosign's version string comes from ldflags (sigs.k8s.io/release-utils).
	GOBIN="$work" GOFLAGS=-mod=mod CGO_ENABLED=0 "$GO" install -trimpath \
		-ldflags "-X sigs.k8s.io/release-utils/version.gitVersion=$version" \
		"github.com/sigstore/cosign/$major/cmd/cosign@$version" >&2
	mv -f "$work/cosign" "$bin"
	echo "build-cosign: cosign $version built in $(($(date +%s) - start)) s" >&2
fi
if [ "$want_syft" != 0 ] && ! ok "$syft"; then
	start=$(date +%s)
	echo "build-cosign: building github.com/anchore/syft/cmd/syft@$syft_version" >&2
	GOBIN="$work" GOFLAGS=-mod=mod CGO_ENABLED=0 "$GO" install -trimpath \
		-ldflags "-X main.version=${syft_version#v}" \
		"github.com/anchore/syft/cmd/syft@$syft_version" >&2
	mv -f "$work/syft" "$syft"
	echo "build-cosign: syft $syft_version built in $(($(date +%s) - start)) s" >&2
fi
echo "build-cosign: $bin, $syft" >&2
echo "$bin"
