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
# make deps installs a QEMU with the backend (10.0 from bookworm-backports):
# one without it is a failure here, not a reason to skip.
tap_ok "this QEMU has an iommufd backend" \
	eval 'qemu-system-x86_64 -object help | grep -qw iommufd'
out=$(run_guest --mdev "$uuid" --iommufd -- bash -c "$pci_list_cmd")
rc=$?
echo "$out" | grep -a '^pci ' | sed 's/^/# /'
tap_ok "$binding: QEMU started the guest with the mdev" test $rc -eq 0
tap_ok "$binding: the guest sees an NVMe controller" \
	eval 'grep -aq "^pci 0x1b36 0x0021 0x010802" <<<"$out"'
remove_mdev "$uuid"
teardown_nvmet
tap_done
