#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Runs inside a nested guest: report checks as "check: ok|fail: what" lines
# that the test in the host VM turns into TAP results.  Subcommands below.
set -u
#
#   check.sh STEP [ARGS...] [+ STEP [ARGS...]]...
#
# runs the steps in turn.  An exec costs a nested guest seconds (its
# kernel and QEMU run in the TCG-emulated host VM), so one check.sh runs
# all of a guest's steps, and the checks themselves use bash builtins:
# each step below execs only the tool it exercises (nvme, fio, dd, ...).
# The script exits with 1 if any check failed (and 0 otherwise), so that a
# failure the host cannot parse from the console still fails the run.
failed=0
check() {
	local what=$1; shift
	if "$@"; then
		echo "check: ok: $what"
	else
		echo "check: fail: $what"
		failed=1
	fi
}
dev=/dev/nvme0n1
ctrl=/sys/class/nvme/nvme0
ackwrite=$(dirname "$0")/../../client/out/ackwrite
highdma=$(dirname "$0")/../../client/out/highdma
# fio's verify checksum.  The nested guests' CPU (-cpu qemu64) has no
# SSE4.2, so crc32c is computed in software: 4k randrw, 3 jobs of 4 MiB at
# QD16, took 29 s of a guest's time with crc32c verify, 11 s with xxhash
# and 11 s without verify (2026-12-04).  Each block's verify header
# (offset, length, generation) is checked with either hash.
fio_hash=xxhash

# idc_load: Identify Controller, parsed into idc[field] ("vid : 0x1b36").
declare -A idc
idc_load() {
	local k sep v
	idc=()
	nvme id-ctrl /dev/nvme0 > /tmp/idc || return
	while read -r k sep v; do
		[ "$sep" = : ] && idc[$k]=$v
	done < /tmp/idc
	for k in vid ssvid mn fr mdts oacs sgls sqes cqes nn subnqn; do
		echo "$k : ${idc[$k]-}"
	done
}

# ns_bytes: the namespace's size in bytes (0 without one).
ns_bytes() {
	local sectors=0
	read -r sectors < /sys/block/${dev#/dev/}/size
	echo $((sectors * 512))
}

# half_bytes: half the namespace, on a MiB boundary (O_DIRECT offsets).
half_bytes() {
	echo $(( $(ns_bytes) / 2 >> 20 << 20 ))
}

ids() {
	# ids VID SSVID: Identify Controller reports these vendor IDs
	idc_load
	check "Identify reports VID $1 SSVID $2" \
		test "${idc[vid]-}:${idc[ssvid]-}" = "$1:$2"
}

identify() {
	# identify EXPECTED_SIZE_BYTES EXPECTED_MDTS EXPECTED_DBBC(0|1)
	local vid='' ssvid='' oacs sgls
	idc_load
	check "the namespace block device exists" test -b $dev
	check "namespace size is $1" test "$(ns_bytes)" = "$1"
	check "model is Linux" test "${idc[mn]-}" = Linux
	read -r vid < $ctrl/device/vendor
	read -r ssvid < $ctrl/device/subsystem_vendor
	check "VID and SSVID are the PCI function's" \
		test "${idc[vid]-}:${idc[ssvid]-}" = "$vid:$ssvid"
	check "mdts is $2" test "${idc[mdts]-}" = "$2"
	oacs=${idc[oacs]:-0} sgls=${idc[sgls]:-0}
	check "OACS DBBC bit is $3 (oacs=$oacs)" test $(( (oacs >> 8) & 1 )) -eq "$3"
	check "SGLs supported (sgls=$sgls)" test $(( sgls & 3 )) -ne 0
	# queue_count counts the admin queue too.
	local queues=0
	read -r queues < $ctrl/queue_count
	check "the guest uses several I/O queues" test "$queues" -ge 3
}

# print_file FILE: FILE's lines, cut at 200 characters.
print_file() {
	local line
	while IFS= read -r line; do
		echo "${line:0:200}"
	done < "$1"
}

# fio_errors FILE: the error count of fio's terse (version 3) output, or
# nothing without a result line.
fio_errors() {
	local line f
	while IFS= read -r line; do
		[[ $line == "3;"* ]] || continue
		IFS=';' read -ra f <<<"$line"
		echo "${f[4]}"
		return
	done < "$1"
}

fio_verify() {
	# fio_verify BS [MIB_PER_JOB [JOBS]]: randrw with verify, each job in
	# its own part of the namespace (default 4 jobs of 16 MiB)
	local mib=${2:-16} jobs=${3:-4} part rc
	# each part starts on a MiB boundary (O_DIRECT offsets)
	part=$(( $(ns_bytes) / jobs >> 20 << 20 ))
	cd /tmp || return
	fio --name=verify --filename=$dev --direct=1 --ioengine=io_uring \
		--rw=randrw --bs="$1" --iodepth=16 --numjobs="$jobs" \
		--size="${mib}M" --offset_increment="$part" \
		--verify=$fio_hash --verify_fatal=1 \
		--verify_state_save=0 --do_verify=1 --group_reporting \
		--output-format=terse --terse-version=3 --output=/tmp/fio.out \
		> /tmp/fio.err 2>&1
	rc=$?
	print_file /tmp/fio.out
	print_file /tmp/fio.err
	check "fio randrw bs=$1 ${jobs}x$mib MiB verify=$fio_hash: status $rc" \
		test $rc -eq 0
	check "fio bs=$1 reported 0 errors" test "$(fio_errors /tmp/fio.out)" = 0
}

acked_verify() {
	# acked_verify ID BS MIB JOBS: fio_verify BS MIB JOBS while ackwrite
	# stamps blocks from the end of fio's first part on (ack_bg; up to
	# 8 MiB, which must fit before its second part); the host finds them
	# in the backing file
	local apid acked
	ack_bg "$1" $(($3 * 256))
	fio_verify "$2" "$3" "$4"
	ack_end "fio's verified I/O" "$1" $(($3 * 256))
}

queues_used() {
	# queues_used MIN: the interrupts of at least MIN of the controller's
	# I/O queues (nvme0q1...) were taken, on every online CPU together
	local line fields i n queues=0 cpus=() ncpu
	read -ra fields < /proc/interrupts
	ncpu=${#fields[@]}
	while IFS= read -r line; do
		[[ $line == *" nvme0q"[1-9]* ]] || continue
		read -ra fields <<<"$line"
		n=0
		for ((i = 1; i <= ncpu; i++)); do
			[ "${fields[i]}" -gt 0 ] && cpus[i]=1
			n=$((n + fields[i]))
		done
		[ $n -gt 0 ] && queues=$((queues + 1))
		echo "$line"
	done < /proc/interrupts
	check "interrupts on $queues I/O queues (at least $1)" test $queues -ge "$1"
	check "interrupts on ${#cpus[@]} of $ncpu CPUs" test ${#cpus[@]} -eq "$ncpu"
}

intx() {
	# intx: after I/O, the controller's interrupts (boot with pci=nomsi)
	# are pin-based, and they were delivered
	local line='' fields n=0 i pin=0
	while IFS= read -r line; do
		[[ $line == *nvme0q* ]] && break
	done < /proc/interrupts
	[[ $line == *nvme0q* ]] || line=
	echo "$line"
	# "IRQ: count per CPU... chip ... name"
	read -ra fields <<<"$line"
	for ((i = 1; i < ${#fields[@]}; i++)); do
		[[ ${fields[i]} =~ ^[0-9]+$ ]] || break
		n=$((n + fields[i]))
	done
	[[ -n $line && ${line,,} != *msi* ]] && pin=1
	check "nvme uses a pin-based interrupt" test $pin -eq 1
	check "INTx interrupts were delivered ($n)" test "$n" -gt 0
}

# io_irqs: the interrupts the controller's I/O queues have raised so far
# (the /proc/interrupts lines of nvme0q1, nvme0q2, ...).
io_irqs() {
	local line fields i n=0
	while IFS= read -r line; do
		[[ $line == *nvme0q[1-9]* ]] || continue
		read -ra fields <<<"$line"
		for ((i = 1; i < ${#fields[@]}; i++)); do
			[[ ${fields[i]} =~ ^[0-9]+$ ]] || break
			n=$((n + fields[i]))
		done
	done < /proc/interrupts
	echo $n
}

moderated() {
	# moderated: a guest that keeps its queue full (4k randread at QD32,
	# and at QD8, under the 32 completions the device holds at most) gets
	# far fewer interrupts than I/Os (under one per 4 I/Os), one that
	# waits for each command (QD1) still gets about one per I/O
	local qd mib ios irqs rc
	for qd in 32 8 1; do
		mib=$(( qd > 1 ? 8 : 1 ))
		ios=$((mib * 256))
		irqs=$(io_irqs)
		fio --name=moderated --filename=$dev --direct=1 \
			--ioengine=io_uring --rw=randread --bs=4k \
			--iodepth=$qd --size=${mib}M --output-format=terse \
			--terse-version=3 --output=/tmp/fio.out > /tmp/fio.err 2>&1
		rc=$?
		irqs=$(( $(io_irqs) - irqs ))
		print_file /tmp/fio.err
		echo "moderated: QD$qd: $ios I/Os, $irqs interrupts"
		check "fio randread QD$qd: status $rc" test $rc -eq 0
		if [ "$qd" -gt 1 ]; then
			check "QD$qd: under one interrupt per 4 I/Os ($irqs for $ios)" \
				test $((irqs * 4)) -lt "$ios"
		else
			check "QD$qd: an interrupt for most I/Os ($irqs for $ios)" \
				test $((irqs * 4)) -ge $((ios * 3))
		fi
	done
}

dmesg_clean() {
	# dmesg_clean: the nvme driver ("nvme nvmeN: ...", and its command
	# errors "nvmeN: Identify(0x6), ... (sct 0x0 / sc 0x2)" and
	# "nvmeNcMnK: Read(0x2) @ LBA ...") and the block layer ("... dev
	# nvmeNn1 ...") logged no timeout, error, reset or fallback;
	# dmesg_clean WHEN: the same since the last "dmesg -C", said of WHEN
	local line bad=
	local who='nvme nvme[0-9]+: |dev nvme[0-9]|\] nvme[0-9]+(c[0-9]+)?(n[0-9]+)?: '
	local what='timeout|error|fail|reset|abort|disabl|dead|remov|unable|not ready|sct 0x'
	dmesg > /tmp/dmesg
	while IFS= read -r line; do
		[[ $line =~ $who && ${line,,} =~ $what ]] || continue
		echo "$line"
		bad=1
	done < /tmp/dmesg
	check "the guest's nvme driver logged no error${1:+ $1}" test -z "$bad"
}

meet() {
	# meet: say "up" in the run directory, then wait for "go" there
	# (with builtins: a read with a timeout from a FIFO nobody writes)
	mkfifo /tmp/meet.fifo && exec 3<>/tmp/meet.fifo
	: > /run/nvmet-mdev/up
	while [ ! -e /run/nvmet-mdev/go ]; do
		read -r -t 2 -u 3
	done
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

kill_target() {
	# kill_target ID BLOCKS: I/O for the host to kill QEMU in the middle
	# of.  fio, 2 jobs of 4k random writes at QD4 that read back and
	# verify what they wrote as they go, on the namespace's upper half,
	# and ackwrite stamping 4 KiB blocks from block 0 on, one at a time,
	# telling the host VM how many completed (run directory, "acks").
	# Never returns: ackwrite waits to be killed when it is done.
	local half
	half=$(half_bytes)
	cd /tmp || return
	fio --name=load --filename=$dev --direct=1 --ioengine=io_uring \
		--rw=randwrite --bs=4k --iodepth=4 --numjobs=2 \
		--offset="$half" --size=$((half / 2)) --offset_increment=$((half / 2)) \
		--time_based --runtime=3600 --verify=$fio_hash --verify_backlog=64 \
		--verify_fatal=1 --verify_state_save=0 > /tmp/fio.err 2>&1 &
	echo "kill-target: fio started"
	"$ackwrite" write $dev /run/nvmet-mdev/acks "$1" "$2"
}

ack_check() {
	# ack_check ID COUNT: the COUNT blocks ackwrite was told were written
	# (and told the host VM of) read back with their stamps
	check "the $2 blocks acknowledged before the kill read back" \
		"$ackwrite" check $dev "$1" "$2"
}

# ack_bg ID FIRST: in the background (pid in $apid), ackwrite stamps 4 KiB
# blocks from block FIRST on (2048 at most), one at a time, counting those
# completed in the run directory; returns once one is (its exec alone can
# take a loaded nested guest seconds), 300 s at most.  ack_end WHAT ID
# FIRST: stop it, check that some completed, set $acked to their count and
# print "acked: ID FIRST COUNT" for the host VM, which finds them in the
# backing file once QEMU has gone.
ack_bg() {
	local n
	"$ackwrite" write $dev "/run/nvmet-mdev/acks-$2" "$1" 2048 "$2" &
	apid=$!
	acks_wait "/run/nvmet-mdev/acks-$2" 1 300
}

# acks_wait FILE MIN SECONDS: wait until the count ackwrite keeps in FILE
# reaches MIN, SECONDS at most; the count is left in the caller's $n.
acks_wait() {
	local i
	n=0
	for ((i = 0; i < $3 && n < $2; i++)); do
		tick 1
		read -r n 2>/dev/null < "$1" || n=0
	done
}

# ackwrite's write may never return (a controller that is gone: the
# multipath node holds it); once ackwrite is dead (Z) or waits in the
# write (D: the signal ends it before it counts another block), its count
# is final.  A dead one is reaped, a waiting one left.
ack_end() {
	local i st=R
	acked=0
	kill -9 $apid 2>/dev/null
	for ((i = 0; i < 60; i++)); do
		read -r _ _ st _ 2>/dev/null < "/proc/$apid/stat" || st=Z
		[ "$st" = Z ] || [ "$st" = D ] && break
		tick 0.5
	done
	[ "$st" = Z ] && wait $apid 2>/dev/null
	read -r acked < "/run/nvmet-mdev/acks-$3"
	acked=${acked:-0}
	check "blocks acknowledged across $1 ($acked, ackwrite $st)" \
		test "$acked" -gt 0
	echo "acked: $2 $3 $acked"
}

# tick SECONDS: sleep with builtins (a read with a timeout from a FIFO
# nobody writes): an exec costs a nested guest seconds.  Each process opens
# the FIFO for itself: when a command substitution ($(wait_for ...)) ticks
# first, its parent must still get a descriptor of its own.
tick() {
	if [ "${tick_pid-}" != "$BASHPID" ]; then
		[ -p /tmp/tick.fifo ] || mkfifo /tmp/tick.fifo 2>/dev/null
		exec 4<>/tmp/tick.fifo
		tick_pid=$BASHPID
	fi
	read -r -t "$1" -u 4
}

# verify_bg NAME: in the background (pid in $fpid), fio writes and
# verifies (randrw, 2 jobs at QD16 on the namespace's upper half) until
# verify_end stops it (a 30 min cap); verify_flows WHAT: check that its
# I/O flows before WHAT; verify_end WHAT: check that its I/O flows after
# WHAT, stop it, print its output and check it.  Stopped, not timed: a
# fixed runtime ran out before the steps it was to cover on a loaded
# machine (a CI-like run of 2026-12-04: fio ended its 60 s during
# bus_master_io's memory decoding step).
verify_bg() {
	local half
	half=$(half_bytes)
	fbase=$(blk_done)
	fio --name="$1" --filename=$dev --direct=1 --ioengine=io_uring \
		--rw=randrw --bs=4k --iodepth=16 --numjobs=2 \
		--offset="$half" --size=$((half / 4)) --offset_increment=$((half / 2)) \
		--time_based --runtime=1800 \
		--verify=$fio_hash --verify_backlog=32 --verify_fatal=1 \
		--verify_state_save=0 --output-format=terse --terse-version=3 \
		--output=/tmp/fio.out > /tmp/fio.err 2>&1 &
	fpid=$!
}

verify_flows() {
	local t
	t=$(wait_for 120 io_past $((fbase + 32)))
	check "fio's I/O flows before $1 (after $t s)" io_past $((fbase + 32))
}

verify_end() {
	local rc t n
	n=$(blk_done)
	t=$(wait_for 120 io_past $((n + 32)))
	check "fio's I/O flows after $1 (after $t s)" io_past $((n + 32))
	# SIGTERM: fio ends its jobs and reports; its status is then 128.
	# verify_fatal makes it exit at once with 1 on a verify error, so a
	# fio that has ended by itself failed.
	check "fio still runs at the end of $1" kill -0 $fpid
	fio_end $fpid TERM
	print_file /tmp/fio.out
	print_file /tmp/fio.err
	check "fio verify across $1 (stopped by the test): status $rc" \
		test $rc -eq 128
	check "fio reported 0 errors" test "$(fio_errors /tmp/fio.out)" = 0
}

# fio_end PID SIGNAL: send fio (PID, a child of this shell) SIGNAL and wait
# for it, two minutes at most; its exit status is left in $rc.  A fio
# still there then waits for I/O that never completes: the check fails
# naming the state and wait channel of each fio process (the parent and
# its jobs), and their stacks and those of every other blocked task go to
# the console (the host's guest_stuck prints the device's command and
# completion counts).
fio_end() {
	local i st=R p c w why=
	kill -"$2" "$1"
	for ((i = 0; i < 120; i++)); do
		read -r _ _ st _ 2>/dev/null < "/proc/$1/stat" || st=Z
		[ "$st" = Z ] && break
		tick 1
	done
	if [ "$st" = Z ]; then
		check "fio ended within 2 min of SIG$2 (after $i s)" true
		wait "$1"
		rc=$?
		return
	fi
	rc=255
	for p in /proc/[0-9]*; do
		read -r _ _ st _ 2>/dev/null < "$p/stat" || continue
		read -r c 2>/dev/null < "$p/comm"
		[ "$st" = D ] || [ "$c" = fio ] || continue
		read -r w 2>/dev/null < "$p/wchan"
		[ "$c" = fio ] && why+=" ${p#/proc/} $st ${w:-?}"
		echo "stuck: ${p#/proc/} $c ($st, ${w:-?}):"
		print_file "$p/stack" 2>/dev/null
	done
	check "fio ended within 2 min of SIG$2 (fio:$why)" false
}

# write_bg NAME: in the background (pid in $fpid), fio writes to the
# namespace's upper half for good, going on past errors
write_bg() {
	local half
	half=$(half_bytes)
	fio --name="$1" --filename=$dev --direct=1 --ioengine=io_uring \
		--rw=randwrite --bs=4k --iodepth=8 --time_based --runtime=900 \
		--offset="$half" --size="$half" \
		--continue_on_error=all --output=/tmp/fio.out > /tmp/fio.err 2>&1 &
	fpid=$!
}

reset_io() {
	# reset_io RESETS ID: the guest resets its controller RESETS times
	# while fio writes and verifies (randrw, 2 jobs at QD16 on the
	# namespace's upper half) and ackwrite stamps blocks from block 4096
	# (ack_bg).  Commands cut off by a reset are the driver's to retry
	# (boot with nvme_core.max_retries > 0).
	local i fpid fbase apid
	cd /tmp || return
	dmesg -C
	verify_bg reset
	verify_flows "the resets"
	ack_bg "$2" 4096
	tick 5
	for ((i = 1; i <= $1; i++)); do
		check "fio is running at reset $i" kill -0 $fpid
		check "reset $i during I/O" eval "echo 1 > $ctrl/reset_controller"
		tick 5
	done
	ack_end "the resets" "$2" 4096
	verify_end "$1 resets"
	dmesg_clean "across the resets"
}

# blk_done: the I/Os the namespace's block device has completed
blk_done() {
	local io
	read -ra io < /sys/block/${dev#/dev/}/stat
	echo $((io[0] + io[4]))
}

# io_past N: the namespace's block device has completed more than N I/Os.
# fio's start (an exec, its job processes, their io_uring) takes a nested
# guest many seconds, far more on a slow machine: a step that acts on I/O
# in flight waits for this, not for a fixed time.
io_past() {
	[ "$(blk_done)" -gt "$1" ]
}

bus_master_io() {
	# bus_master_io ID: while fio writes and verifies (randrw, 2 jobs at
	# QD16) and ackwrite stamps blocks from block 6144 (ack_bg), the
	# guest clears Bus Master Enable in the controller's PCI
	# command register for 4 s: after the completions the device had
	# already posted, no I/O completes and commands stay in flight; set
	# again, I/O goes on by itself; then it clears Memory Space Enable
	# for 3 s and sets it again; then the driver resets the controller,
	# and fio verifies everything it wrote.
	local fpid fbase apid bdf a b c ir iw
	bdf=$(basename "$(readlink -f $ctrl/device)")
	cd /tmp || return
	dmesg -C
	verify_bg bme
	verify_flows "bus mastering goes off"
	ack_bg "$1" 6144
	tick 2
	check "fio is running before bus mastering goes off" kill -0 $fpid
	check "bus mastering off ($bdf)" setpci -s "$bdf" COMMAND=0:4
	tick 1
	a=$(blk_done)
	tick 3
	b=$(blk_done)
	read -r ir iw < /sys/block/${dev#/dev/}/inflight
	echo "bus master: $a then $b I/Os done, $((ir + iw)) in flight"
	check "no I/O completes without bus mastering ($a, then $b)" test "$a" = "$b"
	check "I/O waits in flight meanwhile ($((ir + iw)))" test $((ir + iw)) -gt 0
	check "bus mastering on again" setpci -s "$bdf" COMMAND=4:4
	tick 3
	c=$(blk_done)
	check "I/O goes on without a reset ($b, then $c)" test "$c" -gt "$b"
	# Memory Space Enable off: the BARs stop answering (QEMU unmaps
	# them), so doorbell writes are lost as on real hardware, and I/O
	# may stall; the device itself goes on.  Set again, a reset
	# recovers whatever the lost writes left behind.
	check "fio is running before memory decoding goes off" kill -0 $fpid
	check "memory decoding off ($bdf)" setpci -s "$bdf" COMMAND=0:2
	tick 3
	a=$(blk_done)
	check "fio survives memory decoding off" kill -0 $fpid
	check "memory decoding on again" setpci -s "$bdf" COMMAND=2:2
	echo "memory decoding: $c then $a I/Os done"
	check "reset after bus mastering and memory decoding came back" \
		eval "echo 1 > $ctrl/reset_controller"
	tick 3
	b=$(blk_done)
	check "I/O goes on after the reset ($a, then $b)" test "$b" -gt "$a"
	ack_end "bus mastering and memory decoding off and on" "$1" 6144
	verify_end "bus mastering and memory decoding off and on"
	dmesg_clean "around bus mastering and memory decoding off"
}

remove_rescan() {
	# remove_rescan ID: the guest removes its NVMe PCI function while
	# ackwrite stamps blocks from block 0 on (one 4 KiB O_DIRECT write at
	# a time), then rescans the bus: the driver shuts the controller down
	# on removal, the rescan finds the function again, and every block
	# ackwrite was told was written before the removal reads back.
	local bdf aw i n
	bdf=$(basename "$(readlink -f $ctrl/device)")
	"$ackwrite" write $dev /run/nvmet-mdev/acks-rm "$1" 4096 &
	aw=$!
	acks_wait /run/nvmet-mdev/acks-rm 64 300
	check "blocks acknowledged before the removal ($n)" test "$n" -ge 64
	check "remove the PCI function $bdf during I/O" \
		eval "echo 1 > /sys/bus/pci/devices/$bdf/remove"
	kill $aw
	wait $aw
	read -r n < /run/nvmet-mdev/acks-rm
	echo "remove: $n blocks acknowledged before the removal"
	check "the controller is gone" test ! -e $ctrl
	check "rescan the bus" eval "echo 1 > /sys/bus/pci/rescan"
	for ((i = 0; i < 120; i++)); do
		[ -b $dev ] && break
		tick 1
	done
	check "the namespace is back after the rescan" test -b $dev || return
	check "the $n blocks acknowledged before the removal read back" \
		"$ackwrite" check $dev "$1" "$n"
}

high_dma() {
	# high_dma ID: the device writes blocks from and reads them into guest
	# pages above 4 GiB (client/highdma.c); for a guest with more memory
	check "direct I/O from and into guest pages above 4 GiB" \
		"$highdma" $dev "$1"
}

# wait_for SECONDS TEST...: wait up to SECONDS for TEST to hold; prints
# how many seconds it took.
wait_for() {
	local i n=$1
	shift
	for ((i = 0; i < n; i++)); do
		"$@" && break
		tick 1
	done
	echo $i
	"$@"
}

ns_off_on() {
	# ns_off_on ID: fio writes to the namespace's upper half and ackwrite
	# stamps blocks from block 4096 (ack_bg); says "io" in the run
	# directory, and the host disables the namespace: the nvme driver
	# drops it on the Namespace Attribute Changed event (the writes fail
	# from then on); says "ns-gone", and the host enables it again: the
	# namespace comes back on the next event, the blocks acknowledged
	# before it went read back, and fio verifies on it
	local fpid s apid acked rc
	cd /tmp || return
	write_bg nsoff
	ack_bg "$1" 4096
	check "fio is writing when the namespace goes" kill -0 $fpid
	: > /run/nvmet-mdev/io
	s=$(wait_for 300 test ! -b $dev)
	check "the namespace went away (after ${s%%$'\n'*} s)" test ! -b $dev
	fio_end $fpid TERM
	ack_end "the namespace's disabling" "$1" 4096
	: > /run/nvmet-mdev/ns-gone
	s=$(wait_for 300 test -b $dev)
	check "the namespace came back (after ${s%%$'\n'*} s)" test -b $dev || return
	check "the $acked blocks acknowledged before it went read back" \
		"$ackwrite" check $dev "$1" "$acked" 4096
	fio_verify 4k 4 2
}

# nsdev NQN NSID: the block device of namespace NSID of subsystem NQN, or
# nothing (nvme multipath names its node nvmeXnY after the order the
# namespaces came in, not after their IDs).
nsdev() {
	local d n q
	for d in /sys/block/nvme*; do
		[[ ${d##*/} =~ ^nvme[0-9]+n[0-9]+$ ]] || continue
		read -r n 2>/dev/null < "$d/nsid" || continue
		read -r q 2>/dev/null < "$d/device/subsysnqn" || continue
		[ "$n" = "$2" ] && [ "$q" = "$1" ] && echo "/dev/${d##*/}" && return 0
	done
	return 1
}

# ctrldev NQN: the controller (/dev/nvmeX) of subsystem NQN, or nothing.
ctrldev() {
	local c q
	for c in /sys/class/nvme/nvme*; do
		read -r q 2>/dev/null < "$c/subsysnqn" || continue
		[ "$q" = "$1" ] && echo "/dev/${c##*/}" && return 0
	done
	return 1
}

# ns_blocks DEV: the logical block size and the size in bytes of DEV.
ns_blocks() {
	local lbs sectors
	read -r lbs < "/sys/block/${1#/dev/}/queue/logical_block_size"
	read -r sectors < "/sys/block/${1#/dev/}/size"
	echo "$lbs $((sectors * 512))"
}

ns_formats() {
	# ns_formats NQN NSID:LBS:BYTES...: subsystem NQN's namespaces have
	# these logical block sizes and sizes, and Identify Namespace's LBA
	# format in use has that data size
	local nqn=$1 spec d nsid lbs bytes got lbads
	shift
	for spec in "$@"; do
		IFS=: read -r nsid lbs bytes <<<"$spec"
		d=$(nsdev "$nqn" "$nsid")
		check "namespace $nsid is there (${d:-none})" test -n "$d" || continue
		got=$(ns_blocks "$d")
		check "namespace $nsid: $lbs-byte blocks, $bytes bytes ($got)" \
			test "$got" = "$lbs $bytes"
		lbads=$(nvme id-ns "$d" | sed -n 's/.*lbads:\([0-9]*\) .*(in use).*/\1/p')
		check "namespace $nsid: LBA format in use: 2^${lbads:-?} bytes" \
			test "$((1 << ${lbads:-0}))" = "$lbs"
	done
}

ns_stamp() {
	# ns_stamp NQN NSID SEED MIB: fio writes MIB MiB sequentially from the
	# start of namespace NSID (random data from SEED, each block with a
	# verify header) and verifies it; the host verifies it again on the
	# backing device once the guest is gone (fio --verify_only)
	local d rc
	d=$(nsdev "$1" "$2")
	cd /tmp || return
	fio --name=stamp --filename="$d" --direct=1 --ioengine=io_uring \
		--rw=write --bs=4k --iodepth=8 --size="$4M" --randseed="$3" \
		--verify=$fio_hash --do_verify=1 --verify_state_save=0 \
		--output-format=terse --terse-version=3 --output=/tmp/fio.out \
		> /tmp/fio.err 2>&1
	rc=$?
	print_file /tmp/fio.err
	check "fio wrote and verified $4 MiB on namespace $2 ($d): status $rc" \
		test $rc -eq 0
	check "fio on namespace $2 reported 0 errors" \
		test "$(fio_errors /tmp/fio.out)" = 0
}

ns_mkfs() {
	# ns_mkfs NQN NSID: mkfs_write on namespace NSID (the host mounts it
	# once the guest is gone)
	dev=$(nsdev "$1" "$2") mkfs_write
}

ns_changed() {
	# the namespaces as ns_changes expects them (NQN BYTES)
	local d
	d=$(nsdev "$1" 1) && [ "$(ns_blocks "$d")" = "512 $2" ] &&
		! nsdev "$1" 2 > /dev/null && nsdev "$1" 5 > /dev/null
}

ns_changes() {
	# ns_changes NQN BYTES: says "ns-ready" in the run directory; the host
	# adds namespace 5, disables and removes namespace 2 and grows
	# namespace 1 to BYTES (its backing device, then revalidate_size).
	# The nvme driver sees it all from Namespace Attribute Changed events,
	# with no reset; the new namespace does I/O and the grown end of
	# namespace 1 reads
	local nqn=$1 s d c st
	c=$(ctrldev "$nqn")
	: > /run/nvmet-mdev/ns-ready
	s=$(wait_for 300 ns_changed "$nqn" "$2")
	check "the guest saw the namespace changes (after ${s%%$'\n'*} s)" \
		ns_changed "$nqn" "$2"
	check "namespace 5 came" nsdev "$nqn" 5
	check "namespace 2 went" eval '! nsdev "$nqn" 2'
	d=$(nsdev "$nqn" 1)
	check "namespace 1 grew to $2 bytes ($(ns_blocks "$d"))" \
		test "$(ns_blocks "$d")" = "512 $2"
	read -r st < "/sys/class/nvme/${c#/dev/}/state"
	check "the controller stayed live ($st)" test "$st" = live
	check "the grown end of namespace 1 reads" dd if="$d" of=/dev/null \
		bs=4k skip=$(($2 / 4096 - 1)) count=1 iflag=direct status=none
	dev=$(nsdev "$nqn" 5) fio_verify 4k 4 1
}

passthru_io() {
	# passthru_io NQN SERIAL SEED: the controller of subsystem NQN (nvmet
	# in passthru mode over the host VM's QEMU NVMe controller) is live and
	# identifies as that controller; fio verifies on its namespace 1 and
	# ns_stamp writes 4 MiB from SEED (the host verifies them on the real
	# namespace); discard, a feature with data (Timestamp) and a log page
	# pass through; vendor specific commands, whose data nvmet cannot
	# know, are refused with Invalid Command Opcode (opcodes that read
	# data: nvme-cli reads the data of the others from its stdin)
	local c st d out
	c=$(ctrldev "$1")
	check "the passthru subsystem's controller is there (${c:-none})" \
		test -n "$c" || return
	read -r st < "/sys/class/nvme/${c#/dev/}/state"
	check "it is live ($st)" test "$st" = live
	out=$(nvme id-ctrl "$c")
	check "it identifies as the passthru controller: model QEMU NVMe Ctrl" \
		grep -q "^mn *: QEMU NVMe Ctrl" <<<"$out"
	check "and serial number $2 ($(grep -m1 "^sn" <<<"$out" | tr -s " "))" \
		grep -q "^sn *: $2 *\$" <<<"$out"
	d=$(nsdev "$1" 1)
	check "its namespace 1 is there (${d:-none})" test -n "$d" || return
	dev=$d fio_verify 4k 4 2
	ns_stamp "$1" 1 "$3" 4
	check "discard passes through" \
		blkdiscard -o $((64 << 20)) -l $((1 << 20)) "$d"
	check "Get Features Timestamp (8 bytes of data) passes through" \
		nvme get-feature "$c" --feature-id=0x0e
	check "the SMART / Health log passes through" nvme smart-log "$c"
	out=$(nvme admin-passthru "$c" --opcode=0xc2 --data-len=4096 -r 2>&1)
	check "a vendor specific admin command is refused: ${out//$'\n'/ }" \
		grep -qi "opcode" <<<"$out"
	out=$(nvme io-passthru "$d" --opcode=0x82 --namespace-id=1 \
		--data-len=4096 -r 2>&1)
	check "a vendor specific I/O command is refused: ${out//$'\n'/ }" \
		grep -qi "opcode" <<<"$out"
}

remote_io() {
	# remote_io NQN NSID: fio writes and verifies on namespace NSID (backed
	# by an NVMe/TCP namespace in the host VM) and says "remote-io" in the
	# run directory; the host cuts the TCP path for a few seconds, and once
	# its NVMe/TCP controller has reconnected says "remote-back"; fio's I/O
	# flows on and verifies with no error
	local fpid fbase dev
	dev=$(nsdev "$1" "$2")
	cd /tmp || return
	dmesg -C
	verify_bg remote
	verify_flows "the remote path's loss"
	: > /run/nvmet-mdev/remote-io
	wait_for 600 test -e /run/nvmet-mdev/remote-back > /dev/null
	check "the host says the remote path is back" \
		test -e /run/nvmet-mdev/remote-back
	verify_end "the remote path's loss"
	dmesg_clean "across the remote path's loss"
}

pin_read() {
	# pin_read MIB ok|fail: read MIB MiB of the namespace through the page
	# cache (its pages all over the guest's memory, each pinned once the
	# device has written to it): it works, or fails with an I/O error
	local rc
	echo 3 > /proc/sys/vm/drop_caches
	dd if=$dev of=/dev/null bs=1M count="$1" status=none 2> /tmp/dd.err
	rc=$?
	print_file /tmp/dd.err
	if [ "$2" = ok ]; then
		check "reading $1 MiB through the page cache works (status $rc)" \
			test $rc -eq 0
	else
		check "reading $1 MiB through the page cache fails with an I/O error (status $rc)" \
			eval 'test $rc -ne 0 && grep -q "Input/output error" /tmp/dd.err'
	fi
}

# resv_write: write block 0 with nvme-cli (its status in /tmp/resv.out).
resv_write() {
	head -c 4096 /dev/urandom > /tmp/blk
	nvme write $dev --start-block=0 --block-count=0 --data-size=4096 \
		--data=/tmp/blk > /tmp/resv.out 2>&1
}

resv_holder() {
	# resv_holder KEY: register KEY, acquire a Write Exclusive reservation,
	# write; say "held" in the run directory; once the host says "release",
	# release it and say "released"; once the host says "bye" (it has seen
	# "released": this guest's run directory goes when it powers off),
	# unregister
	check "register key $1" nvme resv-register $dev --namespace-id=1 \
		--nrkey="$1" --rrega=0
	check "acquire a Write Exclusive reservation" nvme resv-acquire $dev \
		--namespace-id=1 --crkey="$1" --rtype=1 --racqa=0
	check "the holder writes" resv_write
	: > /run/nvmet-mdev/held
	# longer than the host waits for the other guest (24-guest-reservations)
	wait_for 1800 test -e /run/nvmet-mdev/release > /dev/null
	check "the host said release while the reservation was held" \
		test -e /run/nvmet-mdev/release
	check "release the reservation" nvme resv-release $dev --namespace-id=1 \
		--crkey="$1" --rtype=1 --rrela=0
	: > /run/nvmet-mdev/released
	wait_for 900 test -e /run/nvmet-mdev/bye > /dev/null
	check "unregister" nvme resv-register $dev --namespace-id=1 \
		--crkey="$1" --rrega=1
}

resv_other() {
	# resv_other KEY HOLDER_HOSTID: (started once the other guest holds its
	# reservation) register KEY; the report shows it holding a Write Exclusive
	# reservation; a write fails with Reservation Conflict, a read works;
	# say "refused"; once the host says "released", the write works
	local hostid=${2//-/}
	check "register key $1" nvme resv-register $dev --namespace-id=1 \
		--nrkey="$1" --rrega=0
	nvme resv-report $dev --namespace-id=1 --eds > /tmp/report 2>&1
	print_file /tmp/report
	check "the report shows a Write Exclusive reservation" \
		grep -qiE "^ *rtype *: *1 *$" /tmp/report
	check "and two registrants" grep -qiE "^ *regctl *: *2 *$" /tmp/report
	check "the holder's host identifier is its mdev's UUID ($hostid)" \
		grep -qi "hostid *: *$hostid" /tmp/report
	resv_write
	print_file /tmp/resv.out
	check "the other host's write is refused: Reservation Conflict" \
		grep -qi "reservation conflict" /tmp/resv.out
	check "its read works" dd if=$dev of=/dev/null bs=4k count=1 \
		iflag=direct status=none
	: > /run/nvmet-mdev/refused
	wait_for 900 test -e /run/nvmet-mdev/released > /dev/null
	check "once released, its write works" resv_write
	print_file /tmp/resv.out
	check "unregister" nvme resv-register $dev --namespace-id=1 \
		--crkey="$1" --rrega=1
}

vm_limited() {
	# vm_limited: fio writes and verifies (verify_bg) while the host
	# limits the CPU and the I/O of this guest's QEMU: says "io" in the
	# run directory once fio's I/O flows, waits for the host's "go", and
	# fio verifies everything it wrote across the limits
	verify_bg limits
	verify_flows "the host's limits"
	: > /run/nvmet-mdev/io
	wait_for 600 test -e /run/nvmet-mdev/go > /dev/null
	check "the host lifted its limits while fio ran" kill -0 $fpid
	verify_end "the host's limits"
}

# ctrl_state: the controller's state as the nvme driver has it ("gone"
# once it is removed)
ctrl_state() {
	local st=gone
	[ -e $ctrl/state ] && read -r st < $ctrl/state
	echo "$st"
}

ctrl_removed() {
	# ctrl_removed ID: says "unlink" in the run directory while fio
	# writes to the namespace's upper half and ackwrite stamps blocks
	# from block 6144 (ack_bg); the host takes the subsystem off the port
	# and removes the port: the controller fails (CSTS.CFS), the driver's
	# reset cannot enable it again, and the driver gives it up (state
	# "dead", or removed); fio's writes fail, nothing hangs, and the host
	# finds the blocks acknowledged before in the backing file
	local fpid apid acked i st last=
	cd /tmp || return
	write_bg unlink
	ack_bg "$1" 6144
	check "fio is writing when the port goes" kill -0 $fpid
	: > /run/nvmet-mdev/unlink
	for ((i = 0; i < 600; i++)); do
		st=$(ctrl_state)
		[ "$st" = "$last" ] && [ $((i % 30)) -ne 0 ] || echo "ctrl: ${i} s: $st"
		last=$st
		[ "$st" = dead ] || [ "$st" = gone ] && break
		# Still there after a minute: what is blocked, on the console.
		[ $i -eq 60 ] && echo w > /proc/sysrq-trigger
		tick 1
	done
	check "the driver gave the controller up ($st after $i s)" \
		eval '[ "$st" = dead ] || [ "$st" = gone ]'
	ack_end "the port's removal" "$1" 6144
	# fio's writes may wait for good in the multipath node's queue for a
	# path to come back; it is not waited for (poweroff -f ends it).
	kill -9 $fpid
	tick 2
	st=gone
	[ -e /proc/$fpid/stat ] && read -r _ _ st _ < /proc/$fpid/stat
	echo "ctrl: fio after SIGKILL: $st"
}

reboot_mid_io() {
	# reboot_mid_io ID: reset the guest in the middle of I/O on the file
	# system, as a crash or a watchdog would (sysrq b: no sync, no
	# unmount, no device shutdown: the controller is still enabled with
	# commands in flight when QEMU resets the machine and the device).
	# ackwrite stamps the blocks of a file written and synced beforehand
	# (so that its writes change no metadata) and tells the run directory
	# after each one the device completed, a direct dd writes beside it,
	# and once 32 blocks are acknowledged the guest resets.  In a VM run
	# with vm.sh --reboot the same QEMU boots the guest again, and the
	# command's steps after this one run then (see the end of this file).
	local n dd
	mkdir -p /tmp/mnt
	check "mount before the reboot" mount $dev /tmp/mnt || return
	check "a file for the stamps" dd if=/dev/zero of=/tmp/mnt/acks.bin \
		bs=1M count=4 conv=fsync status=none
	sync
	dd if=/dev/zero of=/tmp/mnt/busy bs=64k count=1024 oflag=direct status=none &
	dd=$!
	"$ackwrite" write /tmp/mnt/acks.bin /run/nvmet-mdev/acks "$1" 1024 &
	acks_wait /run/nvmet-mdev/acks 32 600
	check "blocks acknowledged before the reboot ($n)" test "$n" -ge 32
	check "the direct writes are running at the reboot" kill -0 $dd
	echo "reboot: resetting with I/O in flight after $n acknowledged blocks"
	: > /run/nvmet-mdev/rebooted
	echo b > /proc/sysrq-trigger
}

after_reboot() {
	# after_reboot ID: the file system of mkfs_write, and every block
	# reboot_mid_io was told was written, are there after the reboot
	local n
	read -r n < /run/nvmet-mdev/acks
	echo "reboot: $n blocks acknowledged before the reboot"
	mkdir -p /tmp/mnt
	check "mount after the reboot" mount $dev /tmp/mnt || return
	check "the $n blocks acknowledged before the reboot read back" \
		"$ackwrite" check /tmp/mnt/acks.bin "$1" "$n"
	check "file content survived" grep -qx hello-from-guest /tmp/mnt/hello
	check "blob checksum survived" \
		test "$(sha256sum /tmp/mnt/blob | awk '{print $1}')" = "$(cat /tmp/mnt/blob.sha256)"
	check "umount after the reboot" umount /tmp/mnt
}

# Run the steps, split at "+", saying how long each took.  After
# reboot_mid_io's reboot (its mark is in the run directory), only the steps
# after it run.
steps=("$@" +)
args=()
skip=0
[ -e /run/nvmet-mdev/rebooted ] && skip=1
for a in "${steps[@]}"; do
	if [ "$a" = + ]; then
		if [ ${#args[@]} -gt 0 ] && [ $skip -eq 1 ]; then
			[ "${args[0]}" = reboot_mid_io ] && skip=0
		elif [ ${#args[@]} -gt 0 ]; then
			t0=$SECONDS
			"${args[@]}"
			echo "step: ${args[0]}: $((SECONDS - t0)) s"
		fi
		args=()
	else
		args+=("$a")
	fi
done
# Results are the "check:" lines and the status; the controller's shutdown
# (CC.SHN) at power-off is checked by the host.
exit $failed
