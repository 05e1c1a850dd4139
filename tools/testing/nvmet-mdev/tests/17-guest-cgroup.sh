#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A VM pays for the CPU and the I/O its disk costs.  QEMU runs in a cgroup
# v2 group of its own; the mdev's doorbells are mapped (doorbell_mmap=on),
# so that the queue threads fetch and submit the guest's commands, and the
# namespace is a block device (a loop device), so that nvmet submits bios.
# While the guest's fio writes and verifies:
#  - every queue thread of the mdev is in QEMU's group;
#  - the guest's I/O rate is measured for 10 s;
#  - the group's io.max is set to about a quarter of that rate, split
#    between reads and writes and in tens, for 10 s: the group's io.stat
#    counts the guest's I/O and shows it held to the limit (give or take
#    a second's worth), and the guest's commands keep to that pace (a
#    guest too slow for 10 a second each way to hold it back skips
#    these checks);
#  - the limit is lifted; the group's cpu.max is set to 20% of a CPU for
#    10 s: the group is throttled, its usage covers the threads' CPU time,
#    and the guest's I/O rate falls under 60% of the rate measured first
#    (how closely CFS holds the quota is the scheduler's business: in the
#    TCG host VM time the machine takes the vCPU away counts as the
#    running task's);
#  - the limit is lifted, fio goes on and verifies everything it wrote.
# Then the usual release: no nvmet controller left, no page left pinned,
# the mdev removed and the module unloaded.  (The same accounting with the
# user space client as the VMM: hostile_test's cgroup cases and 06-io-max.)
# timeout: 1500
. "$(dirname "$0")/../lib.sh"
g=$NVMET_MDEV_HARNESS/tests/guest/check.sh
nqn=nqn.2026-11.org.example:cgroup
cg=/sys/fs/cgroup
vm=$cg/nvmet-vm
run=/tmp/cgroup-run
truncate -s 128M /tmp/ns1.img || die "backing file"
loop=$(losetup -f --show /tmp/ns1.img) || die "losetup"
read -r dev < "/sys/block/${loop#/dev/}/dev"
setup_default 1 $nqn "$loop" || die "nvmet setup"
modprobe nvmet-mdev || die "modprobe"
uuid=$(create_mdev 1) || die "create mdev"
echo on > "/sys/bus/mdev/devices/$uuid/doorbell_mmap" || die "doorbell_mmap"
echo "+cpu +io" > $cg/cgroup.subtree_control ||
	die "enable the cpu and io controllers"
mkdir $vm || die "make the VM's cgroup"

# The queue threads of the mdev (kernel threads "nvmet-mdevN/Q").
threads() {
	local p c
	for p in /proc/[0-9]*; do
		read -r c 2>/dev/null < "$p/comm" || continue
		[[ $c == nvmet-mdev[0-9]*/[0-9]* ]] && echo "${p#/proc/}"
	done
}
# Their CPU time so far, in ticks (utime + stime).
threads_ticks() {
	local p f sum=0
	for p in $(threads); do
		read -ra f 2>/dev/null < "/proc/$p/stat" || continue
		sum=$((sum + f[13] + f[14]))
	done
	echo $sum
}
# cpu_stat KEY: a line of the VM's cpu.stat.
cpu_stat() {
	local k v
	while read -r k v; do
		[ "$k" = "$1" ] && echo "$v" && return
	done < $vm/cpu.stat
	echo 0
}

rm -rf $run && mkdir -p $run
pins0=$(foll_pins)
(
	echo $BASHPID > $vm/cgroup.procs || exit 2
	TMPDIR=$run NVMET_MDEV_GUEST_TIMEOUT=1200 run_guest --mdev "$uuid" -- \
		$g vm_limited + dmesg_clean
) > /tmp/cgroup.out 2>/dev/null &
gpid=$!

if guest_said $run $gpid io 1200; then
	tids=$(threads)
	n=0 in=0
	for p in $tids; do
		n=$((n + 1))
		read -r c < "/proc/$p/cgroup" && [ "$c" = "0::/nvmet-vm" ] &&
			in=$((in + 1))
	done
	tap_ok "the mdev's queue threads run in QEMU's cgroup ($in of $n)" \
		test $n -gt 0 -a $in -eq $n
	c0=$(mdev_stat "$uuid" commands)
	pause 10
	c1=$(mdev_stat "$uuid" commands)
	a=$((c1 - c0))

	# io.max at about a quarter of that rate, half of it each way, in
	# tens: 7.3's blk-throttle holds an iops limit only at a multiple
	# of 10 (measured in the host VM, fio reading a loop device at QD16
	# for 20 s, plus its start: riops=9 let 16.6 reads a second through,
	# 7 let 10.9, 5 let 5.6; 12 and 15 let 10.8, as 10 did; 20 let
	# 20.8).  Its slices are HZ/10 long, and throtl_trim_slice() takes
	# off the whole ios a slice allows: under 10 a second that is none,
	# which throtl_trim_iops() takes for an overflow and forgives every
	# io dispatched so far; over a multiple of 10 the fraction is lost.
	lim=$((a / 800 * 10))
	[ $lim -ge 10 ] || lim=10
	# At 10 a second each way, the least that blk-throttle holds
	# exactly, a guest slower than 27 commands a second is hardly held
	# back (on a loaded machine: 309 in 10 s seen beside 13-libvirt,
	# 766 on CI), and its counts under the limit would show nothing:
	# then the checks of the limit are skipped, not passed.
	binds=$((4 * 2 * lim * 10 <= 3 * a))
	# The counts start once the limit is in place: on a loaded host VM
	# each $(...) takes long enough for dozens of unthrottled reads.
	echo "$dev riops=$lim wiops=$lim" > $vm/io.max
	s0=$SECONDS
	c2=$(mdev_stat "$uuid" commands)
	r0=$(io_stat $vm "$dev" rios) w0=$(io_stat $vm "$dev" wios)
	pause 10
	r1=$(io_stat $vm "$dev" rios) w1=$(io_stat $vm "$dev" wios)
	c3=$(mdev_stat "$uuid" commands)
	s1=$SECONDS
	echo "$dev riops=max wiops=max" > $vm/io.max
	n=$((c3 - c2)) r=$((r1 - r0)) w=$((w1 - w0)) t=$((s1 - s0 + 1))
	echo "# before the limits $a commands in 10 s;" \
		"at io.max riops=wiops=$lim $n in $((s1 - s0)) s, io.stat" \
		"$r reads, $w writes"
	# io.stat counts a bio when blk-throttle lets it through; t is
	# rounded up to whole seconds, and blk-throttle may run a slice or
	# two (a tenth of a second each) ahead: a second's worth more.
	d=$((s1 - s0))
	if [ $binds = 1 ]; then
		tap_ok "io.max holds the guest's reads to $lim a second ($r in $d s)" \
			test $r -le $((lim * (t + 1)))
		tap_ok "io.max holds the guest's writes to $lim a second ($w in $d s)" \
			test $w -le $((lim * (t + 1)))
		# Commands in flight (fio's 2 jobs at QD16) make the
		# difference.
		tap_ok "the guest's commands kept to that pace ($n in $d s, $a in 10 s before)" \
			test $n -le $((2 * lim * (t + 1) + 64))
	else
		why="$a commands in 10 s: riops=wiops=$lim would not bind"
		tap_skip "io.max holds the guest's reads to $lim a second" "$why"
		tap_skip "io.max holds the guest's writes to $lim a second" "$why"
		tap_skip "the guest's commands kept to that pace" "$why"
	fi
	# Not one for one: the commands still held by blk-throttle at the
	# end are not counted yet (seen: 231 for 272).  A group not charged
	# would count none.
	tap_ok "the VM's group's io.stat counts the guest's I/O ($((r + w)) for $n commands)" \
		test $((r + w)) -gt 0 -a $((2 * (r + w))) -ge $n

	c2=$(mdev_stat "$uuid" commands)
	echo "20000 100000" > $vm/cpu.max
	u0=$(cpu_stat usage_usec) t0=$(cpu_stat nr_throttled) k0=$(threads_ticks)
	s0=$SECONDS
	pause 10
	u1=$(cpu_stat usage_usec) t1=$(cpu_stat nr_throttled) k1=$(threads_ticks)
	c3=$(mdev_stat "$uuid" commands)
	s1=$SECONDS
	echo "max 100000" > $vm/cpu.max
	hz=$(getconf CLK_TCK)
	use=$(((u1 - u0) / 1000)) thr=$(((k1 - k0) * 1000 / hz))
	b=$((c3 - c2))
	echo "# at cpu.max 20% $b commands in $((s1 - s0)) s; the group used" \
		"$use ms of CPU, throttled $((t1 - t0)) times; the queue threads $thr ms"
	tap_ok "the queue threads did the work ($thr ms of CPU in 10 s)" \
		test $thr -ge 100
	tap_ok "the VM's group's usage covers its queue threads ($use ms >= $thr ms)" \
		test $((use + 40)) -ge $((thr * 9 / 10))
	tap_ok "the VM's group was throttled ($((t1 - t0)) times)" \
		test $((t1 - t0)) -gt 0
	tap_ok "at 20% of a CPU the guest's I/O slowed ($b commands, $a before the limits)" \
		test $((b * 10)) -lt $((a * 6))
	guest_tell "$run" go
else
	tap_ok "the guest's fio ran" false
fi

wait $gpid
rc=$?
out=$(cat /tmp/cgroup.out)
tap_ok "the guest ran clean (status $rc)" test $rc -eq 0
guest_checks "cgroup" "$out"
guest_shutdown "cgroup" "$uuid" "$out"
released "cgroup" $nqn "$pins0"
tap_ok "remove the mdev" remove_mdev "$uuid"
tap_ok "the VM's cgroup goes" rmdir $vm
teardown_nvmet
losetup -d "$loop"
tap_ok "nvmet-mdev unloads" modprobe -r nvmet-mdev
tap_done
