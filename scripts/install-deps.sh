#!/usr/bin/env bash
# Installs what podtrace needs to build and test on Debian bookworm (as root).
set -euo pipefail
pkgs=(clang-19 llvm-19 libbpf-dev bpftool make git
      containerd runc crun containernetworking-plugins busybox-static iptables
      gcc libc6-dev pkg-config libseccomp-dev
      qemu-system-x86 cpio prometheus etcd-server openssl iproute2)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
	echo "installing: ${missing[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
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
