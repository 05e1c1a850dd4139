#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The demo: boot the host VM; inside it export a file-backed namespace over
# an mdev port, create one mdev, start a nested KVM guest on it and show
# what the guest sees: nvme list, id-ctrl highlights and a short fio run.
here=$(cd "$(dirname "$0")" && pwd)

if [ "${1:-}" != --inside ]; then
	exec "$here/vm.sh" --timeout 900 -- "$here/demo.sh" --inside
fi

. "$here/lib.sh"
nqn=nqn.2026-11.org.example:demo
echo "== host VM: nvmet subsystem $nqn, namespace on a 1 GiB file, mdev port 1"
setup_default 1 $nqn /tmp/demo.img 1G || exit 1
modprobe nvmet-mdev || exit 1
uuid=$(create_mdev 1) || exit 1
echo "== mdev $uuid on $(port_parent 1)"
grep . /sys/bus/mdev/devices/"$uuid"/{nr_io_queues,max_queue_entries,mdts,shadow_doorbells,poll_idle_us} 2>/dev/null |
	sed 's|.*/||'
echo "== starting a KVM guest: qemu -device vfio-pci,sysfsdev=/sys/bus/mdev/devices/$uuid"
echo "   (a nested guest under TCG: about two minutes)"
run_guest --mdev "$uuid" --append "nvme.write_queues=1 nvme.poll_queues=1" -- sh -c '
	echo "== guest: nvme list"
	nvme list
	echo "== guest: nvme id-ctrl (highlights)"
	nvme id-ctrl /dev/nvme0 | grep -E "^(vid|ssvid|mn|sn|fr|mdts|oacs|sgls|sqes|cqes|nn|subnqn) "
	echo "== guest: the controller on the PCI bus"
	for d in /sys/bus/pci/devices/*; do
		[ "$(cat $d/class)" = 0x010802 ] || continue
		echo "${d##*/} class $(cat $d/class) vendor:device $(cat $d/vendor):$(cat $d/device)" \
			"subsystem $(cat $d/subsystem_vendor):$(cat $d/subsystem_device)"
	done
	echo "== guest: fio 4k randread, iodepth 16, 10 s"
	fio --name=demo --filename=/dev/nvme0n1 --direct=1 --ioengine=io_uring \
		--rw=randread --bs=4k --iodepth=16 --runtime=10 --time_based \
		--group_reporting | grep -E "IOPS|^ +(s|c)?lat \(usec\)"
	echo "== guest: dmesg (nvme)"
	dmesg | grep -E "nvme[0-9]" | sed "s/^/dmesg: /"' > /tmp/demo-guest.out 2>/dev/null
rc=$?
# What the guest printed, without its kernel console lines.
sed -n '/^== guest:/,$p' /tmp/demo-guest.out | tr -d '\r' |
	grep -avE '^\[ *[0-9]+\.[0-9]+\] |^qemu-system'
echo "== guest exit status: $rc"
remove_mdev "$uuid"
teardown_nvmet
exit $rc
