#!/usr/bin/env bash
# Prints the versions the tests run with: kernel, OCI runtimes, containerd,
# and the toolchain. `make test` calls it first, so that every test log says
# what it ran on; each e2e leg calls it again with PODCHRON_E2E_BIN set, which
# adds the leg's Kubernetes and containerd. Never fails: a missing tool is reported as such.
set -uo pipefail
export PATH="$PATH:/usr/local/go/bin:/usr/sbin:/sbin"

first() { # first line of a command's output, or "not installed"
	if command -v "$1" >/dev/null 2>&1; then
		"$@" 2>&1 | head -n 1
	else
		echo "not installed"
	fi
}
pkg() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || echo "-"; }

echo "== versions the tests run with ($(date -u +%FT%TZ))"
printf '%-16s %s\n' kernel "$(uname -r) ($(uname -v))"
printf '%-16s %s (deb %s)\n' runc "$(first runc --version)" "$(pkg runc)"
printf '%-16s %s (deb %s)\n' crun "$(first crun --version)" "$(pkg crun)"
if [ -n "${PODCHRON_RUNC_UPSTREAM:-}" ]; then
	printf '%-16s %s (%s)\n' runc-upstream "$(first "$PODCHRON_RUNC_UPSTREAM" --version)" "$PODCHRON_RUNC_UPSTREAM"
fi
printf '%-16s %s (deb %s)\n' containerd "$(first containerd --version)" "$(pkg containerd)"
printf '%-16s %s\n' cni-plugins "deb $(pkg containernetworking-plugins)"
printf '%-16s %s\n' go "$(first go version)"
printf '%-16s %s\n' clang "$(first clang-19 --version)"
# An e2e leg (make e2e): the stack's own Kubernetes and containerd (test/e2e/tools/build.sh).
if [ -n "${PODCHRON_E2E_BIN:-}" ]; then
	printf '%-16s %s (%s)\n' e2e-stack "${PODCHRON_E2E_STACK:-default}" "$PODCHRON_E2E_BIN"
	printf '%-16s %s\n' e2e-kubelet "$(first "$PODCHRON_E2E_BIN/kubelet" --version)"
	printf '%-16s %s\n' e2e-apiserver "$(first "$PODCHRON_E2E_BIN/kube-apiserver" --version)"
	if [ -x "$PODCHRON_E2E_BIN/containerd" ]; then
		printf '%-16s %s\n' e2e-containerd "$(first "$PODCHRON_E2E_BIN/containerd" --version)"
	else
		printf '%-16s %s\n' e2e-containerd "Debian's (above)"
	fi
fi
printf '%-16s %s\n' oci-runtime "${PODCHRON_OCI_RUNTIME:-runc} (PODCHRON_OCI_RUNTIME)"
printf '%-16s %s\n' test-load "${PODCHRON_TEST_LOAD:-off} (PODCHRON_TEST_LOAD)"
exit 0
