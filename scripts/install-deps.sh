#!/usr/bin/env bash
# Installs what podchron needs to build and test on Debian bookworm (as root),
# each package at the newest version Debian serves: a fresh machine is the
# reference, so this always refreshes the package lists and installs or
# upgrades the whole list (a package that is present but old is upgraded),
# then checks that every package is at its candidate version.
#   crun                           the second OCI runtime of the runtime matrix (test/runtime, demo -runtime crun)
#   libseccomp-dev, pkg-config     scripts/build-runc.sh builds upstream runc with seccomp (cgo)
#   gcc, libc6-dev                 cgo for that build
#   libcap-dev, libyajl-dev, gperf, curl scripts/build-crun.sh builds a crun that knows runtime-spec 1.3 (containerd 2's leg)
#   jq                             scripts/test-failures.sh: why each e2e scenario failed, from go test -json
set -euo pipefail
pkgs=(clang-19 clang-format-19 llvm-19 libbpf-dev bpftool make git gcc libc6-dev pkg-config
      containerd runc crun libseccomp-dev containernetworking-plugins busybox-static iptables
      qemu-system-x86 cpio prometheus etcd-server openssl iproute2 libcap-dev libyajl-dev gperf curl jq)
export DEBIAN_FRONTEND=noninteractive
apt=(apt-get -o DPkg::Lock::Timeout=600)  # another apt run (a second `make deps`) is waited for
"${apt[@]}" update -qq
# install = install missing + upgrade present ones to the candidate.
"${apt[@]}" install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
stale=()
for p in "${pkgs[@]}"; do
	installed=$(dpkg-query -W -f='${Version}' "$p" 2>/dev/null || true)
	candidate=$(apt-cache policy "$p" | sed -n 's/^ *Candidate: //p')
	if [ -z "$installed" ] || [ "$installed" != "$candidate" ]; then
		stale+=("$p (installed ${installed:-none}, Debian serves $candidate)")
	fi
done
if ((${#stale[@]})); then
	printf 'install-deps: not at the newest version Debian serves: %s\n' "${stale[@]}" >&2
	exit 1
fi
# tracefs for classic tracepoints (oom/mark_victim)
if [ ! -d /sys/kernel/tracing/events ]; then
	mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null || true
fi
# crun (test/runtime runs every scenario on runc, upstream runc and crun)
# refuses a hybrid cgroup host whose cgroup v2 hierarchy still holds
# controllers ("cgroups in hybrid mode not supported, drop all controllers
# from cgroupv2"). On hybrid hosts systemd binds every controller to a v1
# hierarchy; do the same for any left in cgroup2 (hugetlb on these machines).
if [ "$(stat -fc %T /sys/fs/cgroup 2>/dev/null)" = tmpfs ] && [ "$(stat -fc %T /sys/fs/cgroup/unified 2>/dev/null)" = cgroup2fs ]; then
	for c in $(cat /sys/fs/cgroup/unified/cgroup.controllers); do
		mkdir -p "/sys/fs/cgroup/$c"
		mountpoint -q "/sys/fs/cgroup/$c" || mount -t cgroup -o "$c" cgroup "/sys/fs/cgroup/$c" ||
			echo "install-deps: could not bind the $c controller to cgroup v1; crun will refuse this host" >&2
	done
fi
