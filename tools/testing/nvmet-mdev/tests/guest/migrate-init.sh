#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# /init of the guest 26-guest-migrate.sh migrates: an initramfs with
# busybox and fio only (a 9p root, as the other guests have, blocks
# migration).  The guest writes a stamp (16 MiB at 64 MiB, verified;
# xxhash: the nested guests' CPU has no CRC32 instruction),
# then one fio runs random 64 KiB writes over the first 32 MiB, 16 in
# flight, verifying each block it wrote shortly after (verify_backlog),
# until the host writes "STOP" into the last 4 KiB of the namespace; the
# host migrates the guest meanwhile.  Then the guest reads the stamp back
# (verify_only) and checks its kernel log.  Results on the console:
# "check: ok|fail: ..." lines and "mig: ..." progress lines.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null

say() { echo "mig: $*"; }
check() { if "$@"; then echo "check: ok: $desc"; else echo "check: fail: $desc"; fi; }
bye() { say done; sync; poweroff -f; }
# The stamp, as written and as read back (the host verifies it too).
stamp() {
	/fio --name=stamp --filename=/dev/nvme0n1 --ioengine=io_uring \
		--direct=1 --rw=write --bs=64k --iodepth=16 --size=16M \
		--offset=64M --verify=xxhash --verify_fatal=1 --minimal "$@" \
		> /tmp/stamp.out 2>&1
}
# Field 5 of fio's terse output: its error.
fio_error() { grep '^3;' "$1" | cut -d';' -f5; }

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

desc="the guest wrote and verified its stamp"
check stamp --do_verify=1

/fio --name=mig --filename=/dev/nvme0n1 --ioengine=io_uring --direct=1 \
	--rw=randwrite --bs=64k --iodepth=16 --size=32M --time_based \
	--runtime=1500 --verify=xxhash --verify_backlog=16 --verify_fatal=1 \
	--minimal > /tmp/fio.out 2>&1 &
fio=$!
say "fio runs"
while kill -0 $fio 2>/dev/null && ! stopped; do sleep 2; done
kill -INT $fio 2>/dev/null
wait $fio
grep -v '^3;' /tmp/fio.out | sed 's/^/mig: fio: /'
err=$(fio_error /tmp/fio.out)
written=$(grep '^3;' /tmp/fio.out | cut -d';' -f47)
verified=$(grep '^3;' /tmp/fio.out | cut -d';' -f6)
say "fio: error ${err:-none}, ${written:-0} KiB written, ${verified:-0} KiB read to verify"
desc="fio wrote and verified across the migrations"
desc="$desc (${written:-0} KiB written, ${verified:-0} KiB verified, error ${err:-none})"
check test "${err:-1}" = 0 -a "${written:-0}" -gt 0 -a "${verified:-0}" -gt 0
desc="the host said stop"
check stopped
desc="the stamp verifies after the migrations"
check stamp --verify_only
# The nvme driver must not have timed out, aborted or reset anything.
dmesg | grep -iE 'nvme.*(timeout|abort|reset|error)' | sed 's/^/mig: dmesg: /'
desc="the guest's nvme driver logged no timeout, abort, reset or error"
check test -z "$(dmesg | grep -iE 'nvme.*(timeout|abort|reset|error)')"
bye
