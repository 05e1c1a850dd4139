#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# PID 1 of the test VMs (the TCG host VM and the nested KVM guests).
# The root file system is a read-only 9p share; writable places get tmpfs.
# The run directory (9p tag "run", writable) holds the command to run
# ("cmd"); its exit status goes to "rc" and the kernel log to "dmesg".
# Kernel command line: nvmet_mdev.interactive=1 gives a shell instead.

export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root TERM=${TERM:-linux} LANG=C.UTF-8

here=${0%/*}
# The fio of make fio (build-fio.sh) before Debian's: static, where
# Debian's takes a nested guest tens of seconds to link at every start.
[ -x "$here/../../../build/fio/fio" ] && PATH=$here/../../../build/fio:$PATH
# mounts TYPE SOURCE DIR DATA...: each DIR made if missing, SOURCE mounted
# there.  Through client/out/vminit (make client), a static program that
# makes all the system calls in one exec: an exec costs a nested guest
# seconds (a TCG-emulated KVM guest inside the host VM), and init made a
# dozen.  Without it, mkdir(1) and mount(8).
vminit=$here/client/out/vminit
[ -x "$vminit" ] || vminit=
mounts() {
	if [ -n "$vminit" ]; then
		"$vminit" mount "$@"
		return
	fi
	while [ $# -ge 4 ]; do
		mkdir -p "$3"
		mount -t "$1" ${4:+-o "$4"} "$2" "$3"
		shift 4
	done
}

# What both kinds of VM need; a nested guest needs no more (no modules
# there, and its command writes to /tmp only).  The kernel's own file
# systems have no source: "none".
mounts proc none /proc "" sysfs none /sys "" devtmpfs none /dev "" \
	tmpfs none /tmp mode=1777 tmpfs none /run mode=0755 \
	9p run /run/nvmet-mdev trans=virtio,version=9p2000.L,msize=262144
read -r cmdline < /proc/cmdline
case " $cmdline " in
*" nvmet_mdev.guest=1 "*) ;;
*)
	m=(devpts none /dev/pts "gid=5,mode=620,ptmxmode=666"
	   tmpfs none /dev/shm ""
	   configfs none /sys/kernel/config ""
	   cgroup2 none /sys/fs/cgroup "")
	[ -d /sys/kernel/debug ] && m+=(debugfs none /sys/kernel/debug "")
	[ -d /var/tmp ] && m+=(tmpfs none /var/tmp mode=1777)
	for d in /var/log /var/lib/libvirt /var/cache/libvirt /root; do
		[ -d "$d" ] && m+=(tmpfs none "$d" mode=0755)
	done
	mounts "${m[@]}"
	# Our modules live in build/modules, make bench's production
	# kernel's in build/perf-modules (the read-only root has no
	# /lib/modules for these kernels): a modprobe wrapper first in PATH,
	# and the same wrapper for the kernel's request_module().
	top=$here/../../..
	moddir=$top/build/modules
	[ -d "$top/build/perf-modules/lib/modules/$(uname -r)" ] &&
		moddir=$top/build/perf-modules
	mkdir -p /run/bin
	printf '#!/bin/sh\nexec /sbin/modprobe -d %s "$@"\n' \
		"$moddir" > /run/bin/modprobe
	chmod +x /run/bin/modprobe
	[ -w /proc/sys/kernel/modprobe ] && echo /run/bin/modprobe > /proc/sys/kernel/modprobe
	export PATH=/run/bin:$PATH
	ip link set lo up 2>/dev/null
	;;
esac
read -r host < /run/nvmet-mdev/hostname || host=nvmet-mdev
echo "$host" > /proc/sys/kernel/hostname
# A kernel warning must end up in the log, not take the VM down.
echo 0 > /proc/sys/kernel/panic_on_warn 2>/dev/null

finish() {
	# Synchronous: reboot(2) does not return, so PID 1 never exits.
	[ -n "$vminit" ] && exec "$vminit" poweroff /run/nvmet-mdev/dmesg
	dmesg > /run/nvmet-mdev/dmesg 2>/dev/null
	sync
	exec busybox poweroff -f
}

if [[ " $cmdline " == *" nvmet_mdev.interactive=1 "* ]]; then
	echo "nvmet-mdev test VM: interactive shell; 'exit' powers off."
	setsid -c bash -i </dev/ttyS0 >/dev/ttyS0 2>&1
	finish
fi

# near_timeout: what the host VM's nested guests and mdevs are doing, said
# three minutes before vm.sh's timeout kills the host VM (and with it the
# guests' consoles, which live in its tmpfs): each guest's vCPUs (see
# vm-state.py; up to a minute per guest beside a busy one), the last lines
# of its console, and the mdevs' counters.
near_timeout() {
	local here=${0%/*} d c n v line
	echo "init.sh: the command is near its timeout; its nested guests and mdevs:"
	for c in /tmp/nvmet-mdev-vm.*/console /tmp/*/nvmet-mdev-vm.*/console; do
		[ -f "$c" ] || continue
		d=${c%/console}
		d=${d#/tmp/}
		[ -S "/tmp/$d/qmp.sock" ] &&
			"$here/vm-state.py" "/tmp/$d/qmp.sock" \
				"$here/../../../build/obj-guest/System.map" "init.sh: $d: "
		tail -n 8 "$c" | sed "s|^|init.sh: $d console: |"
	done
	for c in /sys/kernel/debug/nvmet-mdev/*/stats; do
		[ -r "$c" ] || continue
		line=
		while read -r n v; do line="$line $n=$v"; done < "$c"
		d=${c%/stats}
		echo "init.sh: mdev ${d##*/}:$line"
	done
}
if [[ " $cmdline " != *" nvmet_mdev.guest=1 "* ]] &&
   read -r t 2>/dev/null < /run/nvmet-mdev/timeout; then
	(
		# vm.sh's timeout runs from QEMU's start, this from init's.
		read -r up _ < /proc/uptime
		up=${up%.*}
		mkfifo /run/near-timeout && exec {fd}<>/run/near-timeout
		read -r -t $((t > 540 ? t - 180 - up : t * 2 / 3 - up)) -u "$fd"
		near_timeout
	) &
fi

# The command in a subshell, not a new bash: an exec costs a nested guest
# seconds.  vm.sh takes an empty rc (the VM died while writing it) as none.
cd /run/nvmet-mdev || finish
(. ./cmd) </dev/null
echo $? > rc
finish
