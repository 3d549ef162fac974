#!/usr/bin/env bash
# Installs what podtrace needs to build and test on Debian bookworm (as root).
set -euo pipefail
pkgs=(clang-19 llvm-19 libbpf-dev bpftool make git
      containerd runc containernetworking-plugins busybox-static iptables
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
