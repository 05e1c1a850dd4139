#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# libvirt: the mdev as a user's domain XML gives it,
#   <hostdev mode='subsystem' type='mdev' model='vfio-pci'>
#     <source><address uuid='...'/></source>
#   </hostdev>
# libvirt's node device driver lists the mdev, a transient domain starts
# with it, and the guest's nvme driver gets the disk and does verified I/O.
# As the I/O starts, the host removes the mdev (what an operator does to a
# device in use): vfio's request interrupt tells QEMU, which asks the guest
# to unplug the device (the guest kernel has no PCIe hotplug, so it keeps
# it); the removal waits while QEMU has the device open, the guest's I/O
# goes on (fio verifying, ackwrite stamping blocks one at a time: the host
# finds those acknowledged in the backing file), and the removal completes
# once QEMU has closed the device at the guest's power-off and the test has
# closed the vfio cdev it holds open (without binding it) so that the
# device's counters outlive QEMU.  Then no nvmet controller and no pinned
# page is left, and the module unloads.
# timeout: 1800
. "$(dirname "$0")/../lib.sh"
export NVMET_MDEV_GUEST_TIMEOUT=${NVMET_MDEV_GUEST_TIMEOUT:-1500}
g=$NVMET_MDEV_HARNESS/tests/guest/check.sh
virsh=(virsh -q -c qemu:///system)

nqn=nqn.2026-11.org.example:lv
setup_default 1 $nqn /tmp/lv.img 128M || die "nvmet setup"
modprobe nvmet-mdev || die "modprobe"
u=$(create_mdev 1) || die "create mdev"
start_libvirtd || die "libvirtd"

# libvirt names mdev node devices mdev_<uuid with underscores>[_<parent>].
nd=$("${virsh[@]}" nodedev-list --cap mdev | grep -F "mdev_${u//-/_}" | head -1)
tap_ok "libvirt lists the mdev as a node device ($nd)" test -n "$nd"
xml=$("${virsh[@]}" nodedev-dumpxml "$nd" 2>/dev/null)
echo "$xml" | sed 's/^/# /'
nodedev_is_ours() {
	grep -q "<type id='nvmet-mdev-nvme'" <<<"$xml" && grep -q nvmet-mdev-port1 <<<"$xml"
}
tap_ok "... of our type, under our port's parent" nodedev_is_ours

pins0=$(foll_pins)
id=$((SRANDOM % 1000000000 + 1))
rm -rf /tmp/lv
mkdir -p /tmp/lv
TMPDIR=/tmp/lv run_guest --libvirt --mdev "$u" --mem 768M \
	--append "nvme.write_queues=1 nvme.poll_queues=1" -- \
	$g identify 134217728 8 1 + meet + acked_verify $id 4k 16 3 + dmesg_clean \
	> /tmp/lv.out 2>/dev/null &
p=$!
# Waits with builtins (pause): an exec in the host VM costs the guest time.
end=$((SECONDS + NVMET_MDEV_GUEST_TIMEOUT))
while kill -0 $p 2>/dev/null && ! compgen -G "/tmp/lv/*/up" >/dev/null &&
      [ $SECONDS -lt $end ]; do
	pause 2
done
if ! compgen -G "/tmp/lv/*/up" >/dev/null; then
	kill -0 $p 2>/dev/null && "${virsh[@]}" destroy "$("${virsh[@]}" list --name)"
	wait $p
	tap_ok "the libvirt guest came up" false
	sed "s/^/guest console| /" /tmp/lv.out >&2
	teardown_nvmet
	tap_done
	exit
fi

# The removal, while the guest's I/O starts.  An open vfio cdev holds the
# device registered as QEMU's does: the counters stay readable after
# QEMU has gone, however fast it goes after the guest's shutdown.
cdev=$(compgen -G "/sys/bus/mdev/devices/$u/vfio-dev/vfio*")
exec 8<>"/dev/vfio/devices/${cdev##*/}" || die "open the vfio cdev"
# The remover must not inherit it: it would wait for itself.
(echo 1 > "/sys/bus/mdev/devices/$u/remove") 8<&- 2>/tmp/remove.err &
rp=$!
removal=$SECONDS
# Still blocked in the write: not a zombie, and the driver's remove has
# not gone past vfio_unregister_group_dev() (the debugfs directory).
removal_waits() {
	local st
	read -r _ _ st _ 2>/dev/null < "/proc/$rp/stat" &&
		[ "$st" != Z ] && [ -d "/sys/kernel/debug/nvmet-mdev/$u" ]
}
for d in /tmp/lv/*/; do
	touch "${d}go"
done
pause 20
tap_ok "the removal waits while QEMU has the device open (the mdev left the bus)" \
	eval 'removal_waits && [ ! -e "/sys/bus/mdev/devices/$u" ]'
while kill -0 $p 2>/dev/null; do
	pause 1
done
wait $p
rc=$?
guest_end=$SECONDS
out=$(cat /tmp/lv.out)
tap_ok "the libvirt guest ran clean (status $rc)" test $rc -eq 0
guest_checks "libvirt guest" "$out"
acked_in /tmp/lv.img 1 "$out"
guest_shutdown "libvirt guest" "$u" "$out"
pause 2
tap_ok "the removal waits while the test holds the vfio cdev" removal_waits
exec 8<&-
end=$((SECONDS + 60))
while kill -0 $rp 2>/dev/null && [ $SECONDS -lt $end ]; do
	pause 1
done
kill -0 $rp 2>/dev/null && kill $rp
wait $rp
rrc=$?
tap_ok "the domain is gone after the guest powered off" \
	test -z "$("${virsh[@]}" list --all --name)"
msg="status $rrc, $((SECONDS - removal)) s after it began"
msg+=", guest gone after $((guest_end - removal)) s"
tap_ok "the removal completed once QEMU and the test let go ($msg)" \
	test $rrc -eq 0 -a ! -e "/sys/bus/mdev/devices/$u"
sed 's/^/# removal: /' /tmp/remove.err
released "libvirt guest" $nqn "$pins0"
# What QEMU said about the request (its log under libvirt).
grep -ah 'vfio\|unplug' /var/log/libvirt/qemu/*.log 2>/dev/null | tail -n 5 |
	sed 's/^/# QEMU: /'
teardown_nvmet
tap_ok "nvmet-mdev unloads" modprobe -r nvmet-mdev
tap_done
