#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# /init of the guest 26-guest-migrate.sh migrates: an initramfs with
# busybox and fio only (a 9p root, as the other guests have, blocks
# migration).  Until the host writes "STOP" into the last 4 KiB of the
# namespace, fio writes 8 MiB regions of it in turn and reads each back,
# verifying (crc32c), 16 commands in flight; the host migrates the guest
# meanwhile.  Results on the console: "check: ok|fail: ..." lines and
# "mig: ..." progress lines.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null

say() { echo "mig: $*"; }
check() { if "$@"; then echo "check: ok: $desc"; else echo "check: fail: $desc"; fi; }
bye() { say done; sync; poweroff -f; }

i=0
while [ ! -b /dev/nvme0n1 ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i + 1)); done
desc="the namespace of the mdev appeared"
check test -b /dev/nvme0n1 || bye
sectors=$(cat /sys/block/nvme0n1/size)
last=$((sectors / 8 - 1))	# the last 4 KiB block: the host's word

stopped() {
	[ "$(dd if=/dev/nvme0n1 bs=4096 skip=$last count=1 iflag=direct 2>/dev/null |
	     head -c 4)" = STOP ]
}

n=0 failed=0 start=$(cut -d. -f1 /proc/uptime)
say "fio starts"
while ! stopped; do
	off=$(((n % 4) * 8))
	if ! /fio --name=mig --filename=/dev/nvme0n1 --ioengine=io_uring \
		--direct=1 --rw=write --bs=4k --iodepth=16 --size=8M \
		--offset=${off}M --verify=crc32c --do_verify=1 --verify_fatal=1 \
		--minimal > /tmp/fio.out 2>&1; then
		failed=$((failed + 1))
		sed 's/^/mig: fio: /' /tmp/fio.out
	fi
	n=$((n + 1))
	say "iteration $n"
	# A safety net: the host stops it long before.
	[ $(($(cut -d. -f1 /proc/uptime) - start)) -lt 1500 ] || break
done
say "$n iterations, $failed failed"
desc="fio wrote and verified 8 MiB $n times across the migrations, $failed failed"
check test $failed -eq 0 -a $n -gt 0
desc="the host said stop"
check stopped
# The nvme driver must not have timed out, aborted or reset anything.
dmesg | grep -iE 'nvme.*(timeout|abort|reset|error)' | sed 's/^/mig: dmesg: /'
desc="the guest's nvme driver logged no timeout, abort, reset or error"
check test -z "$(dmesg | grep -iE 'nvme.*(timeout|abort|reset|error)')"
bye
