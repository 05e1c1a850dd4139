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

mount -t proc proc /proc
read -r cmdline < /proc/cmdline
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
case " $cmdline " in
*" nvmet_mdev.guest=1 "*)
	# A nested guest: an exec costs it seconds (a TCG-emulated KVM guest
	# inside the host VM), so only what the guest checks need.  No
	# modules there, and its command writes to /tmp only.
	mount -t tmpfs -o mode=1777 tmpfs /tmp
	mount -t tmpfs -o mode=0755 tmpfs /run
	;;
*)
	mkdir -p /dev/pts /dev/shm
	mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts
	mount -t tmpfs tmpfs /dev/shm
	for d in /tmp /run /var/tmp /var/log /var/lib/libvirt /var/cache/libvirt /root; do
		[ -d "$d" ] && mount -t tmpfs -o mode=0755 tmpfs "$d"
	done
	chmod 1777 /tmp /var/tmp
	mount -t configfs configfs /sys/kernel/config
	[ -d /sys/kernel/debug ] && mount -t debugfs debugfs /sys/kernel/debug
	mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null
	# Our modules live in build/modules (the read-only root has no
	# /lib/modules for this kernel): a modprobe wrapper first in PATH,
	# and the same wrapper for the kernel's request_module().
	top=$(cd "$(dirname "$0")/../../.." && pwd)
	mkdir -p /run/bin
	printf '#!/bin/sh\nexec /sbin/modprobe -d %s/build/modules "$@"\n' "$top" > /run/bin/modprobe
	chmod +x /run/bin/modprobe
	[ -w /proc/sys/kernel/modprobe ] && echo /run/bin/modprobe > /proc/sys/kernel/modprobe
	export PATH=/run/bin:$PATH
	ip link set lo up 2>/dev/null
	;;
esac
mkdir -p /run/nvmet-mdev
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 run /run/nvmet-mdev
read -r host < /run/nvmet-mdev/hostname || host=nvmet-mdev
echo "$host" > /proc/sys/kernel/hostname
# A kernel warning must end up in the log, not take the VM down.
echo 0 > /proc/sys/kernel/panic_on_warn 2>/dev/null

finish() {
	dmesg > /run/nvmet-mdev/dmesg 2>/dev/null
	sync
	# Synchronous: reboot(2) does not return, so PID 1 never exits.
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
