#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# QEMU killed with SIGKILL in the middle of a guest's I/O: fio writing and
# verifying on one half of the namespace, ackwrite (client/ackwrite.c)
# stamping blocks on the other and telling the host VM how many the device
# completed.  Afterwards: the nvmet controller is gone, the pages pinned
# for the guest are unpinned (the kernel's own count of FOLL_PIN pins,
# /proc/vmstat, back to its value before QEMU started), every block
# acknowledged before the kill is in the backing file, a new QEMU on the
# same mdev boots the guest, which reads them back, resets the controller
# three times, turns PCI bus mastering and then memory decoding off and on
# while fio writes and verifies, removes its PCI function while writing and
# rescans (the blocks acknowledged before the removal read back, in the
# guest and in the backing file, as do those written across the resets and
# the PCI command changes), and the module unloads.
# timeout: 2700
. "$(dirname "$0")/../lib.sh"
g=$NVMET_MDEV_HARNESS/tests/guest/check.sh
aw=$NVMET_MDEV_HARNESS/client/out/ackwrite
[ -x "$aw" ] || die "no $aw (make client)"
nqn=nqn.2026-11.org.example:kill
setup_default 1 $nqn /tmp/ns1.img 64M || die "nvmet setup"
modprobe nvmet-mdev || die "modprobe"
uuid=$(create_mdev 1) || die "create mdev"
[ -d /sys/kernel/debug/nvmet ] || die "no nvmet debugfs (CONFIG_NVME_TARGET_DEBUGFS)"

pins0=$(foll_pins)
id=$((SRANDOM % 1000000000 + 1))
rundir=/tmp/kill-run
rm -rf $rundir && mkdir -p $rundir
# The host kills this guest once it has written enough; its timeout only
# bounds a guest that never gets there.
TMPDIR=$rundir NVMET_MDEV_GUEST_TIMEOUT=1500 \
	run_guest --mdev "$uuid" -- $g kill_target $id 8192 > /tmp/guest1.out &
guest=$!

# Wait for a steady stream of acknowledged blocks (the guest boots in 2 to
# 5 minutes; its timeout bounds this too).  Each block waits behind fio's
# writes: with fio at QD16 and 200 blocks, the guest's boot and blocks took
# about 850 s beside another test VM and once ran past its 900 s (three
# VMs and a kernel build on two cores), hence 64 blocks and fio at QD4
# (770 s under that load).
want=64 acks=0 f=
while kill -0 $guest 2>/dev/null; do
	for f in "$rundir"/*/acks; do
		[ -f "$f" ] && read -r acks < "$f"
	done
	[ "${acks:-0}" -ge $want ] && break
	pause 1
done
[ "${acks:-0}" -ge $want ] ||
	{ cat /tmp/guest1.out; die "the guest never wrote $want blocks"; }
pause 5
pins1=$(foll_pins)
n1=$(nvmet_ctrls $nqn)
read -r acks < "$f"
qemu=$(pgrep -f "^qemu-system-x86_64 .*sysfsdev=/sys/bus/mdev/devices/$uuid")
echo "# killing QEMU $qemu with $acks blocks acknowledged," \
	"$((pins1 - pins0)) pages pinned, $n1 nvmet controller(s)"
kill -KILL $qemu
wait $guest
rc=$?
tap_ok "QEMU died in the middle of the I/O (vm.sh status $rc)" test $rc -eq 98
tap_ok "the guest's I/O pinned pages ($((pins1 - pins0)))" test $((pins1 - pins0)) -gt 0
tap_ok "the guest had an nvmet controller ($n1)" test "$n1" -eq 1
grep -q '^kill-target: fio started' /tmp/guest1.out
tap_ok "fio was running in the guest" test $? -eq 0

released "after the kill" $nqn "$pins0"
tap_ok "the $acks acknowledged blocks are in the backing file" \
	"$aw" check /tmp/ns1.img $id "$acks"

# The second guest also resets its controller during verified I/O (the
# nvme driver retries what a reset cut off: nvme_core.max_retries=5, the
# kernel's default), turns bus mastering off and on during verified I/O,
# then memory decoding, and resets once more, and removes its PCI function during writes and
# rescans; the mdev's counters start from zero when QEMU opens it, and
# count an enable for the boot (the guest's firmware is qboot, which
# leaves the controller alone), for each reset and for the rescan, and a
# shutdown at the removal and at power-off.
resets=3
id2=$((id + 1))
# The second guest waits for fio's I/O to flow at each step (fio's start
# alone took 83 s of the guest's time beside two other test VMs), and ran
# past the default 900 s there.
out=$(NVMET_MDEV_GUEST_TIMEOUT=1500 \
	run_guest --append nvme_core.max_retries=5 --mdev "$uuid" -- \
	$g ack_check $id "$acks" + dmesg_clean + reset_io $resets $((id + 2)) + \
	bus_master_io $((id + 3)) + remove_rescan $id2)
rc=$?
tap_ok "a new QEMU boots the guest on the same mdev (status $rc)" test $rc -eq 0
guest_checks "after the kill" "$out"
sd=$(mdev_stat "$uuid" shutdowns)
tap_ok "after the kill: the guest shut the controller down at the removal and at power-off ($sd)" \
	test "$sd" = 2
tap_ok "after the kill: no aborted shutdown on the guest's console" \
	eval '[[ $out != *"Device not ready; aborting shutdown"* ]]'
en=$(mdev_stat "$uuid" enables)
tap_ok "the controller was enabled $((resets + 3)) times ($en)" \
	test "$en" = $((resets + 3))
released "after the second QEMU" $nqn "$pins0"
n=$(sed -n 's/^remove: \([0-9]*\) blocks acknowledged before the removal\r\{0,1\}$/\1/p' <<<"$out")
tap_ok "the ${n:-no} blocks acknowledged before the PCI removal are in the backing file" \
	eval '[ "${n:-0}" -ge 64 ] && "$aw" check /tmp/ns1.img $id2 "$n"'
# The blocks ackwrite stamped across the resets and across bus mastering
# and memory decoding off and on.
acked_in /tmp/ns1.img 2 "$out"

tap_ok "remove the mdev" remove_mdev "$uuid"
teardown_nvmet
tap_ok "nvmet-mdev unloads" modprobe -r nvmet-mdev
tap_done
