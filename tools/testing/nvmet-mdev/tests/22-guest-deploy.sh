#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The storage operators put behind a VM, seen by one guest
# (Documentation/nvme/mdev.rst, "Deployments"; nvmet passthru is
# 25-guest-passthru):
#  - subsystem "deploy": namespace 1 a loop device with 512-byte sectors,
#    2 one with 4 KiB sectors, 3 a null_blk device (memory backed), 4 an
#    NVMe/TCP namespace: the host VM connects to its own nvmet-tcp port on
#    the loopback interface and the namespace is the connected block
#    device.  The guest sees each one's LBA format and size, writes and
#    verifies data (fio; mkfs and files on namespace 1), and the host reads
#    it all back from the backing devices once the guest is gone.
#  - While the guest runs, namespace 5 is added, namespace 2 disabled and
#    removed, and namespace 1's loop device grown (revalidate_size): the
#    guest's nvme driver follows from the Namespace Attribute Changed
#    events, without a reset.
#  - The TCP path is cut for 5 s (the subsystem unlinked from the TCP port)
#    while fio writes and verifies on namespace 4: the host VM's NVMe/TCP
#    controller reconnects and the guest's I/O goes on with no error.
# timeout: 2400
. "$(dirname "$0")/../lib.sh"
g=$NVMET_MDEV_HARNESS/tests/guest/check.sh
nqn=nqn.2026-11.org.example:deploy
rnqn=nqn.2026-11.org.example:remote
hostnqn=nqn.2026-11.org.example:host-vm
mib=64
grown=$((96 << 20))
sys=$NVMET_CFS/subsystems/$nqn
test_vm_only 22-guest-deploy || exit 1
modprobe nvmet || die "modprobe nvmet"
modprobe nvmet-mdev || die "modprobe nvmet-mdev"

# add_ns NSID PATH: namespace NSID of "deploy" on PATH, enabled.
add_ns() {
	mkdir -p "$sys/namespaces/$1" &&
		echo -n "$2" > "$sys/namespaces/$1/device_path" &&
		echo 1 > "$sys/namespaces/$1/enable"
}

# The local block devices.
truncate -s ${mib}M /tmp/l512.img /tmp/l4k.img /tmp/ns5.img /tmp/remote.img
l512=$(losetup --find --show --sector-size 512 /tmp/l512.img) || die "loop 512"
l4k=$(losetup --find --show --sector-size 4096 /tmp/l4k.img) || die "loop 4k"
nb=/sys/kernel/config/nullb/deploy
mkdir $nb && echo $mib > $nb/size && echo 1 > $nb/memory_backed &&
	echo 1 > $nb/power || die "null_blk"
nullb=/dev/deploy
[ -b $nullb ] || nullb=/dev/nullb$(cat $nb/index)
echo "# loop devices $l512 $l4k, null_blk $nullb"

# The remote one: nvmet-tcp on 127.0.0.1, connected from the host VM.
ip link set lo up || die "lo up"
modprobe nvmet-tcp && modprobe nvme-tcp || die "modprobe tcp"
mkdir -p "$NVMET_CFS/subsystems/$rnqn/namespaces/1"
echo 1 > "$NVMET_CFS/subsystems/$rnqn/attr_allow_any_host"
echo -n /tmp/remote.img > "$NVMET_CFS/subsystems/$rnqn/namespaces/1/device_path"
echo 1 > "$NVMET_CFS/subsystems/$rnqn/namespaces/1/enable" || die "remote ns"
tport=$NVMET_CFS/ports/2
mkdir $tport
echo tcp > $tport/addr_trtype
echo ipv4 > $tport/addr_adrfam
echo 127.0.0.1 > $tport/addr_traddr
echo 4420 > $tport/addr_trsvcid
ln -s "$NVMET_CFS/subsystems/$rnqn" "$tport/subsystems/$rnqn" || die "tcp port"
# A reconnect attempt each second, for up to two minutes.
nvme connect -t tcp -a 127.0.0.1 -s 4420 -n $rnqn --hostnqn=$hostnqn \
	--hostid="$(cat /proc/sys/kernel/random/uuid)" \
	--reconnect-delay=1 --ctrl-loss-tmo=120 || die "nvme connect"
# ctrl_of NQN: the host VM's NVMe controller (nvmeX) of subsystem NQN.
ctrl_of() {
	local c q
	for c in /sys/class/nvme/nvme*; do
		read -r q 2>/dev/null < "$c/subsysnqn" || continue
		[ "$q" = "$1" ] && echo "${c##*/}" && return 0
	done
	return 1
}
rctrl=$(ctrl_of $rnqn) || die "no NVMe/TCP controller"
rdev=
for ((i = 0; i < 50; i++)); do
	[ -b /dev/${rctrl}n1 ] && rdev=/dev/${rctrl}n1 && break
	pause 0.2
done
[ -n "$rdev" ] || die "no NVMe/TCP namespace"
echo "# NVMe/TCP controller $rctrl, namespace $rdev"

# Subsystem "deploy" over all four.
mkdir -p "$sys" && echo 1 > "$sys/attr_allow_any_host" || die "subsystem"
add_ns 1 "$l512" && add_ns 2 "$l4k" && add_ns 3 $nullb && add_ns 4 "$rdev" ||
	die "namespaces"

make_port 1 && link_subsys 1 $nqn || die "mdev port"
ua=$(create_mdev 1) || die "create mdev"

run=/tmp/deploy-run
rm -rf $run && mkdir -p $run
pins0=$(foll_pins)
seed=$((SRANDOM % 1000000 + 1))
TMPDIR=$run NVMET_MDEV_GUEST_TIMEOUT=1800 run_guest --mdev "$ua" -- \
	$g ns_formats $nqn 1:512:$((mib << 20)) 2:4096:$((mib << 20)) \
		3:512:$((mib << 20)) 4:4096:$((mib << 20)) \
	+ ns_stamp $nqn 2 $seed 8 + ns_stamp $nqn 3 $((seed + 1)) 8 \
	+ ns_mkfs $nqn 1 + ns_changes $nqn $grown \
	+ remote_io $nqn 4 > /tmp/deploy.out &
gpid=$!

if guest_said $run $gpid ns-ready 1500; then
	echo "# host: namespace 5 in, 2 out, 1 grown"
	tap_ok "add namespace 5" add_ns 5 /tmp/ns5.img
	tap_ok "disable namespace 2" eval "echo 0 > $sys/namespaces/2/enable"
	tap_ok "remove namespace 2" rmdir "$sys/namespaces/2"
	truncate -s $grown /tmp/l512.img && losetup --set-capacity "$l512"
	tap_ok "grow namespace 1's loop device and revalidate" \
		eval "echo 1 > $sys/namespaces/1/revalidate_size"
else
	tap_ok "the guest got to the namespace changes" false
fi

if guest_said $run $gpid remote-io 900; then
	echo "# host: cutting the TCP path for 5 s"
	tap_ok "unlink the remote subsystem from its TCP port" \
		rm "$tport/subsystems/$rnqn"
	pause 5
	# The port went with its last subsystem: the host VM's controller
	# fails to connect once a second meanwhile.
	st=$(cat /sys/class/nvme/$rctrl/state)
	tap_ok "the host VM's NVMe/TCP controller lost its path ($st)" \
		test "$st" != live
	tap_ok "link it again" ln -s "$NVMET_CFS/subsystems/$rnqn" \
		"$tport/subsystems/$rnqn"
	for ((i = 0; i < 120; i++)); do
		[ "$(cat /sys/class/nvme/$rctrl/state)" = live ] && break
		pause 1
	done
	tap_ok "the host VM's NVMe/TCP controller reconnected (within $((i + 1)) s)" \
		test "$(cat /sys/class/nvme/$rctrl/state)" = live
	guest_tell $run remote-back
else
	tap_ok "the guest got to the remote I/O" false
fi

wait $gpid
rc=$?
out=$(cat /tmp/deploy.out)
tap_ok "the guest powered off clean (status $rc)" test $rc -eq 0
[ $rc -eq 0 ] || sed 's/^/guest console| /' /tmp/deploy.out | tail -n 60 >&2
guest_checks "deploy" "$out"
tap_ok "the deploy controller was enabled once: no reset ($(mdev_stat "$ua" enables))" \
	test "$(mdev_stat "$ua" enables)" = 1
guest_shutdown "deploy" "$ua" "$out"
dmesg | grep -E "nvme $rctrl: " | tail -n 8 | sed 's/^/# host VM: /'

# What the guest wrote, read from the host's side of each device.
# fio_again DEV SEED: fio --verify_only of ns_stamp's job on DEV.
fio_again() {
	fio --name=stamp --filename="$1" --direct=1 --ioengine=psync \
		--rw=write --bs=4k --size=8M --randseed="$2" --verify=xxhash \
		--verify_only --verify_state_save=0 --output=/tmp/again.out \
		> /tmp/again.err 2>&1 || { tail -n 5 /tmp/again.out /tmp/again.err; return 1; }
}
tap_ok "the guest's data on the 4 KiB loop device verifies from the host" \
	fio_again "$l4k" $seed
tap_ok "the guest's data on null_blk verifies from the host" \
	fio_again $nullb $((seed + 1))

remove_mdev "$ua"
released "deploy" $nqn "$pins0"
rm -f "$NVMET_CFS"/ports/1/subsystems/* && rmdir "$NVMET_CFS/ports/1"
for n in 1 3 4 5; do
	echo 0 > "$sys/namespaces/$n/enable" && rmdir "$sys/namespaces/$n"
done
rmdir "$sys"
# Once nvmet has let go of it (a block device open for writing is not
# mounted: CONFIG_BLK_DEV_WRITE_MOUNTED=n).
mkdir -p /tmp/mnt
tap_ok "the guest's ext4 on the 512-byte loop device mounts in the host" \
	mount -o ro "$l512" /tmp/mnt
if mountpoint -q /tmp/mnt; then
	tap_ok "with the guest's file in it" grep -qx hello-from-guest /tmp/mnt/hello
	tap_ok "and its blob's checksum" test "$(sha256sum < /tmp/mnt/blob | cut -d' ' -f1)" = \
		"$(cat /tmp/mnt/blob.sha256)"
	umount /tmp/mnt
fi
tap_ok "nvme disconnect from the NVMe/TCP subsystem" nvme disconnect -n $rnqn
rm -f "$tport/subsystems/$rnqn" && rmdir $tport
echo 0 > "$NVMET_CFS/subsystems/$rnqn/namespaces/1/enable"
rmdir "$NVMET_CFS/subsystems/$rnqn/namespaces/1" "$NVMET_CFS/subsystems/$rnqn"
losetup -d "$l512" "$l4k"
echo 0 > $nb/power && rmdir $nb
tap_ok "nvmet-mdev unloads" modprobe -r nvmet-mdev
tap_done
