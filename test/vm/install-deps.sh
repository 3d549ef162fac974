#!/usr/bin/env bash
# Installs the Debian packages the VM test runner (go run ./test/vm) needs on
# the host, if they are missing. Idempotent; needs root (or sudo) and apt.
#   qemu-system-x86              qemu-system-x86_64 (TCG is enough, no KVM needed)
#   busybox-static               /bin/busybox for the guest's initramfs
#   containernetworking-plugins  /usr/lib/cni/loopback, exec'd by the probe tests
# The kernel itself is not installed: the runner fetches it with
# `apt-get download`, which needs current apt lists (`apt-get update`).
set -euo pipefail

pkgs=(qemu-system-x86 busybox-static containernetworking-plugins)
missing=()
for p in "${pkgs[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done

sudo=()
if [ "$(id -u)" -ne 0 ]; then
	sudo=(sudo)
fi

# apt-get download (used by the runner for the kernel) needs package lists.
if [ "${#missing[@]}" -gt 0 ] || ! compgen -G "/var/lib/apt/lists/*_Packages*" >/dev/null; then
	"${sudo[@]}" apt-get update -q
fi
if [ "${#missing[@]}" -gt 0 ]; then
	echo "test/vm: installing ${missing[*]}" >&2
	DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
