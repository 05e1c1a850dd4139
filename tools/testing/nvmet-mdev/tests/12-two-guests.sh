#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Two mdevs on one port, used by two guests at once in a 2-vCPU host VM:
# the first guest has 2 vCPUs and several I/O queues (a read and a write
# queue per CPU, and a polled one), the second one vCPU and pin-based
# interrupts only (pci=nomsi: INTx through the resample eventfd); then one
# mdev is removed, re-created, and still works.  Each guest runs fio randrw
# with verify, 3 jobs of 8 MiB, both guests at once.
#
# The guests boot one after the other and meet before their I/O: two nested
# guests booting at once on a 1-vCPU host VM were far more than twice as
# slow as one (measured: neither had reached its init after 900 s, still in
# early boot, before PCI probing, so before the device takes any part), and
# the host VM's two vCPUs share the machine's two CPUs with another test
# VM.  Each guest's command waits for "go" in its run directory, which this
# script writes once both commands have started.
# smp: 2
# timeout: 3600
. "$(dirname "$0")/../lib.sh"
export NVMET_MDEV_GUEST_TIMEOUT=${NVMET_MDEV_GUEST_TIMEOUT:-900}
g=$NVMET_MDEV_HARNESS/tests/guest/check.sh
setup_default 1 nqn.2026-11.org.example:a /tmp/a.img 128M || die "nvmet setup a"
make_subsys nqn.2026-11.org.example:b /tmp/b.img 128M || die "nvmet setup b"
link_subsys 1 nqn.2026-11.org.example:b
# Subsystem b names its own vendor: Identify reports it, not the function's.
echo 0x1d1d > $NVMET_CFS/subsystems/nqn.2026-11.org.example:b/attr_vendor_id
modprobe nvmet-mdev || die "modprobe"
u1=$(create_mdev 1) || die "create mdev 1"
u2=$(create_mdev 1) || die "create mdev 2"
echo nqn.2026-11.org.example:a > /sys/bus/mdev/devices/$u1/subsysnqn
echo nqn.2026-11.org.example:b > /sys/bus/mdev/devices/$u2/subsysnqn
tap_ok "subsysnqn reads back" grep -qx nqn.2026-11.org.example:b /sys/bus/mdev/devices/$u2/subsysnqn

# wait_up DIR PID: a guest's command has started (or the guest is gone,
# or it did not start within 1200 s: a guest boots in 3 to 5 minutes
# beside one other test VM, in 12 with four VMs on the two CPUs, and one
# stuck in its boot must not take the test's hour).
# Builtins only here too (pause): an exec in the host VM costs the booting
# guest about 0.3 s of the one vCPU.
boot_limit=1200
wait_up() {
	local end=$((SECONDS + boot_limit))
	while kill -0 "$2" 2>/dev/null; do
		compgen -G "$1/*/up" >/dev/null && return 0
		if [ $SECONDS -ge $end ]; then
			guest_stuck "$1" "${1#/tmp/} not up after $boot_limit s"
			return 1
		fi
		pause 2
	done
	return 1
}
# The waiting guest must not exec anything while the other one boots (an
# exec costs a nested guest seconds of the shared vCPU): check.sh's "meet"
# waits with builtins.
rm -rf /tmp/g1 /tmp/g2
mkdir -p /tmp/g1 /tmp/g2
TMPDIR=/tmp/g1 NVMET_MDEV_GUEST_TIMEOUT=$((3 * NVMET_MDEV_GUEST_TIMEOUT + 600)) \
	run_guest --mdev "$u1" --mem 768M --smp 2 \
	--append "nvme.write_queues=2 nvme.poll_queues=1" -- \
	$g meet + fio_verify 4k 8 3 + queues_used 2 + dmesg_clean \
	> /tmp/g1.out 2>/tmp/g1.err &
p1=$!
if ! wait_up /tmp/g1 $p1; then
	wait $p1
	tap_ok "guest 1 came up" false
	teardown_nvmet
	tap_done
	exit
fi
# Guest 2 boots about twice as slowly (every device on INTx).
TMPDIR=/tmp/g2 NVMET_MDEV_GUEST_TIMEOUT=$((3 * NVMET_MDEV_GUEST_TIMEOUT)) \
	run_guest --mdev "$u2" --mem 768M --append pci=nomsi -- \
	$g meet + fio_verify 4k 8 3 + intx + ids 0x1d1d 0x1af4 + dmesg_clean \
	> /tmp/g2.out 2>/tmp/g2.err &
p2=$!
wait_up /tmp/g2 $p2
guest_tell /tmp/g1 go
guest_tell /tmp/g2 go
wait $p1; r1=$?
wait $p2; r2=$?
# What vm.sh said of each guest (its stderr also has the guest's console,
# prefixed); a guest that failed (timed out) leaves its console in the log.
for i in 1 2; do
	eval "r=\$r$i"
	grep -a '^vm\.sh:' /tmp/g$i.err | sed "s/^/# guest $i: /"
	[ "$r" -eq 0 ] || sed "s/^/guest $i console| /" /tmp/g$i.out >&2
done
tap_ok "guest 1 clean (status $r1)" test $r1 -eq 0
guest_checks "guest 1" "$(cat /tmp/g1.out)"
tap_ok "guest 2 clean (status $r2)" test $r2 -eq 0
guest_checks "guest 2" "$(cat /tmp/g2.out)"
guest_shutdown "guest 1" "$u1" "$(cat /tmp/g1.out)"
guest_shutdown "guest 2" "$u2" "$(cat /tmp/g2.out)"

tap_ok "remove mdev 1" remove_mdev "$u1"
tap_ok "re-create it" test "$(create_mdev 1 "$u1")" = "$u1"
echo nqn.2026-11.org.example:a > /sys/bus/mdev/devices/$u1/subsysnqn
# The re-created mdev through the userspace VFIO client (a third guest boot
# would cost the test minutes): its I/O case checks the data on the
# backing file.
out=$("$NVMET_MDEV_HARNESS/client/run.sh" -b container -d pwrite -t io_test \
	"$u1" /tmp/a.img)
rc=$?
n=0
while IFS= read -r line; do
	case "$line" in
	*"# SKIP"*) echo "# re-created: $line" ;;
	"ok "*) tap_ok "re-created: ${line#ok * }" true; n=$((n + 1)) ;;
	"not ok "*) tap_ok "re-created: ${line#not ok * }" false; n=$((n + 1)) ;;
	*) echo "# re-created: $line" ;;
	esac
done <<<"$out"
tap_ok "re-created mdev: the client's I/O case ran (status $rc, $n results)" \
	test $rc -eq 0 -a $n -gt 0
teardown_nvmet
tap_done
