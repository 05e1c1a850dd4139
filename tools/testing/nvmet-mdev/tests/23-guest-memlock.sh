#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# QEMU as an unprivileged user, as libvirt runs it: no capabilities (so no
# CAP_IPC_LOCK), the devices it needs given to it (/dev/kvm, the mdev's
# VFIO group), and a locked memory limit (RLIMIT_MEMLOCK), which the pages
# the mdev pins are charged to.
#  1. With a limit of the guest's memory size the guest reads 256 MiB
#     through its page cache (pages all over its memory, each pinned once
#     the device touches it) and fio verifies: no error on either side.
#  2. With 16 MiB, the same read fails with an I/O error in the guest once
#     the pins reach the limit (not a hang); the host's log says why,
#     once; the guest powers off and the pins are released.
# timeout: 1800
. "$(dirname "$0")/../lib.sh"
g=$NVMET_MDEV_HARNESS/tests/guest/check.sh
nqn=nqn.2026-11.org.example:memlock
user=65534
setup_default 1 $nqn /tmp/ns1.img 320M || die "nvmet setup"
modprobe nvmet-mdev || die "modprobe"
uuid=$(create_mdev 1) || die "create mdev"
group=$(basename "$(readlink /sys/bus/mdev/devices/$uuid/iommu_group)")
chown $user /dev/kvm /dev/vfio/$group || die "devices for uid $user"
pins0=$(foll_pins)
warning="cannot pin guest memory"

# Limits in bytes (prlimit takes no suffix: "1G" is one byte).
for mib in 1024 16; do
	limit=${mib}M
	dmesg -C
	if [ $mib = 1024 ]; then
		steps="pin_read 256 ok + fio_verify 4k 4 2 + dmesg_clean"
	else
		steps="pin_read 256 fail"
	fi
	# shellcheck disable=SC2086
	out=$(run_guest --mdev "$uuid" --mem 768M --user $user --memlock $((mib << 20)) -- \
		$g $steps)
	rc=$?
	tap_ok "memlock $limit: the guest powered off clean (status $rc)" \
		test $rc -eq 0
	[ $rc -eq 0 ] || echo "$out" | tail -n 30 | sed 's/^/# guest: /'
	guest_checks "memlock $limit" "$out"
	n=$(dmesg | grep -c "$warning")
	dmesg | grep "$warning" | sed 's/^/# host: /'
	if [ $mib = 1024 ]; then
		tap_ok "memlock $limit: the host logged no pin failure ($n)" test "$n" -eq 0
	else
		tap_ok "memlock $limit: the host said why, once ($n)" test "$n" -eq 1
	fi
	settle released_now $nqn "$pins0"
	tap_ok "memlock $limit: the pinned pages are unpinned ($(($(foll_pins) - pins0)) left)" \
		test "$(foll_pins)" -le "$pins0"
done

tap_ok "remove the mdev" remove_mdev "$uuid"
teardown_nvmet
tap_ok "nvmet-mdev unloads" modprobe -r nvmet-mdev
tap_done
