#!/usr/bin/env bash
# Builds, publishes, signs and attests one podchron release: what
# .github/workflows/release.yaml runs on a tag (ghcr.io, keyless cosign) and
# scripts/release-local.sh runs in CI (a local registry, a key made for the
# run). Writes everything to $OUT (default bin/release):
#
#   podchron-image.tar       the multi-arch OCI image archive (deploy/build-image.sh)
#   podchron-<ver>.tgz       the packaged chart
#   podchron.spdx.json       the image's SBOM (syft, SPDX JSON), attested on the image index
#   krew/*.tar.gz(+.sha256, .sigstore.json)  kubectl-podchron for krew, when cmd/kubectl-podchron exists
#   release.txt, release.env what was pushed, by digest
#
# Environment:
#   REGISTRY    registry and namespace (ghcr.io/podchron): the image goes to
#               $REGISTRY/podchron:$VERSION, the chart to oci://$REGISTRY/charts/podchron
#   VERSION     the release tag, v<semver> (the chart's version is without the v)
#   COSIGN      cosign binary (default: scripts/build-cosign.sh), syft beside it
#   HELM        helm binary (default: scripts/build-helm.sh), crane beside it
#   COSIGN_KEY  a cosign private key (COSIGN_PASSWORD for it): sign with it, no
#               transparency log. Empty: keyless (Fulcio + Rekor; in GitHub
#               Actions the workflow's OIDC identity, id-token: write)
#   PLAIN_HTTP  1: the registry speaks plain HTTP (crane registry serve)
#   PLATFORMS   default "linux/amd64 linux/arm64"
#   KREW_PLATFORMS  kubectl-podchron's archives (default: linux, darwin amd64/arm64, windows/amd64;
#               the CI dry run builds linux/amd64 and darwin/arm64 only: each platform
#               compiles client-go anew, minutes on 2 cores)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$PATH:/usr/local/go/bin"
GO=${GO:-go}

: "${REGISTRY:?REGISTRY is required (e.g. ghcr.io/podchron)}"
: "${VERSION:?VERSION is required (v<semver>)}"
case "$VERSION" in v[0-9]*.[0-9]*.[0-9]*) ;; *)
	echo "release: VERSION=$VERSION: want v<semver>" >&2
	exit 2
	;;
esac
chart_version=${VERSION#v}
OUT=${OUT:-bin/release}
PLATFORMS=${PLATFORMS:-linux/amd64 linux/arm64}
COSIGN=${COSIGN:-$(bash scripts/build-cosign.sh)}
HELM=${HELM:-$(bash scripts/build-helm.sh)}
syft="$(dirname "$COSIGN")/syft"
crane="$(dirname "$HELM")/crane"
image="$REGISTRY/podchron"
chart_repo="$REGISTRY/charts"

# Registry access flags for each tool.
cosign_reg=() helm_reg=() crane_reg=()
if [ "${PLAIN_HTTP:-}" = 1 ]; then
	cosign_reg=(--allow-http-registry --allow-insecure-registry)
	helm_reg=(--plain-http)
	crane_reg=(--insecure)
	export SYFT_REGISTRY_INSECURE_USE_HTTP=true
fi
# Signing: with a key, nothing leaves the machine (no Fulcio, no Rekor).
cosign_sign=(--yes)
if [ -n "${COSIGN_KEY:-}" ]; then
	cosign_sign+=(--key "$COSIGN_KEY" --use-signing-config=false --tlog-upload=false)
fi

rm -rf "$OUT"
mkdir -p "$OUT"
step() { echo ">> release: $*" >&2; }

# 1. The image: one OCI index over the platforms, pushed by digest.
step "image $image:$VERSION ($PLATFORMS)"
IMAGE="$image:$VERSION" VERSION="$VERSION" PLATFORMS="$PLATFORMS" OUT="$OUT/podchron-image.tar" \
	bash deploy/build-image.sh >&2
# The archive's index.json also lists the per-platform SBOM artifacts
# (deploy/imagebuild); push the image index alone, from a layout that lists
# only it.
layout="$OUT/image-layout"
mkdir -p "$layout"
tar -xf "$OUT/podchron-image.tar" -C "$layout"
cp "$layout/index.json" "$layout/index.json.full"
python3 - "$layout/index.json" <<'PY'
import json, sys
p = sys.argv[1]
idx = json.load(open(p))
idx["manifests"] = [m for m in idx["manifests"] if m["mediaType"] == "application/vnd.oci.image.index.v1+json"]
assert len(idx["manifests"]) == 1, idx["manifests"]
json.dump(idx, open(p, "w"))
PY
image_ref=$("$crane" push "${crane_reg[@]}" "$layout" "$image:$VERSION")
image_digest=${image_ref#*@}

# 2. The SBOM of the image (its Go modules, the CA bundle): syft, as
# anchore/sbom-action runs it. The platforms' binaries are built from the
# same go.mod, so one platform's package list is the image's. Without syft
# (SYFT=0 for scripts/build-cosign.sh), the SPDX document deploy/imagebuild
# wrote into the image from the binary's build information.
if [ -x "$syft" ]; then
	step "SBOM (syft, SPDX JSON) of $image_ref"
	"$syft" scan --quiet --platform linux/amd64 "registry:$image_ref" -o "spdx-json=$OUT/podchron.spdx.json"
	sbom_by=syft
else
	step "SBOM: no syft beside cosign; the image's own (deploy/imagebuild)"
	python3 - "$layout" "$OUT/podchron.spdx.json" <<'PY'
import json, os, sys
layout, out = sys.argv[1:]
blob = lambda d: open(os.path.join(layout, "blobs", *d.split(":")), "rb").read()
index = json.loads(blob(json.load(open(os.path.join(layout, "index.json")))["manifests"][0]["digest"]))
amd64 = next(m for m in index["manifests"] if m["platform"]["architecture"] == "amd64")
full = json.load(open(os.path.join(layout, "index.json.full")))
for ref in full["manifests"]:
    m = json.loads(blob(ref["digest"]))
    if m.get("subject", {}).get("digest") == amd64["digest"]:
        open(out, "wb").write(blob(m["layers"][0]["digest"]))
        break
else:
    sys.exit("no SBOM artifact for linux/amd64 in the archive")
PY
	sbom_by=deploy/imagebuild
fi

# 3. The chart, versioned like the release, its Artifact Hub image annotation
# naming this release's image.
step "chart $chart_repo/podchron:$chart_version"
chart_src="$OUT/chart-src"
cp -r deploy/helm/podchron "$chart_src"
sed -i "s|image: ghcr.io/podchron/podchron:dev|image: $image:$VERSION|" "$chart_src/Chart.yaml"
"$HELM" package "$chart_src" --version "$chart_version" --app-version "$VERSION" -d "$OUT" >&2
chart_tgz="$OUT/podchron-$chart_version.tgz"
push_out=$("$HELM" push "$chart_tgz" "oci://$chart_repo" "${helm_reg[@]}" 2>&1)
echo "$push_out" >&2
chart_digest=$(echo "$push_out" | sed -n 's/^Digest: //p')
[ -n "$chart_digest" ] || {
	echo "release: no digest from helm push" >&2
	exit 1
}
chart_ref="$chart_repo/podchron@$chart_digest"

# 4. Signatures and the SBOM attestation, on the digests.
step "signing $image_ref, $chart_ref; attesting the SBOM"
"$COSIGN" sign "${cosign_sign[@]}" "${cosign_reg[@]}" "$image_ref" >&2
"$COSIGN" attest "${cosign_sign[@]}" "${cosign_reg[@]}" --type spdxjson --predicate "$OUT/podchron.spdx.json" "$image_ref" >&2
"$COSIGN" sign "${cosign_sign[@]}" "${cosign_reg[@]}" "$chart_ref" >&2

# 5. kubectl-podchron for krew: one archive per platform, its SHA-256 (the
# krew manifest's sha256) and a cosign bundle.
if [ -d cmd/kubectl-podchron ]; then
	mkdir -p "$OUT/krew"
	for p in ${KREW_PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64}; do
		os=${p%/*} arch=${p#*/} exe=kubectl-podchron
		[ "$os" = windows ] && exe=kubectl-podchron.exe
		step "krew archive $os/$arch"
		d=$(mktemp -d)
		CGO_ENABLED=0 GOOS=$os GOARCH=$arch "$GO" build -trimpath -ldflags "-s -w -X main.version=$VERSION" \
			-o "$d/$exe" ./cmd/kubectl-podchron
		cp README.md "$d/"
		a="$OUT/krew/kubectl-podchron_${VERSION}_${os}_${arch}.tar.gz"
		tar -C "$d" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@${SOURCE_DATE_EPOCH:-0}" \
			-czf "$a" "$exe" README.md
		rm -rf "$d"
		(cd "$OUT/krew" && sha256sum "$(basename "$a")" >"$(basename "$a").sha256")
		"$COSIGN" sign-blob "${cosign_sign[@]}" --bundle "$a.sigstore.json" "$a" >/dev/null
	done
else
	step "no cmd/kubectl-podchron: no krew archives"
fi

cat >"$OUT/release.env" <<ENV
IMAGE_REF=$image_ref
CHART_REF=$chart_ref
CHART_OCI=oci://$chart_repo/podchron
CHART_VERSION=$chart_version
ENV
{
	echo "podchron $VERSION"
	echo "image  $image:$VERSION"
	echo "       $image_ref"
	"$crane" manifest "${crane_reg[@]}" "$image_ref" | python3 -c '
import json, sys
for m in json.load(sys.stdin)["manifests"]:
    p = m.get("platform", {})
    print("       %s/%s %s" % (p.get("os"), p.get("architecture"), m["digest"]))'
	echo "chart  oci://$chart_repo/podchron:$chart_version"
	echo "       $chart_ref"
	echo "sbom   $(sha256sum "$OUT/podchron.spdx.json" | cut -d' ' -f1) podchron.spdx.json ($(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["packages"]))' "$OUT/podchron.spdx.json") packages, by $sbom_by), attested on the image (spdxjson)"
	for f in "$OUT"/krew/*.sha256; do [ -e "$f" ] && echo "krew   $(cat "$f")"; done
} | tee "$OUT/release.txt"
