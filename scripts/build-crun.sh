#!/usr/bin/env bash
# Builds a crun new enough for containerd 2 (which writes runtime-spec 1.3.0:
# Debian 12's crun 1.8.1 refuses every sandbox, "unknown version
# specified") and prints the binary's path. Cached under
# ${PODCHRON_CACHE:-$HOME/.cache/podchron}/crun/<version>/crun.
#
# The source is Debian's own package of the upstream release (trixie's
# crun_<version>.orig.tar.gz, which is the upstream release tarball with
# configure generated): the Debian archive is reachable where GitHub is
# not, and its checksum is pinned here. Its binary package needs trixie's
# libc, so it is built on this host instead: without systemd (containerd's
# cgroupfs driver), criu or wasm handlers. Needs gcc, make, pkg-config,
# libcap-dev, libseccomp-dev, libyajl-dev, gperf (scripts/install-deps.sh).
# Only stdout carries the path.
set -euo pipefail
version=${CRUN_VERSION:-1.21}
sha256=${CRUN_SHA256:-4bfb700e764a4804a4de3ecf07753f4c391005356d60356df65d80ae0914c486}
url=${CRUN_URL:-http://deb.debian.org/debian/pool/main/c/crun/crun_${version}.orig.tar.gz}

cache=${PODCHRON_CACHE:-$HOME/.cache/podchron}/crun/$version
bin=$cache/crun
if [ -x "$bin" ] && "$bin" --version >/dev/null 2>&1; then
	echo "$bin"
	exit 0
fi
for h in sys/capability.h seccomp.h yajl/yajl_tree.h; do
	[ -e "/usr/include/$h" ] || { echo "build-crun: /usr/include/$h is missing (scripts/install-deps.sh installs the -dev packages)" >&2; exit 1; }
done
command -v gperf >/dev/null || { echo "build-crun: gperf is missing (scripts/install-deps.sh)" >&2; exit 1; }

echo "build-crun: building crun $version from $url" >&2
start=$(date +%s)
mkdir -p "$cache"
work=$(mktemp -d "$cache/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
curl -fsSL --retry 3 -o "$work/src.tar.gz" "$url"
echo "$sha256  $work/src.tar.gz" | sha256sum -c --quiet - >&2 ||
	{ echo "build-crun: $url does not match the pinned sha256 $sha256" >&2; exit 1; }
tar -xzf "$work/src.tar.gz" -C "$work"
cd "$work/crun-$version"
./configure --disable-systemd --disable-criu --disable-dl --enable-shared=no >"$work/configure.log" 2>&1 ||
	{ tail -30 "$work/configure.log" >&2; exit 1; }
{ make git-version.h && make -j"$(nproc)" crun; } >"$work/make.log" 2>&1 || { tail -30 "$work/make.log" >&2; exit 1; }
./crun --version >&2
mv -f crun "$bin"
echo "build-crun: $bin ($(($(date +%s) - start)) s)" >&2
echo "$bin"
