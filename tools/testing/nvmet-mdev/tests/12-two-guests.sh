#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Two mdevs on one port, used by two guests at once, the second one with
# pin-based interrupts only (pci=nomsi: INTx through the resample eventfd);
# then one mdev is removed and re-created and still works.  Each guest runs
# fio randrw with verify, 2 jobs of 2 MiB, both at once on the one vCPU of
# the host VM.
# timeout: 1800
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

run_guest --mdev "$u1" --mem 768M -- sh -c "$g fio_verify 4k 2 2" > /tmp/g1.out 2>/dev/null &
p1=$!
run_guest --mdev "$u2" --mem 768M --append pci=nomsi -- \
	sh -c "$g fio_verify 4k 2 2; $g intx; $g ids 0x1d1d 0x1af4" > /tmp/g2.out 2>/dev/null &
p2=$!
wait $p1; r1=$?
wait $p2; r2=$?
# A guest that failed (timed out) leaves its console in the log.
for i in 1 2; do
	eval "r=\$r$i"
	[ "$r" -eq 0 ] || sed "s/^/guest $i console| /" /tmp/g$i.out >&2
done
tap_ok "guest 1 clean (status $r1)" test $r1 -eq 0
guest_checks "guest 1" "$(cat /tmp/g1.out)"
tap_ok "guest 2 clean (status $r2)" test $r2 -eq 0
guest_checks "guest 2" "$(cat /tmp/g2.out)"

tap_ok "remove mdev 1" remove_mdev "$u1"
tap_ok "re-create it" test "$(create_mdev 1 "$u1")" = "$u1"
echo nqn.2026-11.org.example:a > /sys/bus/mdev/devices/$u1/subsysnqn
out=$(run_guest --mdev "$u1" -- sh -c "$g big_io")
tap_ok "re-created mdev works (status $?)" test $? -eq 0
guest_checks "re-created" "$out"
teardown_nvmet
tap_done
