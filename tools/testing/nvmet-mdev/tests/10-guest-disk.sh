#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A nested guest's stock nvme driver gets a working disk: identify data,
# fio randrw with crc32c verify at 4k and 128k, with shadow doorbells on
# and off, and 1 MiB I/O at MDTS through SGLs and through PRP lists.
. "$(dirname "$0")/../lib.sh"
g=$NVMET_MDEV_HARNESS/tests/guest/check.sh
nqn=nqn.2026-11.org.example:disk
size=$((256 << 20))
setup_default 1 $nqn /tmp/ns1.img $size || die "nvmet setup"
modprobe nvmet-mdev || die "modprobe"
uuid=$(create_mdev 1) || die "create mdev"
attr=/sys/bus/mdev/devices/$uuid
queues="nvme.write_queues=2 nvme.poll_queues=1"

# Two guests: shadow doorbells on (SGLs for large I/O, the Linux default)
# and off (PRP lists only: nvme.sgl_threshold=0).
for sdb in 1 0; do
	echo $sdb > $attr/shadow_doorbells || die "set shadow_doorbells"
	echo 8 > $attr/mdts
	if [ $sdb = 1 ]; then
		mode=SGL sgl=32768
	else
		mode=PRP sgl=0
	fi
	out=$(run_guest --mdev "$uuid" --append "$queues nvme.sgl_threshold=$sgl" -- \
		sh -c "$g identify $size 8 $sdb; $g fio_verify 4k; $g fio_verify 128k; $g big_io")
	rc=$?
	tap_ok "shadow_doorbells=$sdb, 1 MiB I/O via $mode: guest run clean (status $rc)" \
		test $rc -eq 0
	guest_checks "shadow_doorbells=$sdb ($mode)" "$out"
done
remove_mdev "$uuid"
teardown_nvmet
tap_done
