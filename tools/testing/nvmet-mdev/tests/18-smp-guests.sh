#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Guests that start, do I/O from several CPUs at once and stop, one after
# another, in a 2-vCPU host VM: NVMET_MDEV_BOOTS guests (default 2) on one
# mdev, alternately through iommufd and the VFIO container, with 2 vCPUs
# or 1 (every pairing in four guests), each with several I/O queues (a
# read and a write queue per CPU, and a polled one) and fio randrw with
# verify from 4 jobs at once.  Each guest's run is clean, it took interrupts on at
# least two I/O queues (on both CPUs of a 2-vCPU guest), its nvme driver
# logged no error and it shut the controller down.  The mdev's queue
# threads and the guest's vCPUs run on two CPUs, so a submission and a
# completion really overlap.
#
# This is also how the README measures the TCG hazards of a QEMU
# (cross-CPU code patching when KVM flips static keys at each guest's
# creation and destruction, lost wake-ups): NVMET_MDEV_BOOTS=20
# NVMET_MDEV_TEST_TIMEOUT=12000 run-tests.sh 18-smp-guests (the default
# limit below is for two guests), then the log's splats and "QEMU lost a
# wake-up" lines.
# smp: 2
# timeout: 3000
. "$(dirname "$0")/../lib.sh"
g=$NVMET_MDEV_HARNESS/tests/guest/check.sh
nqn=nqn.2026-12.org.example:smp
size=$((256 << 20))
boots=${NVMET_MDEV_BOOTS:-2}
setup_default 1 $nqn /tmp/ns1.img $size || die "nvmet setup"
modprobe nvmet-mdev || die "modprobe"
uuid=$(create_mdev 1) || die "create mdev"
export NVMET_MDEV_GUEST_TIMEOUT=${NVMET_MDEV_GUEST_TIMEOUT:-1200}
tap_ok "the host VM has 2 CPUs" test "$(nproc)" -eq 2

for ((i = 1; i <= boots; i++)); do
	# 2 vCPUs and iommufd, 1 and the container, 1 and iommufd, 2 and
	# the container, and again.
	cpus=$(( ((i - 1) / 2 + i) % 2 + 1 )) binding=iommufd opt=--iommufd
	[ $((i % 2)) = 0 ] && binding=container opt=
	what="guest $i ($cpus vCPU, $binding)"
	t0=$SECONDS
	# 4 jobs of 2 MiB: with 8 MiB each a 2-vCPU guest's fio took 587 s
	# beside another test VM here, a 1-vCPU one's 94 s (see the README).
	out=$(run_guest --smp $cpus $opt --mdev "$uuid" \
		--append "nvme.write_queues=$cpus nvme.poll_queues=1" -- \
		$g fio_verify 4k 2 4 + queues_used 2 + dmesg_clean)
	rc=$?
	echo "# $what: status $rc after $((SECONDS - t0)) s"
	echo "$out" | grep -aE '^(check:|step:) | nvme0q' | sed 's/^/# /'
	tap_ok "$what: guest run clean (status $rc)" test $rc -eq 0
	guest_checks "$what" "$out"
	guest_shutdown "$what" "$uuid" "$out"
done
remove_mdev "$uuid"
teardown_nvmet
tap_done
