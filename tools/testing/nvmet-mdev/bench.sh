#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The benchmark ("make bench"): the same fio jobs on the mdev and on the
# peers at their best, over the same backends, in one run, reported side by
# side (bench-report.py: build/bench/latest.txt and latest.json).
#
# The host VM boots build/perf-bzImage, the production build of the same
# tree and driver (config.perf: no KASAN, lockdep or other debug options),
# once per host shape: 2 vCPUs with a 2-vCPU guest, then 1 vCPU shared by
# the guest and every device's back end (an oversubscribed host).  Disks,
# each once over each backend:
#
#   mdev            an nvmet namespace exported through an mdev port
#   qemu-nvme       QEMU's -device nvme with ioeventfd=on
#   virtio-blk      modern virtio-blk-pci, one queue per guest vCPU plus a
#                   poll queue, mapped over iothreads (iothread-vq-mapping)
#   vhost-user-blk  qemu-storage-daemon's vhost-user-blk export
#   vhost-scsi      the kernel's vhost-scsi over LIO (configfs)
#   host-local      the same fio job in the host VM on the backend itself:
#                   the limit
#
# QEMU's drives and the storage daemon's use cache=none and aio=io_uring.
# Backends: a file on the host VM's tmpfs (each disk its own, written in
# full first) and a null_blk device (each disk its own: the device path,
# not the page cache).  Each repeat runs every job on every disk once, the
# disks in an order shuffled per repeat; host-local runs in the host VM
# before the guest boots.  Host CPU per I/O is the host VM's busy time
# over the job (from its first I/O to fio's exit) divided by the disk's
# I/Os in that window, both sampled by bench-stats.py; the mdev's queue
# threads' CPU time and its debugfs counters are reported per I/O too.
# The device side alone: the userspace client's perf tool on the mdev
# against fio on the same backend in the host VM, same depths.
#
# Everything runs nested under TCG: the ratios are the point, and the
# report says what TCG distorts (README, "Benchmarks").
#
# Environment (all optional; passed on into the VMs):
#   NVMET_MDEV_BENCH_SHAPES     host VM vCPU counts to run (default "2 1")
#   NVMET_MDEV_BENCH_GUEST_SMP  guest vCPUs (default: the host VM's)
#   NVMET_MDEV_BENCH_REPEATS    repeats (default 3)
#   NVMET_MDEV_BENCH_RUNTIME    seconds measured per job (default 5)
#   NVMET_MDEV_BENCH_RAMP       seconds of warm-up per job (default 1)
#   NVMET_MDEV_BENCH_SIZE_MB    size of each disk in MiB (default 256)
#   NVMET_MDEV_BENCH_DISKS      a subset of the disks above (default all)
#   NVMET_MDEV_BENCH_BACKENDS   a subset of "file null_blk" (default both)
#   NVMET_MDEV_BENCH_JOBS       a subset of the job names below
#   NVMET_MDEV_BENCH_KERNEL     perf (default) or debug: the host VM kernel
#   NVMET_MDEV_BENCH_MDEV_ATTRS the mdevs' attributes to set, as NAME=VALUE
#                               words (e.g. "doorbell_mmap=off
#                               poll_idle_us=500"; default none)
#   NVMET_MDEV_GUEST_KERNEL     guest kernel (default build/guest-bzImage)
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../../.." && pwd)

nqn=nqn.2026-11.org.example:bench
all_disks=(mdev qemu-nvme virtio-blk vhost-user-blk vhost-scsi host-local)
all_backends=(file null_blk)
# name rw bs iodepth numjobs polled
all_jobs=(
	"4k-randread-qd1 randread 4k 1 1 0"
	"4k-randread-qd1-poll randread 4k 1 1 1"
	"4k-randread-qd32 randread 4k 32 1 0"
	"4k-randwrite-qd32 randwrite 4k 32 1 0"
	"128k-seqread-qd8 read 128k 8 1 0"
	"128k-seqwrite-qd8 write 128k 8 1 0"
	"4k-randread-qd32x2 randread 4k 32 2 0"
)
# PCI slots of QEMU's disks in the guest (mdevs are told apart by NQN,
# QEMU's NVMe by serial).
declare -A slot=([virtio-blk/file]=10 [virtio-blk/null_blk]=11
		 [vhost-user-blk/file]=12 [vhost-user-blk/null_blk]=13
		 [vhost-scsi/file]=14 [vhost-scsi/null_blk]=15)

die() { echo "bench.sh: $*" >&2; exit 2; }

# pick NAME VALUE ALL...: the words of VALUE, each one of ALL.
pick() {
	local name=$1 val=$2 w v=
	shift 2
	for w in $val; do
		[[ " $* " == *" $w "* ]] || die "$name: no \"$w\" (one of: $*)"
		v+=" $w"
	done
	echo "${v# }"
}
read -ra disks <<< "$(pick NVMET_MDEV_BENCH_DISKS \
	"${NVMET_MDEV_BENCH_DISKS:-${all_disks[*]}}" "${all_disks[@]}")"
read -ra backends <<< "$(pick NVMET_MDEV_BENCH_BACKENDS \
	"${NVMET_MDEV_BENCH_BACKENDS:-${all_backends[*]}}" "${all_backends[@]}")"
cells=()
for j in "${all_jobs[@]}"; do
	[[ " ${NVMET_MDEV_BENCH_JOBS:-${j%% *}} " == *" ${j%% *} "* ]] && cells+=("$j")
done
[ ${#cells[@]} -gt 0 ] || die "NVMET_MDEV_BENCH_JOBS: no such job"
reps=${NVMET_MDEV_BENCH_REPEATS:-3}
[[ $reps =~ ^[1-9][0-9]?$ ]] || die "NVMET_MDEV_BENCH_REPEATS: 1 to 99, not \"$reps\""
rt=${NVMET_MDEV_BENCH_RUNTIME:-5}
ramp=${NVMET_MDEV_BENCH_RAMP:-1}
[[ $rt =~ ^[1-9][0-9]*$ && $ramp =~ ^[0-9]+$ ]] ||
	die "NVMET_MDEV_BENCH_RUNTIME/RAMP: whole seconds"
mib=${NVMET_MDEV_BENCH_SIZE_MB:-256}
[[ $mib =~ ^[1-9][0-9]*$ ]] || die "NVMET_MDEV_BENCH_SIZE_MB: a number"
guest_disks=()
for d in "${disks[@]}"; do
	[ "$d" = host-local ] || guest_disks+=("$d")
done

# The guest's time limit: each fio start costs a nested guest a few
# seconds on top of ramp and runtime; the margin is generous.
guest_timeout=$((900 + reps * ${#cells[@]} * ${#guest_disks[@]} *
	${#backends[@]} * (ramp + rt + 30)))

# fio_job NAME FILE RW BS QD NUMJOBS POLLED: one fio job file section.
fio_job() {
	echo "[$1]"
	echo "filename=$2"
	echo "rw=$3"
	echo "bs=$4"
	echo "iodepth=$5"
	echo "numjobs=$6"
	[ "$7" = 1 ] && echo "hipri=1"
	if [ "$6" -gt 1 ]; then
		echo "cpus_allowed=0-$(($6 - 1))"
		echo "cpus_allowed_policy=split"
	fi
}

fio_global() {
	echo "[global]"
	echo "direct=1"
	echo "ioengine=io_uring"
	echo "time_based=1"
	echo "runtime=$1"
	echo "ramp_time=$2"
	echo "norandommap=1"
	echo "randrepeat=0"
	echo "group_reporting=1"
}

# fio_line JSON JOB DISK BACKEND REP: "bench: JOB DISK BACKEND REP IOPS
# BYTES/S MEAN-NS P50-NS P99-NS ERROR IOS", reads and writes together
# (every job here does one or the other).
fio_line() {
	jq -r --arg j "$2" --arg d "$3" --arg b "$4" --arg rep "$5" '.jobs[] |
		.read as $r | .write as $w |
		(if $r.total_ios >= $w.total_ios then $r else $w end) as $x |
		"bench: \($j) \($d) \($b) \($rep) \($r.iops + $w.iops) " +
		"\($r.bw_bytes + $w.bw_bytes) \($x.lat_ns.mean) " +
		"\($x.clat_ns.percentile["50.000000"] // 0) " +
		"\($x.clat_ns.percentile["99.000000"] // 0) \(.error) " +
		"\($r.total_ios + $w.total_ios)"' "$1" 2>/dev/null ||
		echo "bench: $2 $3 $4 $5 0 0 0 0 0 no-output 0"
}

# --- in the nested guest ----------------------------------------------------
guest_main() {
	local b n d k p r j rc frc key order name rw bs qd nj pl ios keys
	local -A devs=() poll=()

	# Keep kernel messages off the console that carries the results.
	dmesg -n 1
	# NVMe namespaces (or their multipath nodes) by subsystem NQN: the
	# mdevs' are ours, QEMU's carry the serial.
	for b in /sys/block/nvme*n*; do
		n=${b##*/}
		case $n in *c*) continue ;; esac
		k=$(cat "$b/device/subsysnqn")
		for d in mdev qemu-nvme; do
			for p in "${backends[@]}"; do
				[ "$k" = "$NVMET_MDEV_BENCH_NQN-$p" ] && [ $d = mdev ] &&
					devs[$d/$p]=$n
				[ "$k" = "nqn.2019-08.org.qemu:bench-$d-$p" ] &&
					devs[$d/$p]=$n
			done
		done
	done
	# virtio and SCSI disks by PCI slot.
	for b in /sys/block/vd* /sys/block/sd*; do
		[ -e "$b" ] || continue
		p=$(readlink -f "$b")
		for k in "${!slot[@]}"; do
			[[ $p == */0000:00:${slot[$k]}.0/* ]] && devs[$k]=${b##*/}
		done
	done
	echo "bench-info: guest_boot_seconds $(cut -d' ' -f1 /proc/uptime)"
	echo "bench-info: guest_kernel $(uname -r)"
	echo "bench-info: guest_cpus $(nproc)"
	echo "bench-info: guest_mem_kb $(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)"
	echo "bench-info: fio $(fio --version)"
	keys=()
	for d in "${guest_disks[@]}"; do
		for p in "${backends[@]}"; do
			n=${devs[$d/$p]:-}
			if [ -z "$n" ]; then
				echo "bench-info: missing $d/$p"
				continue
			fi
			keys+=("$d/$p")
			poll[$d/$p]=$(cat "/sys/block/$n/queue/io_poll" 2>/dev/null || echo 0)
			echo "bench-info: dev $d/$p /dev/$n $(blockdev --getsize64 "/dev/$n")" \
				"$(ls -d "/sys/block/$n/mq/"* 2>/dev/null | wc -l) ${poll[$d/$p]}"
		done
	done

	# The markers go to a file in the run directory (9p), which
	# bench-stats.py in the host VM follows, with the disk's I/O count.
	mark() {
		echo "bench-mark: $*" >> /run/nvmet-mdev/bench-marks
	}
	# The disk's I/Os so far, in $ios (builtins only: a fork costs a
	# nested guest milliseconds, beside the job it measures).
	io_count() {
		local s
		read -ra s < "/sys/block/$1/stat"
		ios=$((s[0] + s[4]))
	}
	# Wait for the job's first I/O: fio's start-up is no part of what
	# the host spends per I/O.  A read with a timeout from a FIFO as the
	# sleep.
	mkfifo /tmp/bench-tick && exec {tick}<>/tmp/bench-tick
	wait_io() {
		local n0 i
		io_count "$1"
		n0=$ios
		for ((i = 0; i < 1200; i++)); do
			kill -0 "$2" 2>/dev/null || return
			io_count "$1"
			[ "$ios" = "$n0" ] || return
			read -r -t 0.05 -u "$tick"
		done
	}
	{
		fio_global "$rt" "$ramp"
		for j in "${cells[@]}"; do
			read -r name rw bs qd nj pl <<< "$j"
			for k in "${keys[@]}"; do
				fio_job "$name@${k/\//@}" "/dev/${devs[$k]}" "$rw" "$bs" \
					"$qd" "$nj" "$pl"
			done
		done
	} > /tmp/bench.fio
	echo "bench-progress: $(cut -d' ' -f1 /proc/uptime) s: fio starts"
	rc=0
	for ((r = 1; r <= reps; r++)); do
		# (no process substitution: the guest has no /dev/fd)
		mapfile -t order <<< "$(printf '%s\n' "${keys[@]}" | shuf)"
		echo "bench-order: $r ${order[*]}"
		for j in "${cells[@]}"; do
			read -r name rw bs qd nj pl <<< "$j"
			[ "$nj" -gt "$(nproc)" ] && continue
			for k in "${order[@]}"; do
				if [ "$pl" = 1 ] && [ "${poll[$k]}" != 1 ]; then
					[ $r = 1 ] && echo "bench-skip: $name ${k/\// } no polled queues"
					continue
				fi
				# The guest's first polled completion on a
				# vhost-user-blk poll queue ends the daemon
				# ("vu_panic: Error writing eventfd: Bad file
				# descriptor": a poll queue has no call eventfd).
				if [ "$pl" = 1 ] && [[ $k == vhost-user-blk/* ]]; then
					[ $r = 1 ] && echo "bench-skip: $name ${k/\// }" \
						"a polled queue ends qemu-storage-daemon"
					continue
				fi
				key="$name@${k/\//@}/$r"
				rm -f /tmp/fio.json
				fio --eta=never --output-format=json --output=/tmp/fio.json \
					--section="$name@${k/\//@}" /tmp/bench.fio \
					> /tmp/fio.err 2>&1 &
				wait_io "${devs[$k]}" $!
				io_count "${devs[$k]}"
				mark start "$key" "$ios"
				wait $!
				frc=$?
				io_count "${devs[$k]}"
				mark end "$key" "$ios"
				fio_line /tmp/fio.json "$name" "${k%/*}" "${k#*/}" $r
				if [ $frc -ne 0 ]; then
					rc=1
					sed 's/^/bench-err: /' /tmp/fio.err | head -20
				fi
			done
		done
	done
	echo "bench-progress: $(cut -d' ' -f1 /proc/uptime) s: fio done (status $rc)"
	mark "done"
	echo "bench-info: guest_end_seconds $(cut -d' ' -f1 /proc/uptime)"
	dmesg --level=emerg,alert,crit,err,warn | sed 's/^/bench-dmesg: /'
	return 0
}

# --- in the host VM -----------------------------------------------------------

# busy_ticks: the host VM's busy time so far, in clock ticks (/proc/stat:
# user, nice, system, irq, softirq, steal; guest time is in user).
busy_ticks() {
	local u n s i w q sq st
	read -r _ u n s i w q sq st _ < /proc/stat
	echo $((u + n + s + q + sq + st))
}

# null_blk NAME: a null_blk device (configfs) of the bench's size, its
# completions inline (irqmode 0), a poll queue; prints its /dev path.
null_blk() {
	local d=/sys/kernel/config/nullb/$1
	mkdir "$d" || return 1
	echo "$mib" > "$d/size" &&
	echo 512 > "$d/blocksize" &&
	echo 0 > "$d/irqmode" &&
	nproc > "$d/submit_queues" &&
	echo 1 > "$d/poll_queues" &&
	echo 128 > "$d/hw_queue_depth" &&
	echo 1 > "$d/power" || return 1
	# Named after the configfs item by recent kernels.
	if [ -b "/dev/$1" ]; then
		echo "/dev/$1"
	else
		echo "/dev/nullb$(cat "$d/index")"
	fi
}

# host_local: every job on the host VM's own backends (before the guest
# boots), then the device side: the client's perf tool on the mdevs
# against fio there, same depths.  fio runs without a ramp here (the host
# VM needs none; CPU per I/O is then over every I/O fio did).
host_local() {
	local r j p b0 t0 rc name rw bs qd nj pl
	fio_global "$((rt + ramp))" 0 > /tmp/host.fio
	for j in "${cells[@]}"; do
		read -r name rw bs qd nj pl <<< "$j"
		for p in "${backends[@]}"; do
			fio_job "$name@host-local@$p" "${path[host-local/$p]}" "$rw" \
				"$bs" "$qd" "$nj" "$pl" >> /tmp/host.fio
		done
	done
	for ((r = 1; r <= reps; r++)); do
		for j in "${cells[@]}"; do
			read -r name rw bs qd nj pl <<< "$j"
			[ "$nj" -gt "$(nproc)" ] && continue
			for p in "${backends[@]}"; do
				if [ "$pl" = 1 ] && [ $p = file ]; then
					[ $r = 1 ] && echo "bench-skip: $name host-local $p" \
						"no polled I/O on tmpfs"
					continue
				fi
				rm -f /tmp/fio.json
				b0=$(busy_ticks)
				t0=$EPOCHREALTIME
				fio --eta=never --output-format=json --output=/tmp/fio.json \
					--section="$name@host-local@$p" /tmp/host.fio > /tmp/fio.err 2>&1
				rc=$?
				echo "bench-cpu: $name host-local $p $r $(($(busy_ticks) - b0))" \
					"$t0 $EPOCHREALTIME"
				fio_line /tmp/fio.json "$name" host-local $p $r
				[ $rc -eq 0 ] || sed 's/^/bench-err: /' /tmp/fio.err | head -20
			done
		done
	done
}

# device_side: the mdev driven from the host VM by the client's perf tool
# (a polling user space driver: one queue, mmap'ed doorbells) against fio
# on the same backend (polled where the backend can), 4k random reads at
# QD1 and QD32 and writes at QD32.
device_side() {
	local perf=$top/tools/testing/nvmet-mdev/client/out/perf
	local r p w qd out poll wr
	[ -x "$perf" ] || { echo "bench-skip: device-side (no client: make client)"; return; }
	fio_global "$((rt + ramp))" 0 > /tmp/dev.fio
	for p in "${backends[@]}"; do
		poll=1
		[ $p = file ] && poll=0
		fio_job "qd1r@$p" "${path[host-local/$p]}" randread 4k 1 1 $poll >> /tmp/dev.fio
		fio_job "qd32r@$p" "${path[host-local/$p]}" randread 4k 32 1 $poll >> /tmp/dev.fio
		fio_job "qd32w@$p" "${path[host-local/$p]}" randwrite 4k 32 1 $poll >> /tmp/dev.fio
	done
	for ((r = 1; r <= reps; r++)); do
		for p in "${backends[@]}"; do
			for w in qd1r qd32r qd32w; do
				qd=${w//[^0-9]/}
				wr=()
				[ $w = qd32w ] && wr=(-w)
				out=$("$perf" -D "$qd" -t "$((rt + ramp))" "${wr[@]}" \
					"${uuid[$p]}" 2>&1) ||
					echo "bench-err: perf $w $p: $out"
				echo "bench-dev: $w $p $r perf $out"
				rm -f /tmp/fio.json
				fio --eta=never --output-format=json --output=/tmp/fio.json \
					--section="$w@$p" /tmp/dev.fio > /tmp/fio.err 2>&1 ||
					sed 's/^/bench-err: /' /tmp/fio.err | head -20
				echo "bench-dev: $w $p $r fio $(jq -r '.jobs[0] |
					(if .read.total_ios > 0 then .read else .write end) |
					"iops=\(.iops) lat_us avg=\(.lat_ns.mean / 1000)" +
					" p50=\((.clat_ns.percentile["50.000000"] // 0) / 1000)" +
					" p99=\((.clat_ns.percentile["99.000000"] // 0) / 1000)"' \
					/tmp/fio.json)"
			done
		done
	done
}

inside_main() {
	. "$here/lib.sh"
	local gsmp=${NVMET_MDEV_BENCH_GUEST_SMP:-$(nproc)}
	local nq=$((gsmp + 1)) out=/tmp/bench-guest.out
	local d p k u qargs nio map t0 t1 rc stats wwn lio
	local -A path=() uuid=()

	echo "info date $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "info host_kernel $(uname -r)"
	echo "info host_cpus $(nproc)"
	echo "info host_mem_kb $(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)"
	echo "info qemu_version $(qemu-system-x86_64 --version | head -1)"
	echo "info clk_tck $(getconf CLK_TCK)"
	echo "info size_mb $mib"
	echo "info ramp $ramp"
	echo "info runtime $rt"
	echo "info repeats $reps"
	echo "info disks ${disks[*]}"
	echo "info backends ${backends[*]}"
	echo "info jobs $(for j in "${cells[@]}"; do echo -n "${j%% *} "; done)"
	if [ $(($(df --output=avail -k /tmp | tail -1) / 1024)) -lt $((${#disks[@]} * mib + 64)) ]; then
		echo "bench.sh: /tmp has no room for ${#disks[@]} ${mib} MiB disks" >&2
		return 1
	fi
	for d in "${disks[@]}"; do
		for p in "${backends[@]}"; do
			case $p in
			file)
				path[$d/$p]=/tmp/bench-$d.img
				dd if=/dev/zero of="${path[$d/$p]}" bs=1M count="$mib" \
					status=none || return 1 ;;
			null_blk)
				path[$d/$p]=$(null_blk "bench-$d") || return 1 ;;
			esac
		done
	done

	# The mdevs: a subsystem per backend on one port.
	if [[ " ${disks[*]} " == *" mdev "* ]]; then
		modprobe nvmet-mdev || return 1
		make_port 1 || return 1
		for p in "${backends[@]}"; do
			make_subsys "$nqn-$p" "${path[mdev/$p]}" || return 1
			link_subsys 1 "$nqn-$p" || return 1
			uuid[$p]=$(create_mdev 1) || return 1
			u=/sys/bus/mdev/devices/${uuid[$p]}
			echo "$nqn-$p" > "$u/subsysnqn" || return 1
			echo "$nq" > "$u/nr_io_queues" || return 1
			for k in ${NVMET_MDEV_BENCH_MDEV_ATTRS:-}; do
				echo "${k#*=}" > "$u/${k%%=*}" || return 1
			done
			echo -n "info mdev_attrs"
			for k in nr_io_queues max_queue_entries mdts shadow_doorbells \
				 doorbell_mmap poll_idle_us; do
				echo -n " $k=$(cat "$u/$k" 2>/dev/null || echo ?)"
			done
			echo
		done
	fi

	if [[ " ${disks[*]} " == *" host-local "* ]]; then
		echo "== host VM: host-local jobs, then the device side" >&2
		host_local
		[[ " ${disks[*]} " == *" mdev "* ]] && device_side
	fi
	[ ${#guest_disks[@]} -gt 0 ] || return 0

	# QEMU's disks.
	qargs=
	for p in "${backends[@]}"; do
		d=qemu-nvme
		[[ " ${disks[*]} " == *" $d "* ]] || continue
		qargs+=" -drive file=${path[$d/$p]},if=none,id=$d-$p,format=raw,cache=none,aio=io_uring"
		qargs+=" -device nvme,drive=$d-$p,serial=bench-$d-$p,ioeventfd=on"
	done
	nio=$(nproc)
	for ((k = 0; k < nio; k++)); do
		qargs+=" -object iothread,id=io$k"
	done
	for p in "${backends[@]}"; do
		d=virtio-blk
		[[ " ${disks[*]} " == *" $d "* ]] || continue
		qargs+=" -drive file=${path[$d/$p]},if=none,id=$d-$p,format=raw,cache=none,aio=io_uring"
		map=$(for ((k = 0; k < nio; k++)); do echo -n "{\"iothread\":\"io$k\"},"; done)
		qargs+=" -device {\"driver\":\"virtio-blk-pci\",\"drive\":\"$d-$p\",\"num-queues\":$nq"
		qargs+=",\"iothread-vq-mapping\":[${map%,}],\"addr\":\"0x${slot[$d/$p]}\"}"
	done
	if [[ " ${disks[*]} " == *" vhost-user-blk "* ]]; then
		d=vhost-user-blk
		local qsd=(qemu-storage-daemon --pidfile /tmp/qsd.pid)
		for p in "${backends[@]}"; do
			qsd+=(--object "iothread,id=qio-$p"
			      --blockdev "driver=$([ $p = file ] && echo file || echo host_device),node-name=$p,filename=${path[$d/$p]},cache.direct=on,aio=io_uring"
			      --export "type=vhost-user-blk,id=$p,node-name=$p,addr.type=unix,addr.path=/tmp/vub-$p.sock,writable=on,num-queues=$nq,iothread=qio-$p")
			qargs+=" -chardev socket,id=vub-$p,path=/tmp/vub-$p.sock"
			qargs+=" -device vhost-user-blk-pci,chardev=vub-$p,num-queues=$nq,addr=0x${slot[$d/$p]}"
		done
		"${qsd[@]}" --daemonize || return 1
		# vhost-user needs the guest's memory shared with the daemon.
		qargs+=" -object memory-backend-memfd,id=mem,size=1G,share=on -machine memory-backend=mem"
	fi
	if [[ " ${disks[*]} " == *" vhost-scsi "* ]]; then
		d=vhost-scsi
		modprobe vhost_scsi && modprobe target_core_file &&
			modprobe target_core_iblock || return 1
		lio=/sys/kernel/config/target
		k=1
		for p in "${backends[@]}"; do
			wwn=naa.50014050000000$k$k
			case $p in
			file)
				u=$lio/core/fileio_0/bench
				mkdir -p "$u" || return 1
				echo "fd_dev_name=${path[$d/$p]},fd_dev_size=$((mib << 20))" \
					> "$u/control" || return 1 ;;
			null_blk)
				u=$lio/core/iblock_0/bench
				mkdir -p "$u" || return 1
				echo "udev_path=${path[$d/$p]}" > "$u/control" || return 1 ;;
			esac
			echo 1 > "$u/enable" || return 1
			mkdir -p "$lio/vhost/$wwn/tpgt_1/lun/lun_0" || return 1
			ln -s "$u" "$lio/vhost/$wwn/tpgt_1/lun/lun_0/bench" || return 1
			echo -n "$wwn" > "$lio/vhost/$wwn/tpgt_1/nexus" || return 1
			qargs+=" -device vhost-scsi-pci,wwpn=$wwn,num_queues=$gsmp,addr=0x${slot[$d/$p]}"
			k=$((k + 1))
		done
	fi
	qargs+=" -qmp unix:/tmp/bench-qmp.sock,server=on,wait=off"

	echo "== guest: $gsmp vCPU(s), disks: ${guest_disks[*]}" >&2
	echo "info host_setup_seconds $(cut -d' ' -f1 /proc/uptime)"
	export NVMET_MDEV_BENCH_NQN=$nqn
	t0=$(cut -d' ' -f1 /proc/uptime)
	: > /tmp/bench-stats
	rm -rf /tmp/bench-run && mkdir /tmp/bench-run
	"$here/bench-stats.py" '/tmp/bench-run/*/bench-marks' /tmp/bench-stats /tmp/bench-qmp.sock &
	stats=$!
	local mdevs=()
	for p in "${backends[@]}"; do
		[ -n "${uuid[$p]:-}" ] && mdevs+=(--mdev "${uuid[$p]}")
	done
	TMPDIR=/tmp/bench-run run_guest --timeout $guest_timeout --smp "$gsmp" --mem 1G \
		--append "nvme.poll_queues=1 virtio_blk.poll_queues=1" \
		"${mdevs[@]}" --qemu-args "$qargs" -- "$here/bench.sh" --guest > $out
	rc=$?
	kill $stats 2>/dev/null
	wait $stats 2>/dev/null
	t1=$(cut -d' ' -f1 /proc/uptime)
	[ -f /tmp/qsd.pid ] && kill "$(cat /tmp/qsd.pid)" 2>/dev/null
	echo "info guest_status $rc"
	echo "info guest_seconds $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%d", b - a }')"
	grep -a '^bench' $out
	grep -a '^qemu-system-x86_64: \|^qemu-storage-daemon: ' $out | sed 's/^/qemu: /'
	sed 's/^/stat /' /tmp/bench-stats
	dmesg --level=emerg,alert,crit,err,warn |
		awk -v t0="$t0" '{
			s = $0; sub(/^\[ */, "", s)
			if (s + 0 >= t0) print "host-dmesg " $0
		}'
	[ "$rc" -eq 0 ]
}

# --- on the build machine -------------------------------------------------------
case "${1:-}" in
--guest) guest_main; exit ;;
--inside)
	echo "=== nvmet-mdev bench results ==="
	inside_main
	rc=$?
	echo "=== end $rc ==="
	exit $rc ;;
esac

read -ra shapes <<< "${NVMET_MDEV_BENCH_SHAPES:-2 1}"
for s in "${shapes[@]}"; do
	[[ $s == [12] ]] || die "NVMET_MDEV_BENCH_SHAPES: 1 or 2, not \"$s\""
done
case ${NVMET_MDEV_BENCH_KERNEL:-perf} in
perf) kernel=$top/build/perf-bzImage ;;
debug) kernel=$top/build/bzImage ;;
*) die "NVMET_MDEV_BENCH_KERNEL: perf or debug" ;;
esac
[ -f "$kernel" ] || die "no $kernel (make perf-kernel)"
out=$top/build/bench
mkdir -p "$out"
# The shapes not run now keep their last results.
for s in "${shapes[@]}"; do
	rm -f "$out/raw-$s.txt"
done
cpu=$(sed -n 's/^model name[[:space:]]*: *//p' /proc/cpuinfo | head -1)
others() { pgrep -c -f '^qemu-system' || true; }
{
	echo "machine $(hostname), $(nproc) cores ($cpu)"
	echo "date $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "load_start load average $(cut -d' ' -f1-3 /proc/loadavg), $(others) other QEMU process(es)"
} > "$out/run-info.txt"
start=$(date +%s)
rc=0
for s in "${shapes[@]}"; do
	# The host VM's /tmp (tmpfs, half its memory) holds the file disks.
	mem=$((4 * ${#disks[@]} * mib + 2048))
	[ $mem -ge 4096 ] || mem=4096
	echo "bench.sh: host VM with $s vCPU(s), $(basename "$kernel")" >&2
	NVMET_MDEV_KERNEL=$kernel "$here/vm.sh" --smp "$s" --mem ${mem}M \
		--timeout $((guest_timeout + 1800)) -- "$here/bench.sh" --inside \
		> "$out/console-$s.log" 2>&1
	r=$?
	[ $r -eq 0 ] || { rc=$r; echo "bench.sh: the $s-vCPU run ended with status $r;" \
		"see ${out#"$top"/}/console-$s.log" >&2; }
	sed -n '/^=== nvmet-mdev bench results ===/,/^=== end/p' "$out/console-$s.log" |
		tr -d '\r' | sed '1d;$d' > "$out/raw-$s.txt"
done
{
	echo "load_end load average $(cut -d' ' -f1-3 /proc/loadavg), $(others) other QEMU process(es)"
	echo "wall_seconds $(($(date +%s) - start))"
	echo "status $rc"
} >> "$out/run-info.txt"
"$here/bench-report.py" "$out" || rc=1
exit $rc
