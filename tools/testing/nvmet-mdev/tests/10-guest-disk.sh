#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A nested guest's stock nvme driver gets a working disk: identify data,
# fio randrw with crc32c verify at 4k and 128k, with shadow doorbells on
# (large I/O through SGLs) and off (every doorbell through BAR0, PRP lists
# only: nvme.sgl_threshold=0), and 1 MiB I/O at MDTS through SGLs and
# through PRP lists; the guest's nvme driver logs no error.
. "$(dirname "$0")/../lib.sh"
g=$NVMET_MDEV_HARNESS/tests/guest/check.sh
nqn=nqn.2026-11.org.example:disk
size=$((256 << 20))
setup_default 1 $nqn /tmp/ns1.img $size || die "nvmet setup"
modprobe nvmet-mdev || die "modprobe"
uuid=$(create_mdev 1) || die "create mdev"
attr=/sys/bus/mdev/devices/$uuid
queues="nvme.write_queues=2 nvme.poll_queues=1"

for sdb in 1 0; do
	echo $sdb > $attr/shadow_doorbells || die "set shadow_doorbells"
	echo 8 > $attr/mdts
	extra=; [ $sdb = 0 ] && extra=" nvme.sgl_threshold=0"
	out=$(run_guest --mdev "$uuid" --append "$queues$extra" -- \
		sh -c "$g identify $size 8 $sdb; $g fio_verify 4k; $g fio_verify 128k; $g dmesg_clean")
	rc=$?
	echo "$out" | grep -aE '^(check:|Node|/dev|mdts|oacs|sgls|mn) ' | sed 's/^/# /'
	tap_ok "shadow_doorbells=$sdb: guest run clean (status $rc)" test $rc -eq 0
	guest_checks "shadow_doorbells=$sdb" "$out"
done

echo 1 > $attr/shadow_doorbells
for sgl in 4096 0; do
	mode=SGL; [ $sgl = 0 ] && mode=PRP
	out=$(run_guest --mdev "$uuid" --append "$queues nvme.sgl_threshold=$sgl" -- \
		sh -c "$g big_io; $g dmesg_clean")
	rc=$?
	tap_ok "1 MiB I/O via $mode: guest run clean (status $rc)" test $rc -eq 0
	guest_checks "1 MiB I/O via $mode" "$out"
done
remove_mdev "$uuid"
teardown_nvmet
tap_done
