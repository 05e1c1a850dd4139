#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The demo: boot the host VM; inside it export a file-backed namespace over
# an mdev port, create one mdev, start a nested KVM guest on it and show
# what the guest sees: nvme list, id-ctrl highlights, and a short fio run on
# the mdev next to the same run on QEMU's emulated NVMe controller, which
# the guest also has (its disk a file of the same size in the same host VM).
here=$(cd "$(dirname "$0")" && pwd)

# In the guest: the mdev is the controller with nvmet's model, "Linux".
# ns_of MODEL: the namespace block device of the controller with MODEL:
# nvmeXnY, or with native multipath (nvmet's subsystems allow several
# controllers) the subsystem's nvmeAnY, whose "device" is the subsystem.
ns_of() {
	local b
	for b in /sys/block/nvme*n1; do
		case ${b##*/} in *c*) continue ;; esac
		case "$(cat "$b/device/model")" in "$1"*)
			echo "${b##*/}"
			return
			;;
		esac
	done
}

guest_main() {
	local c m='' d n job
	echo "== guest: nvme list"
	nvme list
	for c in /sys/class/nvme/nvme*; do
		case "$(cat "$c/model")" in
		Linux*) m=${c##*/} ;;
		esac
	done
	echo "== guest: nvme id-ctrl /dev/$m, the mdev (highlights)"
	nvme id-ctrl "/dev/$m" |
		grep -E "^(vid|ssvid|mn|sn|fr|mdts|oacs|sgls|sqes|cqes|nn|subnqn) "
	echo "== guest: the controller on the PCI bus"
	for d in /sys/bus/pci/devices/*; do
		[ "$(cat "$d/class")" = 0x010802 ] || continue
		[ "$(cat "$d/vendor")" = 0x1b36 ] && [ "$(cat "$d/device")" = 0x0010 ] &&
			continue	# QEMU's own NVMe
		echo "${d##*/} class $(cat "$d/class") vendor:device" \
			"$(cat "$d/vendor"):$(cat "$d/device") subsystem" \
			"$(cat "$d/subsystem_vendor"):$(cat "$d/subsystem_device")"
	done
	for job in "randread 4k 16" "randwrite 4k 16" "read 128k 8"; do
		# shellcheck disable=SC2086 # three words
		set -- $job
		echo "== guest: fio $1 bs=$2 iodepth=$3, 10 s each, the mdev then QEMU's NVMe"
		for c in mdev qemu-nvme; do
			n=$(ns_of "$([ $c = mdev ] && echo Linux || echo QEMU)")
			if [ ! -b "/dev/$n" ]; then
				echo "$c: no namespace found"
				continue
			fi
			printf "%-9s /dev/%-8s " $c "$n"
			fio --name=demo --filename="/dev/$n" --direct=1 --ioengine=io_uring \
				--rw="$1" --bs="$2" --iodepth="$3" --runtime=10 --time_based \
				--output-format=json |
				jq -r '.jobs[0] |
					(if .read.total_ios > 0 then .read else .write end) |
					"\(.iops | floor) IOPS, " +
					"\(.bw_bytes / 104857.6 | floor / 10) MiB/s, " +
					"mean latency \(.lat_ns.mean / 1000 | floor) us, " +
					"p99 \(.clat_ns.percentile["99.000000"] / 1000 | floor) us"'
		done
	done
	echo "== guest: dmesg (nvme)"
	dmesg | grep -E "nvme[0-9]" | sed "s/^/dmesg: /"
}

case "${1:-}" in
--guest) guest_main; exit ;;
--inside) ;;
*) exec "$here/vm.sh" --timeout 1800 -- "$here/demo.sh" --inside ;;
esac

. "$here/lib.sh"
nqn=nqn.2026-11.org.example:demo
echo "== host VM: nvmet subsystem $nqn, namespace on a 1 GiB file, mdev port 1"
setup_default 1 $nqn /tmp/demo.img 1G || exit 1
dd if=/dev/zero of=/tmp/demo-qemu.img bs=1M count=1024 status=none || exit 1
modprobe nvmet-mdev || exit 1
uuid=$(create_mdev 1) || exit 1
echo "== mdev $uuid on $(port_parent 1)"
(cd /sys/bus/mdev/devices/"$uuid" && grep . nr_io_queues max_queue_entries \
	mdts shadow_doorbells doorbell_mmap poll_idle_us 2>/dev/null)
echo "== starting a KVM guest: qemu -device vfio-pci,sysfsdev=/sys/bus/mdev/devices/$uuid"
echo "   and QEMU's own NVMe, -device nvme, on a 1 GiB file on the host VM's tmpfs"
echo "   (a nested guest under TCG: about two minutes to boot)"
qargs="-drive file=/tmp/demo-qemu.img,if=none,id=qn,format=raw,cache=none,aio=native"
qargs+=" -device nvme,drive=qn,serial=demo-qemu-nvme"
# Its boot and six fio runs take minutes; more on a loaded machine.
NVMET_MDEV_GUEST_TIMEOUT=${NVMET_MDEV_GUEST_TIMEOUT:-1500} \
	run_guest --mdev "$uuid" --qemu-args "$qargs" \
	--append "nvme.write_queues=1 nvme.poll_queues=1" -- \
	"$here/demo.sh" --guest > /tmp/demo-guest.out 2>/dev/null
rc=$?
# What the guest printed, without its kernel console lines.
sed -n '/^== guest:/,$p' /tmp/demo-guest.out | tr -d '\r' |
	grep -avE '^\[ *[0-9]+\.[0-9]+\] |^qemu-system'
echo "== guest exit status: $rc"
remove_mdev "$uuid"
teardown_nvmet
exit $rc
