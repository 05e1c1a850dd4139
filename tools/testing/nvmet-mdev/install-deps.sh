#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Install the Debian packages the build, the VM harness and the tests use.
# Does nothing (and needs no network) when they are all there already.
set -euo pipefail

pkgs=(
	# kernel build
	build-essential bc bison flex libelf-dev libssl-dev cpio kmod xz-utils
	ccache sparse dwarves python3 rsync perl
	# VM harness and tests inside it
	qemu-system-x86 qemu-utils busybox-static e2fsprogs util-linux procps
	nvme-cli fio mdevctl iproute2 pciutils
	# 13-libvirt: libvirtd and virsh (no libvirt-daemon-system: the test
	# runs its own libvirtd in the host VM, no service on this machine)
	libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients
)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' ||
		missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "install-deps: installing ${missing[*]}"
[ "$(id -u)" -eq 0 ] || { echo "install-deps: run as root (or sudo make deps)" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive
apt-get -q update
apt-get -q install -y --no-install-recommends "${missing[@]}"
