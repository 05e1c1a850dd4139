#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# QEMU opens an mdev through iommufd (-object iommufd, -device
# vfio-pci,sysfsdev=...,iommufd=...) and the nested guest sees an NVMe
# controller (class 010802) on its PCI bus.  03-guest-boot.sh does the
# same through the VFIO container in its guest.
. "$(dirname "$0")/../lib.sh"
nqn=nqn.2026-11.org.example:open
setup_default 1 $nqn /tmp/ns1.img || die "nvmet setup"
modprobe nvmet-mdev || die "modprobe"
uuid=$(create_mdev 1) || die "create mdev"

binding=iommufd
if ! qemu-system-x86_64 -object help | grep -qw iommufd; then
	why="this QEMU ($(qemu-system-x86_64 --version | head -1)) has no iommufd backend"
	tap_skip "$binding: QEMU started the guest with the mdev" "$why"
	tap_skip "$binding: the guest sees an NVMe controller" "$why"
else
	out=$(run_guest --mdev "$uuid" --iommufd -- bash -c "$pci_list_cmd")
	rc=$?
	echo "$out" | grep -a '^pci ' | sed 's/^/# /'
	tap_ok "$binding: QEMU started the guest with the mdev" test $rc -eq 0
	tap_ok "$binding: the guest sees an NVMe controller" \
		eval 'grep -aq "^pci 0x1b36 0x0021 0x010802" <<<"$out"'
fi
remove_mdev "$uuid"
teardown_nvmet
tap_done
