#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# mkfs.ext4 and files in a guest; a second boot on the same mdev (controller
# reset) finds them; power-off shuts the controller down; the backing file
# in the host holds the file system.  The first boot has the doorbell_mmap
# default (on a 1-vCPU host VM: trapped doorbells), the second the doorbell
# page mapped into the guest and polled.
# timeout: 2100
. "$(dirname "$0")/../lib.sh"
g=$NVMET_MDEV_HARNESS/tests/guest/check.sh
nqn=nqn.2026-11.org.example:fs
setup_default 1 $nqn /tmp/ns1.img 256M || die "nvmet setup"
modprobe nvmet-mdev || die "modprobe"
uuid=$(create_mdev 1) || die "create mdev"

out=$(run_guest --mdev "$uuid" -- $g mkfs_write + dmesg_clean)
rc=$?
tap_ok "first boot clean (status $rc)" test $rc -eq 0
guest_checks "first boot" "$out"
guest_shutdown "first boot" "$uuid" "$out"
echo on > /sys/bus/mdev/devices/$uuid/doorbell_mmap || die "set doorbell_mmap"
out=$(run_guest --mdev "$uuid" -- $g mount_check + dmesg_clean)
rc=$?
tap_ok "second boot clean (status $rc)" test $rc -eq 0
guest_checks "second boot" "$out"
guest_shutdown "second boot" "$uuid" "$out"

remove_mdev "$uuid"
teardown_nvmet
tap_ok "backing file holds a clean ext4" e2fsck -fn /tmp/ns1.img
mkdir -p /tmp/mnt
mount -o loop,ro /tmp/ns1.img /tmp/mnt
tap_ok "host sees the guest's file" grep -qx hello-from-guest /tmp/mnt/hello
umount /tmp/mnt
tap_done
