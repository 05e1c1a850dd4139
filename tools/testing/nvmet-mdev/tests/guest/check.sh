#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Runs inside a nested guest: report checks as "check: ok|fail: what" lines
# that the test in the host VM turns into TAP results.  Subcommands below.
set -u
check() {
	local what=$1; shift
	if "$@"; then echo "check: ok: $what"; else echo "check: fail: $what"; fi
}
dev=/dev/nvme0n1

vendor_ids() {
	# vendor_ids ID_CTRL_FILE VID SSVID: that nvme id-ctrl output has them
	[ "$(awk '/^vid /{print $3}' "$1")" = "$2" ] &&
		[ "$(awk '/^ssvid /{print $3}' "$1")" = "$3" ]
}

ids() {
	# ids VID SSVID: Identify Controller reports these vendor IDs
	nvme id-ctrl /dev/nvme0 > /tmp/idc
	check "Identify reports VID $1 SSVID $2" vendor_ids /tmp/idc "$1" "$2"
}

identify() {
	# identify EXPECTED_SIZE_BYTES EXPECTED_MDTS EXPECTED_DBBC(0|1)
	nvme list
	nvme id-ctrl /dev/nvme0 > /tmp/idc
	grep -E '^(vid|ssvid|mn|fr|mdts|oacs|sgls|sqes|cqes|nn|subnqn) ' /tmp/idc
	check "the namespace block device exists" test -b $dev
	check "namespace size is $1" test "$(blockdev --getsize64 $dev)" = "$1"
	check "model is Linux" grep -q '^mn *: Linux' /tmp/idc
	check "VID and SSVID are the PCI function's" vendor_ids /tmp/idc \
		"$(cat /sys/class/nvme/nvme0/device/vendor)" \
		"$(cat /sys/class/nvme/nvme0/device/subsystem_vendor)"
	check "mdts is $2" grep -qE "^mdts *: $2\$" /tmp/idc
	local oacs sgls
	oacs=$(awk '/^oacs /{print $3}' /tmp/idc)
	sgls=$(awk '/^sgls /{print $3}' /tmp/idc)
	check "OACS DBBC bit is $3 (oacs=$oacs)" test $(( (oacs >> 8) & 1 )) -eq "$3"
	check "SGLs supported (sgls=$sgls)" test $(( sgls & 3 )) -ne 0
	# queue_count counts the admin queue too.
	check "the guest uses several I/O queues" \
		test "$(cat /sys/class/nvme/nvme0/queue_count)" -ge 3
}

fio_verify() {
	# fio_verify BS [MIB_PER_JOB [JOBS]]: randrw with crc32c verify, each
	# job in its own part of the namespace (default 4 jobs of 16 MiB)
	local mib=${2:-16} jobs=${3:-4} part
	part=$(( $(blockdev --getsize64 $dev) / jobs ))
	cd /tmp || return
	fio --name=verify --filename=$dev --direct=1 --ioengine=io_uring \
		--rw=randrw --bs="$1" --iodepth=16 --numjobs="$jobs" \
		--size="${mib}M" --offset_increment="$part" \
		--verify=crc32c --verify_fatal=1 \
		--verify_state_save=0 --do_verify=1 --group_reporting \
		--output-format=terse --terse-version=3 --output=/tmp/fio.out \
		> /tmp/fio.err 2>&1
	local rc=$?
	cut -c1-200 /tmp/fio.out /tmp/fio.err
	check "fio randrw bs=$1 verify=crc32c: status $rc" test $rc -eq 0
	check "fio bs=$1 reported 0 errors" \
		test "$(grep '^3;' /tmp/fio.out | head -1 | cut -d';' -f5)" = 0
}

intx() {
	# intx: after I/O, the controller's interrupts (boot with pci=nomsi)
	# are pin-based, and they were delivered
	local line n
	line=$(grep nvme0q /proc/interrupts | head -1)
	echo "$line"
	n=$(echo "$line" | awk '{ for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) s += $i; print s + 0 }')
	check "nvme uses a pin-based interrupt" \
		test -n "$line" -a -z "$(echo "$line" | grep -i msi)"
	check "INTx interrupts were delivered ($n)" test "$n" -gt 0
}

dmesg_clean() {
	# dmesg_clean: the nvme driver ("nvme nvmeN: ...") and the block
	# layer ("... dev nvmeNn1 ...") logged no timeout, error or reset
	local bad
	bad=$(dmesg | grep -E 'nvme nvme[0-9]+: |dev nvme[0-9]' |
		grep -iE 'timeout|error|fail|reset|abort|disabl|dead|remov')
	[ -n "$bad" ] && echo "$bad"
	check "the guest's nvme driver logged no error" test -z "$bad"
}

big_io() {
	# big_io: 1 MiB direct I/O, written and read back
	local bs=1M
	echo 1024 > /sys/block/nvme0n1/queue/max_sectors_kb 2>/dev/null
	head -c 2M /dev/urandom > /tmp/pattern
	check "1 MiB writes" dd if=/tmp/pattern of=$dev bs=$bs oflag=direct status=none
	check "1 MiB reads" dd if=$dev of=/tmp/back bs=$bs count=2 iflag=direct status=none
	check "data read back matches" cmp /tmp/pattern /tmp/back
	cat /sys/block/nvme0n1/queue/max_sectors_kb /sys/module/nvme/parameters/sgl_threshold
}

mkfs_write() {
	check "mkfs.ext4" mkfs.ext4 -q -F $dev
	mkdir -p /tmp/mnt
	check "mount" mount $dev /tmp/mnt
	head -c 8M /dev/urandom > /tmp/mnt/blob
	sha256sum /tmp/mnt/blob | awk '{print $1}' > /tmp/mnt/blob.sha256
	echo hello-from-guest > /tmp/mnt/hello
	check "sync" sync
	check "umount" umount /tmp/mnt
	cat /tmp/mnt/blob.sha256 2>/dev/null
}

mount_check() {
	mkdir -p /tmp/mnt
	check "mount after reboot" mount $dev /tmp/mnt
	check "file content survived" grep -qx hello-from-guest /tmp/mnt/hello
	check "blob checksum survived" \
		test "$(sha256sum /tmp/mnt/blob | awk '{print $1}')" = "$(cat /tmp/mnt/blob.sha256)"
	umount /tmp/mnt
}

"$@"
# Results are the "check:" lines; a clean shutdown of the controller
# (CC.SHN) happens at power-off.
exit 0
