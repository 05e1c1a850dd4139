#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Live migration (Documentation/nvme/mdev.rst, "Live migration"): a guest
# writing and verifying with fio moves between two mdevs of one
# subsystem: container -> iommufd -> container, a migration cancelled
# halfway (the source runs on), and a last one (migrate.py).  fio verifies
# what it writes across the moves, the guest's nvme driver logs no
# timeout, abort or reset, a stamp written before verifies afterwards (in
# the guest and on the host); the client's migration cases run on the
# same slow namespace (commands in flight at the stop).  Each
# migration's downtime, total time, device data and the dirty pages the
# device reported are in the log.  The guest boots from an initramfs with
# busybox and fio: the other guests' 9p root blocks migration.
# timeout: 2400
. "$(dirname "$0")/../lib.sh"
test_vm_only 26-guest-migrate || exit 1
nqn=nqn.2026-11.org.example:mig
# A memory-backed null_blk that completes each command after 250 ms: the
# guest's commands are still in flight when the device stops (with a file
# on tmpfs, or 5 ms, they had all completed by the time the VMM stopped
# the device, after the vCPUs), and its data is kept for the host to
# verify.
modprobe null_blk nr_devices=0 || die "null_blk"
nb=/sys/kernel/config/nullb/mig
mkdir $nb && echo 128 > $nb/size && echo 1 > $nb/memory_backed &&
	echo 2 > $nb/irqmode && echo 250000000 > $nb/completion_nsec &&
	echo 1 > $nb/power || die "null_blk"
dev=/dev/mig
[ -b $dev ] || dev=/dev/nullb$(cat $nb/index)
setup_default 1 $nqn $dev || die "nvmet setup"
modprobe nvmet-mdev || die "modprobe nvmet-mdev"
u1=$(create_mdev 1) || die "create mdev 1"
u2=$(create_mdev 1) || die "create mdev 2"
# The destination connects as the same host (a state of another host is
# refused): the administrator gives it the source's host NQN and ID.
same_host "$u1" "$u2" || die "same host identity"
id1=$(cat /sys/bus/mdev/devices/$u1/host{nqn,id})
id2=$(cat /sys/bus/mdev/devices/$u2/host{nqn,id})
tap_ok "mdev 2 has mdev 1's host NQN and ID" test "$id1" = "$id2"

# The guest's initramfs.
root=/tmp/mig-initrd
rm -rf $root /tmp/mig-run
mkdir -p $root/bin $root/proc $root/sys $root/dev $root/tmp /tmp/mig-run
cp "$(command -v busybox)" $root/bin/busybox || die "no busybox"
cp "$NVMET_MDEV_TOP/build/fio/fio" $root/fio || die "no static fio (make fio)"
cp "$NVMET_MDEV_HARNESS/tests/guest/migrate-init.sh" $root/init
(cd $root && find . | cpio -o -H newc --quiet) > /tmp/mig-initrd.cpio ||
	die "initramfs"

out=$("$NVMET_MDEV_HARNESS/migrate.py" /tmp/mig-run \
	"$NVMET_MDEV_TOP/build/guest-bzImage" /tmp/mig-initrd.cpio \
	"$u1" "$u2" $dev)
rc=$?
grep -v '^check: ' <<<"$out"
tap_ok "migrate.py ran (status $rc)" test $rc -eq 0
guest_checks "migration" "$out"

# The data verifies afterwards, on the host too: the guest's stamp
# (fio's xxhash headers and checksums, block by block).
tap_ok "the host verifies the guest's stamp (16 MiB at 64 MiB)" \
	"$NVMET_MDEV_TOP/build/fio/fio" --name=stamp --filename=$dev \
	--ioengine=psync --rw=write --bs=64k --size=16M --offset=64M \
	--verify=xxhash --verify_only --minimal --output=/dev/null

# No destination refused a state: nothing logged (before the client's
# hostile cases below).
n=$(dmesg | grep -c "nvmet-mdev.*migration:")
tap_ok "no migration state was refused ($n messages)" test "$n" -eq 0
# How many guest commands the sources' stops found in flight (the
# guest's fio keeps 16 in flight at 250 ms each, but a stop can find none:
# QEMU stops the device right after the vCPUs, and the guest's commands
# may all have been fetched and completed, or still sit in its SQ, which
# the state carries).  The client's cases below have one in flight for
# sure.
n=$(sed -n 's/.*its stop waited for \([0-9]*\) commands in flight.*/\1/p' <<<"$out" |
	awk '{ s += $1 } END { print s + 0 }')
echo "# the sources' stops waited for $n guest commands in flight in all"

# The client's migration cases on this slow namespace: a write in flight
# when the device stops, waited for, its completion carried (move) or
# posted after RUNNING (cancel).
NVMET_MDEV_PEER=$u2 NVMET_MDEV_BACKEND_LATENCY_MS=250 tap_run \
	"$NVMET_MDEV_HARNESS/client/run.sh" -b container -d pwrite \
	-t migration_test "$u1"

tap_ok "remove mdev 1" remove_mdev "$u1"
tap_ok "remove mdev 2" remove_mdev "$u2"
teardown_nvmet
echo 0 > $nb/power && rmdir $nb
tap_done
