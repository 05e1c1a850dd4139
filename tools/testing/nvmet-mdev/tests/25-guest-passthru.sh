#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# nvmet passthru over an mdev (Documentation/nvme/mdev.rst, "nvmet
# passthru"; patches 0026 and 0029): a subsystem in passthru mode over the
# host VM's QEMU NVMe controller, seen by a guest through one mdev.  The
# guest's controller identifies as the QEMU controller (model, serial
# number), fio verifies on its namespace, discard, Get Features Timestamp
# and the SMART log pass through, vendor specific admin and I/O commands
# (whose data nvmet cannot know) are refused with Invalid Command Opcode,
# and the host reads the guest's data back from the real namespace.
# nvme: 256M
# timeout: 1800
. "$(dirname "$0")/../lib.sh"
g=$NVMET_MDEV_HARNESS/tests/guest/check.sh
nqn=nqn.2026-11.org.example:pt
test_vm_only 25-guest-passthru || exit 1
modprobe nvmet || die "modprobe nvmet"
modprobe nvmet-mdev || die "modprobe nvmet-mdev"

qctrl=
for c in /sys/class/nvme/nvme*; do
	grep -q '^QEMU NVMe Ctrl' "$c/model" 2>/dev/null && qctrl=${c##*/}
done
[ -n "$qctrl" ] || die "no QEMU NVMe controller in the host VM"
read -r qserial < /sys/class/nvme/$qctrl/serial
qdev=
for d in /sys/block/nvme*n1; do
	cmp -s "$d/device/subsysnqn" /sys/class/nvme/$qctrl/subsysnqn &&
		qdev=/dev/${d##*/}
done
[ -n "$qdev" ] || die "no namespace of $qctrl"
echo "# passthru over $qctrl ($qserial, namespace $qdev)"

sys=$NVMET_CFS/subsystems/$nqn
mkdir -p "$sys" && echo 1 > "$sys/attr_allow_any_host" || die "subsystem"
echo -n /dev/$qctrl > "$sys/passthru/device_path"
tap_ok "a passthru subsystem over $qctrl" eval "echo 1 > $sys/passthru/enable"
make_port 1 && link_subsys 1 $nqn || die "mdev port"
uuid=$(create_mdev 1) || die "create mdev"

pins0=$(foll_pins)
seed=$((SRANDOM % 1000000 + 1))
out=$(NVMET_MDEV_GUEST_TIMEOUT=1500 run_guest --mdev "$uuid" -- \
	$g passthru_io $nqn "$qserial" $seed)
rc=$?
tap_ok "the guest powered off clean (status $rc)" test $rc -eq 0
[ $rc -eq 0 ] || echo "$out" | tail -n 60 | sed 's/^/guest console| /' >&2
guest_checks "passthru" "$out"
guest_shutdown "passthru" "$uuid" "$out"

tap_ok "the guest's data through passthru verifies on $qdev" \
	fio --name=stamp --filename="$qdev" --direct=1 --ioengine=psync \
	--rw=write --bs=4k --size=4M --randseed=$seed --verify=xxhash \
	--verify_only --verify_state_save=0 --output=/tmp/again.out

remove_mdev "$uuid"
released "passthru" $nqn "$pins0"
rm -f "$NVMET_CFS/ports/1/subsystems/$nqn" && rmdir "$NVMET_CFS/ports/1"
echo 0 > "$sys/passthru/enable"
rmdir "$sys"
tap_ok "nvmet-mdev unloads" modprobe -r nvmet-mdev
tap_done
