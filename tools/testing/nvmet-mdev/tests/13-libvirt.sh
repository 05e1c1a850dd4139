#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# libvirt: the mdev as a user's domain XML gives it,
#   <hostdev mode='subsystem' type='mdev' model='vfio-pci'>
#     <source><address uuid='...'/></source>
#   </hostdev>
# libvirt's node device driver lists the mdev, a transient domain starts
# with it, the guest's nvme driver gets the disk and does verified I/O, and
# the mdev can be removed once libvirt has let it go.
# timeout: 1800
. "$(dirname "$0")/../lib.sh"
export NVMET_MDEV_GUEST_TIMEOUT=${NVMET_MDEV_GUEST_TIMEOUT:-1500}
g=$NVMET_MDEV_HARNESS/tests/guest/check.sh
virsh=(virsh -q -c qemu:///system)

setup_default 1 nqn.2026-11.org.example:lv /tmp/lv.img 128M || die "nvmet setup"
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

out=$(run_guest --libvirt --mdev "$u" --mem 768M \
	--append "nvme.write_queues=1 nvme.poll_queues=1" -- \
	$g identify 134217728 8 1 + fio_verify 4k 16 3 + dmesg_clean)
rc=$?
tap_ok "the libvirt guest ran clean (status $rc)" test $rc -eq 0
guest_checks "libvirt guest" "$out"
guest_shutdown "libvirt guest" "$u" "$out"
tap_ok "the domain is gone after the guest powered off" \
	test -z "$("${virsh[@]}" list --all --name)"
tap_ok "the mdev can be removed afterwards" remove_mdev "$u"
teardown_nvmet
tap_done
