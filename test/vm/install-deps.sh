#!/usr/bin/env bash
# Installs the Debian packages the VM test runner (go run ./test/vm) needs on
# the host, at the newest version Debian serves (install or upgrade, after an
# `apt-get update` every time). Idempotent; needs root (or sudo) and apt.
#   qemu-system-x86              qemu-system-x86_64 (TCG is enough, no KVM needed)
#   busybox-static               /bin/busybox for the guest's initramfs
#   containernetworking-plugins  /usr/lib/cni/loopback, exec'd by the probe tests; bridge and
#                                host-local for the pure cgroup v2 node (make test-vm-node)
#   containerd, runc             the node's runtime (make test-vm-node copies the host's binaries,
#                                with their shared libraries, into the guest)
#   xz-utils                     xz(1): Debian's 6.12 kernel ships xz-compressed modules
#   systemd                      PID 1 of the systemd-driver node (make test-vm-node-systemd copies
#                                the host's systemd and systemctl into the guest; it never runs here)
# The kernel itself is not installed: the runner fetches it with
# `apt-get download`, which needs current apt lists (the update below).
set -euo pipefail

pkgs=(qemu-system-x86 busybox-static containernetworking-plugins containerd runc xz-utils systemd)

sudo=()
if [ "$(id -u)" -ne 0 ]; then
	sudo=(sudo)
fi

"${sudo[@]}" apt-get -o DPkg::Lock::Timeout=600 update -q
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "${pkgs[@]}"
