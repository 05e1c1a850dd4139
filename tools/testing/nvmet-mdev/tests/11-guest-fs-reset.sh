#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# mkfs.ext4 and files in a guest, then a reset of the guest in the middle
# of I/O on that file system (sysrq b: no sync, no device shutdown, the
# controller still enabled with commands in flight) and a reboot in the
# same QEMU: SeaBIOS and the guest's nvme driver find the controller
# again, the file system mounts, and every block the guest was told was
# written before the reset is there; power-off shuts the controller down
# (once: the reset did not); no nvmet controller and no pinned page is
# left once QEMU has gone, the module unloads, and the backing file in the
# host holds the file system and those blocks.
# The doorbell page is mapped into the guest and polled (the other guest
# tests trap their doorbells, the default of a 1-vCPU host VM).
# timeout: 2100
. "$(dirname "$0")/../lib.sh"
g=$NVMET_MDEV_HARNESS/tests/guest/check.sh
aw=$NVMET_MDEV_HARNESS/client/out/ackwrite
[ -x "$aw" ] || die "no $aw (make client)"
nqn=nqn.2026-11.org.example:fs
setup_default 1 $nqn /tmp/ns1.img 256M || die "nvmet setup"
modprobe nvmet-mdev || die "modprobe"
uuid=$(create_mdev 1) || die "create mdev"
echo on > /sys/bus/mdev/devices/$uuid/doorbell_mmap || die "set doorbell_mmap"

id=$((SRANDOM % 1000000000 + 1))
pins0=$(foll_pins)
rundir=/tmp/reboot-run
rm -rf $rundir && mkdir -p $rundir
# Two boots of the guest in one QEMU.
out=$(TMPDIR=$rundir NVMET_MDEV_GUEST_TIMEOUT=1800 run_guest --seabios --reboot --mdev "$uuid" -- \
	$g mkfs_write + reboot_mid_io $id + after_reboot $id + dmesg_clean)
rc=$?
tap_ok "the guest ran clean across its reboot (status $rc)" test $rc -eq 0
n=$(grep -c '^reboot: resetting with I/O in flight' <<<"$out")
tap_ok "it reset once, with I/O in flight ($n)" test "$n" -eq 1
guest_checks "reboot" "$out"
guest_shutdown "reboot" "$uuid" "$out"
sed 's/^/# stats: /' "/sys/kernel/debug/nvmet-mdev/$uuid/stats"
# SeaBIOS probes the controller in every boot (it enables it and reads the
# namespaces), then the guest's driver: two enables a boot, no more (a
# driver reset would add one, and fail dmesg_clean).
e=$(mdev_stat "$uuid" enables)
tap_ok "SeaBIOS and the driver enabled the controller in both boots ($e enables)" \
	test "$e" = 4
released "reboot" $nqn "$pins0"
acks=$(sed -n 's/^reboot: \([0-9]*\) blocks acknowledged before the reboot\r\{0,1\}$/\1/p' \
	<<<"$out")

tap_ok "remove the mdev" remove_mdev "$uuid"
teardown_nvmet
tap_ok "nvmet-mdev unloads" modprobe -r nvmet-mdev
tap_ok "backing file holds a clean ext4" e2fsck -fn /tmp/ns1.img
mkdir -p /tmp/mnt
mount -o loop,ro /tmp/ns1.img /tmp/mnt
tap_ok "host sees the guest's file" grep -qx hello-from-guest /tmp/mnt/hello
tap_ok "host sees the ${acks:-no} blocks acknowledged before the reset" \
	eval '[ "${acks:-0}" -ge 32 ] && "$aw" check /tmp/mnt/acks.bin $id "$acks"'
umount /tmp/mnt
tap_done
