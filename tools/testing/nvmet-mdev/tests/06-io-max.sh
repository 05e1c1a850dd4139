#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A VM limited with the cgroup v2 io.max cannot escape its limit through
# its disk.  The namespace is a block device (a loop device), so nvmet
# submits bios, and the queue threads that submit them run in the cgroups
# of the process that opened the mdev.  The user space client's perf tool
# plays the VM, doorbells through the mapped page (the threads fetch and
# submit, not the client): in a cgroup with io.max riops and wiops at 20,
# it gets 20 IOPS and the group's io.stat counts its I/O; run from
# outside that cgroup, the same mdev is not limited (more than twice the
# limit: the unlimited rate was 200 to 700 IOPS here, by the load).  (cpu.max: the
# client's hostile_test cpu_max_covers_queue_threads.)
. "$(dirname "$0")/../lib.sh"
nqn=nqn.2026-11.org.example:iomax
perf=$NVMET_MDEV_HARNESS/client/out/perf
cg=/sys/fs/cgroup
truncate -s 64M /tmp/iomax.img || die "backing file"
loop=$(losetup -f --show /tmp/iomax.img) || die "losetup"
setup_default 1 $nqn "$loop" || die "nvmet setup"
modprobe nvmet-mdev || die "modprobe nvmet-mdev"
uuid=$(create_mdev 1) || die "create mdev"
echo on > "/sys/bus/mdev/devices/$uuid/doorbell_mmap" || die "doorbell_mmap"
read -r dev < "/sys/block/${loop#/dev/}/dev"
echo +io > $cg/cgroup.subtree_control || die "enable the io controller"
vm=$cg/nvmet-iomax
mkdir $vm || die "make the VM's cgroup"

# in_vm CMD...: CMD in the VM's cgroup.
in_vm() {
	(echo $BASHPID > $vm/cgroup.procs && exec "$@")
}
# The VM's reads or writes of the device so far (its io.stat).
ios() {
	io_stat $vm "$dev" "$1"
}
# run NAME WHERE PERF-ARGS...: 5 s of perf; sets iops.
run() {
	local name=$1 where=$2 out rc
	shift 2
	out=$($where "$perf" -d mmap -D 4 -t 5 "$@" "$uuid")
	rc=$?
	# shellcheck disable=SC2016
	tap_ok "$name: perf ran clean (status $rc: $out)" \
		eval '[ $rc -eq 0 ] && [[ $out == *" errors=0" ]]'
	iops=${out#iops=}
	iops=${iops%% *}
	[[ $iops =~ ^[0-9]+$ ]] || iops=0
}

r0=$(ios rios)
run "no limit, reads" in_vm
r1=$(ios rios)
tap_ok "the VM's cgroup is charged for its reads ($((r1 - r0)) at $iops IOPS over 5 s)" \
	test $((r1 - r0)) -ge $((iops * 4)) -a "$iops" -gt 40
echo "$dev riops=20 wiops=20" > $vm/io.max || die "set io.max"
run "riops=20" in_vm
tap_ok "riops=20: the reads are limited ($iops IOPS)" test "$iops" -le 25
run "wiops=20" in_vm -w
tap_ok "wiops=20: the writes are limited ($iops IOPS)" test "$iops" -le 25
w=$(ios wios)
tap_ok "the VM's cgroup is charged for its writes ($w)" test "$w" -ge 50
# Opened from outside the VM's cgroup, the threads are not in it either.
run "opened from the root cgroup" env
tap_ok "from the root cgroup the same mdev is not limited ($iops IOPS)" \
	test "$iops" -gt 40

rmdir $vm
teardown_nvmet
losetup -d "$loop"
tap_ok "nvmet-mdev unloads" modprobe -r nvmet-mdev
tap_done
