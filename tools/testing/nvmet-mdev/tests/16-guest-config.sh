#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The nvmet configuration changes under a guest doing I/O.
#  1. The namespace is disabled while fio writes to it and ackwrite
#     (client/ackwrite.c) stamps blocks one at a time, then enabled again:
#     the guest's nvme driver drops the namespace and gets it back
#     (Namespace Attribute Changed events), the blocks acknowledged before
#     read back, and fio verifies on it.
#  2. modprobe -r nvmet-mdev while QEMU has the mdev open: refused at
#     once.
#  3. The subsystem is unlinked from the port and the port removed while
#     fio writes and ackwrite stamps blocks: the port's mdev parent goes
#     away, which removes the mdev once its user lets go (QEMU is asked
#     through the request interrupt; a guest without PCI hotplug never
#     answers, so it lasts until QEMU exits).  The guest's controller
#     fails and its driver gives it up; the guest powers off; the mdev is
#     gone; the same port and link can be made again, a new mdev works,
#     and the module unloads.
# Every block acknowledged before either event is in the backing file.
# After the guest no nvmet controller is left and its pages are unpinned.
# timeout: 1800
. "$(dirname "$0")/../lib.sh"
g=$NVMET_MDEV_HARNESS/tests/guest/check.sh
nqn=nqn.2026-11.org.example:config
setup_default 1 $nqn /tmp/ns1.img 128M || die "nvmet setup"
modprobe nvmet-mdev || die "modprobe"
uuid=$(create_mdev 1) || die "create mdev"
ns=$NVMET_CFS/subsystems/$nqn/namespaces/1
run=/tmp/config-run

rm -rf $run && mkdir -p $run
pins0=$(foll_pins)
id=$((SRANDOM % 1000000000 + 1))
TMPDIR=$run NVMET_MDEV_GUEST_TIMEOUT=1500 run_guest --mdev "$uuid" -- \
	$g ns_off_on $id + ctrl_removed $((id + 1)) > /tmp/config.out 2>/dev/null &
gpid=$!

if guest_said $run $gpid io 1200; then
	t0=$SECONDS
	echo "# host: disabling the namespace"
	tap_ok "disable the namespace under I/O" eval "echo 0 > $ns/enable"
	tap_ok "the guest saw the namespace go within 120 s" guest_said $run $gpid ns-gone 120
	echo "# namespace gone in the guest $((SECONDS - t0)) s after it was disabled"
	tap_ok "enable the namespace again" eval "echo 1 > $ns/enable"
else
	tap_ok "the guest started writing" false
fi

if guest_said $run $gpid unlink 600; then
	start=$SECONDS
	timeout 60 modprobe -r nvmet-mdev 2>/tmp/modprobe.err
	rc=$?
	why="status $rc, $((SECONDS - start)) s: $(head -c 200 /tmp/modprobe.err)"
	tap_ok "modprobe -r nvmet-mdev with the mdev open is refused ($why)" \
		test $rc -ne 0 -a $rc -ne 124
	echo "# host: unlinking the subsystem from the port"
	tap_ok "unlink the subsystem from the port under I/O" unlink_subsys 1 $nqn
	tap_ok "remove the port" rmdir $NVMET_CFS/ports/1
	pause 5
	# The mdev has left the bus and the parent the mdev_bus class; the
	# rest of their removal waits.
	tap_ok "the port's mdev parent waits for QEMU to let go" \
		test -e /sys/class/nvmet-mdev/nvmet-mdev-port1
else
	tap_ok "the guest started writing again" false
fi

# The guest gives its controller up within a minute; if it has not ended
# five minutes after the port went, say where it is and stop it.
end=$((SECONDS + 300))
while kill -0 $gpid 2>/dev/null && [ $SECONDS -lt $end ]; do
	pause 2
done
kill -0 $gpid 2>/dev/null && guest_stuck $run "the guest has not ended 5 min after the port went"
wait $gpid
rc=$?
out=$(cat /tmp/config.out)
tap_ok "the guest powered off clean (status $rc)" test $rc -eq 0
guest_checks "config" "$out"
acked_in /tmp/ns1.img 2 "$out"
grep -E 'nvme nvme0: |^(ctrl|step): ' /tmp/config.out | tail -n 12 |
	sed 's/^/# guest: /'

gone() {
	[ ! -e /sys/class/nvmet-mdev/nvmet-mdev-port1 ] &&
		[ ! -e /sys/kernel/debug/nvmet-mdev/$uuid ]
}
for ((i = 0; i < 30; i++)); do gone && break; pause 1; done
tap_ok "the mdev and the port's parent are gone once QEMU has exited (after $i s)" gone
released "config" $nqn "$pins0"
tap_ok "the port can be made again" make_port 1
tap_ok "and the subsystem linked to it" link_subsys 1 $nqn
uuid=$(create_mdev 1) || die "create mdev on the new port"
out=$("$NVMET_MDEV_HARNESS/client/run.sh" -b container -d pwrite -t io_test \
	"$uuid" /tmp/ns1.img)
rc=$?
tap_ok "a new mdev on the new port does I/O (client io_test, status $rc)" test $rc -eq 0
[ $rc -eq 0 ] || echo "$out" | sed 's/^/# io_test: /'

tap_ok "remove the mdev" remove_mdev "$uuid"
teardown_nvmet
tap_ok "nvmet-mdev unloads" modprobe -r nvmet-mdev
tap_done
