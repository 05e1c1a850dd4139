#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The benchmark ("make bench"): the same fio jobs on four equal disks seen
# by one nested KVM guest, measured in one run and printed side by side:
#
#   mdev        an nvmet file namespace exported through an mdev port
#   mdev-alt    the same through a second mdev with the other doorbell_mmap
#   qemu-nvme   QEMU's emulated NVMe controller (-device nvme)
#   virtio-blk  QEMU's virtio-blk (-device virtio-blk-pci)
#
# Each is a file of the same size on the host VM's tmpfs, written in full
# first.  One host VM (2 vCPUs unless told otherwise; 4G, more for big
# disks: its tmpfs gets half of it) boots, one guest
# boots with all four disks attached and runs every fio job on each, the
# jobs interleaved across the disks (job 1 on mdev, mdev-alt, qemu-nvme,
# virtio-blk, then job 2, ...) so that a change in the machine's load hits
# them alike, and the whole is repeated (three times unless told otherwise).
# The table gives IOPS (and MiB/s for 128k), mean and p99 latency, the
# medians of the repeats, and the mdev's ratio to each peer (the median of
# the repeats' ratios and their range), all from this run, then what the host
# VM spent per I/O (KVM exits, the queue threads' sleeps and CPU time; see
# bench-stats.py); it is also saved as build/bench/latest.txt and the whole
# console as build/bench/console.log.
#
# Everything runs nested under TCG: absolute numbers mean little, the ratios
# are the point.  A 2-vCPU TCG host VM now and then dies with "Oops: int3"
# (QEMU's multi-threaded TCG racing with KVM's static key patching, see the
# README); such a run is re-run once, and the report says so.
#
# Environment (all optional; passed on into the VMs):
#   NVMET_MDEV_BENCH_SIZE_MB      size of each disk in MiB (default 512)
#   NVMET_MDEV_BENCH_RUNTIME      seconds measured per job (default 8)
#   NVMET_MDEV_BENCH_RAMP         seconds of warm-up per job, not measured
#                                 (default 2)
#   NVMET_MDEV_BENCH_REPEATS      how many times each job runs on each disk
#                                 (default 3): the table gives medians, and
#                                 the ratios' ranges over the repeats
#   NVMET_MDEV_BENCH_HOST_SMP     host VM vCPUs (default 2; 1 puts the
#                                 guest and the device on one CPU)
#   NVMET_MDEV_BENCH_GUEST_SMP    guest vCPUs (default 1: the host VM's
#                                 other vCPU is left to the device side)
#   NVMET_MDEV_BENCH_DB_MMAP      the mdev's doorbell_mmap (default: auto)
#   NVMET_MDEV_BENCH_DRIVE_OPTS   -drive options of the two QEMU disks
#                                 (default cache=none,aio=native)
#   NVMET_MDEV_BENCH_JOBS         the fio jobs run, a subset of the names
#                                 below (default all), e.g.
#                                 "128k-seqread-QD8 128k-seqwrite-QD8"
#   NVMET_MDEV_BENCH_DISKS        the disks measured, a subset of "mdev
#                                 mdev-alt qemu-nvme virtio-blk" (default
#                                 all; all four are attached either way)
#   NVMET_MDEV_GUEST_KERNEL       guest kernel (default build/guest-bzImage;
#                                 it needs CONFIG_VIRTIO_BLK, see
#                                 config.guest, or virtio-blk shows n/a)
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../../.." && pwd)

nqn=nqn.2026-11.org.example:bench
nqn_alt=nqn.2026-11.org.example:bench-alt
# mdev-alt: a second mdev with the other doorbell_mmap setting than mdev's
# default ("auto": mapped with two or more CPUs, trapped with one).
all_disks=(mdev mdev-alt qemu-nvme virtio-blk)
read -ra disks <<< "${NVMET_MDEV_BENCH_DISKS:-${all_disks[*]}}"
for d in "${disks[@]}"; do
	case " ${all_disks[*]} " in
	*" $d "*) ;;
	*) echo "bench.sh: NVMET_MDEV_BENCH_DISKS: no disk \"$d\"" >&2; exit 2 ;;
	esac
done
# name rw bs iodepth [numjobs]
fio_jobs=(
	"4k-randread-QD1 randread 4k 1"
	"4k-randread-QD32 randread 4k 32"
	"4k-randwrite-QD1 randwrite 4k 1"
	"4k-randwrite-QD32 randwrite 4k 32"
	"128k-seqread-QD8 read 128k 8"
	"128k-seqwrite-QD8 write 128k 8"
	"4k-randrw-QD16x3 randrw 4k 16 3"
)
reps=${NVMET_MDEV_BENCH_REPEATS:-3}
if ! [[ $reps =~ ^[1-9][0-9]?$ ]]; then
	echo "bench.sh: NVMET_MDEV_BENCH_REPEATS: 1 to 99, not \"$reps\"" >&2
	exit 2
fi
if [ -n "${NVMET_MDEV_BENCH_JOBS:-}" ]; then
	all_jobs=("${fio_jobs[@]}")
	fio_jobs=()
	for j in "${all_jobs[@]}"; do
		[[ " $NVMET_MDEV_BENCH_JOBS " == *" ${j%% *} "* ]] && fio_jobs+=("$j")
	done
	[ ${#fio_jobs[@]} -gt 0 ] ||
		{ echo "bench.sh: NVMET_MDEV_BENCH_JOBS: no such job" >&2; exit 2; }
fi
# The guest's time limit: on a 1-vCPU host VM each fio start cost the
# guest 20 to 30 s on top of the job's ramp and runtime with Debian's fio
# (a few with make fio's, build-fio.sh); the margin stays.
guest_timeout=$((600 + reps * ${#fio_jobs[@]} * ${#disks[@]} *
	(${NVMET_MDEV_BENCH_RAMP:-2} + ${NVMET_MDEV_BENCH_RUNTIME:-8} + 60)))

# --- in the nested guest ----------------------------------------------------
guest_main() {
	local rt=${NVMET_MDEV_BENCH_RUNTIME:-8} ramp=${NVMET_MDEV_BENCH_RAMP:-2}
	local b n d i j r rc sections
	local -A devs=()

	# Keep kernel messages off the console that carries the results.
	dmesg -n 1
	# A namespace's "device" is its controller, or with native multipath
	# (nvmet's multi-controller subsystem) the subsystem: both have
	# subsysnqn and model.
	for b in /sys/block/nvme*n*; do
		n=${b##*/}
		case $n in *c*) continue ;; esac
		if [ "$(cat "$b/device/subsysnqn")" = "$NVMET_MDEV_BENCH_NQN" ]; then
			devs[mdev]=$n
		elif [ "$(cat "$b/device/subsysnqn")" = "$NVMET_MDEV_BENCH_NQN_ALT" ]; then
			devs[mdev-alt]=$n
		elif grep -q '^QEMU' "$b/device/model"; then
			devs[qemu-nvme]=$n
		fi
	done
	for b in /sys/block/vd*; do
		[ -e "$b" ] && devs[virtio-blk]=${b##*/} && break
	done
	echo "bench-info: guest_boot_seconds $(cut -d' ' -f1 /proc/uptime)"
	echo "bench-info: guest_kernel $(uname -r)"
	echo "bench-info: guest_cpus $(nproc)"
	echo "bench-info: guest_mem_kb $(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)"
	echo "bench-info: fio $(fio --version)"
	echo "bench-info: repeats $reps"
	for d in "${disks[@]}"; do
		n=${devs[$d]:-}
		if [ -z "$n" ]; then
			echo "bench-info: missing $d"
			continue
		fi
		echo "bench-info: dev $d /dev/$n $(blockdev --getsize64 "/dev/$n")" \
			"$(ls -d "/sys/block/$n/mq/"* 2>/dev/null | wc -l)"
	done

	# One section per job and disk, run one at a time (fio --section),
	# between the markers bench-stats.py in the host VM samples at.  The
	# markers also go to a file in the run directory (9p): the console
	# is no good for them, a userspace write to it can stall on the
	# 1-vCPU host VM until something else wakes the vCPU.
	mark() {
		echo "bench-mark: $*"
		echo "bench-mark: $*" >> /run/nvmet-mdev/bench-marks
	}
	# The start marker waits for the job's first I/O in the disk's
	# statistics: fio's own start-up (seconds of a nested guest's exec
	# and set-up) is no part of what the host spends per I/O.  With
	# builtins, a read with a timeout from a FIFO as the sleep.
	mkfifo /tmp/bench-tick && exec {tick}<>/tmp/bench-tick
	io_count() {
		local s
		read -ra s < "/sys/block/$1/stat"
		echo $((s[0] + s[4]))
	}
	wait_io() {
		local n0 i
		n0=$(io_count "$1")
		for ((i = 0; i < 1200; i++)); do
			kill -0 "$2" 2>/dev/null || return
			[ "$(io_count "$1")" = "$n0" ] || return
			read -r -t 0.05 -u "$tick"
		done
	}
	{
		echo "[global]"
		echo "direct=1"
		echo "ioengine=io_uring"
		echo "time_based=1"
		echo "runtime=$rt"
		echo "ramp_time=$ramp"
		echo "norandommap=1"
		echo "randrepeat=0"
		echo "group_reporting=1"
		for j in "${fio_jobs[@]}"; do
			set -- $j
			for d in "${disks[@]}"; do
				[ -n "${devs[$d]:-}" ] || continue
				echo "[$1@$d]"
				echo "filename=/dev/${devs[$d]}"
				echo "rw=$2"
				echo "bs=$3"
				echo "iodepth=$4"
				echo "numjobs=${5:-1}"
			done
		done
	} > /tmp/bench.fio
	sections=($(sed -n 's/^\[\(.*@.*\)\]$/\1/p' /tmp/bench.fio))
	n=${#sections[@]}
	echo "bench-progress: $(cut -d' ' -f1 /proc/uptime) s: fio starts," \
		"$reps x $n jobs of ${ramp}+${rt} s"
	rc=0
	# Each repeat runs every job on every disk once, in the same order,
	# so that the repeats spread over the run's changes of load as the
	# disks do.
	for ((i = 0; i < reps * n; i++)); do
		r=$((i / n + 1))
		j=${sections[i % n]}
		fio --eta=never --output-format=json --output=/tmp/fio.json \
			--section="$j" /tmp/bench.fio > /tmp/fio.err 2>&1 &
		wait_io "${devs[${j#*@}]}" $!
		mark start "$j/$r"
		wait $! || rc=1
		mark end "$j/$r"
		# JOB DISK REPEAT IOPS BYTES/S MEAN-LATENCY-NS P99-CLAT-NS ERROR,
		# reads and writes together (a mixed job's p99 is the worse of
		# the two)
		jq -r --arg rep "$r" '.jobs[] | .read as $r | .write as $w |
			($r.total_ios + $w.total_ios) as $n |
			(.jobname | split("@")) as $j |
			"bench: \($j[0]) \($j[1]) \($rep) \($r.iops + $w.iops) " +
			"\($r.bw_bytes + $w.bw_bytes) " +
			"\(if $n > 0 then ($r.lat_ns.mean * $r.total_ios +
				$w.lat_ns.mean * $w.total_ios) / $n else 0 end) " +
			"\([$r.clat_ns.percentile["99.000000"] // 0,
			    $w.clat_ns.percentile["99.000000"] // 0] | max) " +
			"\(.error)"' /tmp/fio.json
		[ $rc -eq 0 ] || sed 's/^/bench-err: /' /tmp/fio.err | head -20
	done
	echo "bench-progress: $(cut -d' ' -f1 /proc/uptime) s: fio done (status $rc)"
	mark "done"
	echo "bench-info: guest_end_seconds $(cut -d' ' -f1 /proc/uptime)"
	# Errors and warnings the guest kernel logged during the run.
	dmesg --level=emerg,alert,crit,err,warn | sed 's/^/bench-dmesg: /'
	return 0
}

# --- in the host VM -----------------------------------------------------------
inside_main() {
	. "$here/lib.sh"
	local mib=${NVMET_MDEV_BENCH_SIZE_MB:-512}
	local gsmp=${NVMET_MDEV_BENCH_GUEST_SMP:-1}
	local dopts=${NVMET_MDEV_BENCH_DRIVE_OPTS:-cache=none,aio=native}
	local info=/tmp/bench-info out=/tmp/bench-guest.out
	local d uuid attr a qargs virtio t0 t1 rc

	echo "== host VM: four ${mib} MiB disks on tmpfs, written in full"
	if [ $(($(df --output=avail -k /tmp | tail -1) / 1024)) -lt $((4 * mib + 64)) ]; then
		echo "bench.sh: /tmp has no room for four ${mib} MiB disks" >&2
		return 1
	fi
	for d in "${all_disks[@]}"; do
		dd if=/dev/zero of="/tmp/bench-$d.img" bs=1M count="$mib" status=none ||
			return 1
	done
	setup_default 1 $nqn /tmp/bench-mdev.img || return 1
	modprobe nvmet-mdev || return 1
	make_subsys $nqn_alt /tmp/bench-mdev-alt.img || return 1
	link_subsys 1 $nqn_alt || return 1
	uuid=$(create_mdev 1) || return 1
	attr=/sys/bus/mdev/devices/$uuid
	echo $nqn > "$attr/subsysnqn" || return 1
	if [ -n "${NVMET_MDEV_BENCH_DB_MMAP:-}" ]; then
		echo "$NVMET_MDEV_BENCH_DB_MMAP" > "$attr/doorbell_mmap" || return 1
	fi
	alt=$(create_mdev 1) || return 1
	echo $nqn_alt > "/sys/bus/mdev/devices/$alt/subsysnqn" || return 1
	# What auto picks for the VMM (this shell's affinity, as QEMU's).
	amode=on
	[ "$(nproc)" -gt 1 ] && amode=off
	case ${NVMET_MDEV_BENCH_DB_MMAP:-auto} in
	on) amode=off ;;
	off) amode=on ;;
	esac
	echo $amode > "/sys/bus/mdev/devices/$alt/doorbell_mmap" || return 1
	{
		echo "machine ${NVMET_MDEV_BENCH_MACHINE:-?}"
		echo "date $(date -u '+%Y-%m-%d %H:%M UTC')"
		echo "qemu_version $(qemu-system-x86_64 --version | head -1)"
		echo "host_kernel $(uname -r)"
		echo "host_cpus $(nproc)"
		echo "host_mem_kb $(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)"
		echo "size_mb $mib"
		echo "ramp ${NVMET_MDEV_BENCH_RAMP:-2}"
		echo "runtime ${NVMET_MDEV_BENCH_RUNTIME:-8}"
		echo "drive_opts $dopts"
		echo "buffered_io $(cat "$NVMET_CFS/subsystems/$nqn/namespaces/1/buffered_io" \
			2>/dev/null || echo ?)"
		echo -n "mdev_attrs"
		for a in nr_io_queues max_queue_entries mdts shadow_doorbells \
			 doorbell_mmap poll_idle_us; do
			echo -n " $a=$(cat "$attr/$a" 2>/dev/null || echo ?)"
		done
		echo
		echo "alt_doorbell_mmap $amode"
		echo "guest_kernel_file ${NVMET_MDEV_GUEST_KERNEL:-$top/build/guest-bzImage}"
		echo "disks ${disks[*]}"
	} > $info

	# Legacy virtio in the nested guest, as vm.sh does for its own
	# devices (an MMIO notify under the TCG-emulated SVM sometimes ended
	# in "KVM internal error. Suberror: 3").
	virtio=",disable-modern=on,disable-legacy=off"
	qargs="-drive file=/tmp/bench-qemu-nvme.img,if=none,id=bench-qn,format=raw,$dopts"
	qargs+=" -device nvme,drive=bench-qn,serial=bench-qemu-nvme"
	qargs+=" -drive file=/tmp/bench-virtio-blk.img,if=none,id=bench-vb,format=raw,$dopts"
	qargs+=" -device virtio-blk-pci,drive=bench-vb,serial=bench-virtio-blk$virtio"
	# For bench-stats.py's report on a stalled run.
	qargs+=" -qmp unix:/tmp/bench-qmp.sock,server=on,wait=off"

	echo "== guest: $gsmp vCPU(s), mdev $uuid, qemu-nvme and virtio-blk attached"
	echo "host_setup_seconds $(cut -d' ' -f1 /proc/uptime)" >> $info
	export NVMET_MDEV_BENCH_NQN=$nqn NVMET_MDEV_BENCH_NQN_ALT=$nqn_alt
	t0=$(cut -d' ' -f1 /proc/uptime)
	: > $out
	: > /tmp/bench-stats
	rm -rf /tmp/bench-run && mkdir /tmp/bench-run
	"$here/bench-stats.py" '/tmp/bench-run/*/bench-marks' /tmp/bench-stats /tmp/bench-qmp.sock &
	stats=$!
	TMPDIR=/tmp/bench-run run_guest --timeout $guest_timeout --smp "$gsmp" \
		--mdev "$uuid" --mdev "$alt" --qemu-args "$qargs" \
		-- "$here/bench.sh" --guest > $out
	rc=$?
	kill $stats 2>/dev/null
	wait $stats 2>/dev/null
	t1=$(cut -d' ' -f1 /proc/uptime)
	echo "guest_status $rc" >> $info
	echo "guest_seconds $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%d", b - a }')" >> $info
	remove_mdev "$alt"
	remove_mdev "$uuid"
	teardown_nvmet

	# Our kernel's errors and warnings from the guest's start on.
	dmesg --level=emerg,alert,crit,err,warn |
		awk -v t0="$t0" '{
			s = $0; sub(/^\[ */, "", s)
			if (s + 0 >= t0) print "host-dmesg " $0
		}' >> $info
	dmesg -n 1
	echo "=== nvmet-mdev bench results ==="
	python3 - $info $out /tmp/bench-stats <<'EOF'
import re, sys

info, guest = {}, {}
extra = {"host-dmesg": [], "bench-dmesg": [], "bench-err": [], "qemu": []}
for line in open(sys.argv[1], errors="replace"):
    k, _, v = line.rstrip("\n").partition(" ")
    if k in extra:
        extra[k].append(v)
    else:
        info[k] = v
devs, res, jobs = {}, {}, []
for line in open(sys.argv[2], errors="replace"):
    line = line.rstrip("\r\n")
    if line.startswith("bench-info: "):
        f = line[12:].split(" ", 1)
        if f[0] == "dev":
            d, path, size, nq = f[1].split()
            devs[d] = (path, int(size), int(nq))
        elif f[0] == "missing":
            devs[f[1]] = None
        else:
            guest[f[0]] = f[1] if len(f) > 1 else ""
    elif line.startswith("bench: "):
        f = line.split()
        if f[1] not in jobs:
            jobs.append(f[1])               # in the order they ran
        res.setdefault((f[1], f[2]), {})[int(f[3])] = (
            float(f[4]), float(f[5]), float(f[6]) / 1000, float(f[7]) / 1000, f[8])
    elif line.startswith("bench-dmesg: ") or line.startswith("bench-err: "):
        k, _, v = line.partition(": ")
        extra[k].append(v)
    elif re.match(r"^qemu-system-x86_64: ", line):
        extra["qemu"].append(line)

disks = info.get("disks", "mdev mdev-alt qemu-nvme virtio-blk").split()
jobs = [j for j in jobs if any((j, d) in res for d in disks)]
labels = {j: j.replace("-", " ").replace("x", " x") + (" jobs" if "x" in j else "")
          for j in jobs}

def ok(j, d):
    """Every repeat of job j on disk d ran without an error."""
    r = res.get((j, d))
    return bool(r) and all(v[4] == "0" and v[0] > 0 for v in r.values())

def median(v):
    v = sorted(v)
    h = len(v) // 2
    return v[h] if len(v) % 2 else (v[h - 1] + v[h]) / 2

def med(j, d, i):
    return median([v[i] for v in res[(j, d)].values()])

def ratio(j, a, b, i):
    """The median of the repeats' ratios (each pair ran at about the same
    time), with their range when there is more than one."""
    if not (ok(j, a) and ok(j, b)):
        return "n/a"
    ra, rb = res[(j, a)], res[(j, b)]
    v = [ra[k][i] / rb[k][i] for k in sorted(ra) if k in rb]
    if len(v) < 2:
        return "%.2f" % median(v)
    return "%.2f (%.2f-%.2f)" % (median(v), min(v), max(v))

def tput(j, d):
    if (j, d) not in res:
        return "n/a"
    if not ok(j, d):
        return "error"
    s = "%.0f" % med(j, d, 0)
    if j.startswith("128k"):
        s += " (%.1f MiB/s)" % (med(j, d, 1) / 2**20)
    return s

def us(v):
    return "%.1f" % v if v < 10 else "%.0f" % v

def lat(j, d):
    return us(med(j, d, 2)) if ok(j, d) else "n/a"

def p99(j, d):
    return us(med(j, d, 3)) if ok(j, d) else "n/a"

pairs = [(a, b, t) for a, b, t in [("mdev", "qemu-nvme", "mdev/qemu-nvme"),
                                     ("mdev", "virtio-blk", "mdev/virtio-blk"),
                                     ("mdev-alt", "qemu-nvme", "alt/qemu-nvme")]
         if a in disks and b in disks]

def table(title, cell, idx):
    rows = [[title] + disks + [t for _, _, t in pairs]]
    for j in jobs:
        rows.append([labels[j]] + [cell(j, d) for d in disks] +
                    [ratio(j, a, b, idx) for a, b, _ in pairs])
    w = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  " + r[0].ljust(w[0]) + "".join("  " + c.rjust(w[i + 1])
                                                 for i, c in enumerate(r[1:])))

def gib(kb):
    try:
        return "%.1f GiB" % (int(kb) / 2**20)
    except ValueError:
        return "?"

print("nvmet-mdev benchmark, %s, on %s" % (info.get("date", "?"), info.get("machine", "?")))
print("  host VM : %s vCPUs (QEMU TCG, multi-threaded), MemTotal %s, kernel %s (debug build:"
      % (info.get("host_cpus", "?"), gib(info.get("host_mem_kb", "")),
         info.get("host_kernel", "?")))
print("            KASAN, lockdep, ...), %s" % info.get("qemu_version", "?"))
print("  guest   : %s vCPU(s) (nested KVM, -cpu qemu64), MemTotal %s, kernel %s"
      % (guest.get("guest_cpus", "?"), gib(guest.get("guest_mem_kb", "")),
         guest.get("guest_kernel", "?")))
if not info.get("guest_kernel_file", "").endswith("/build/guest-bzImage"):
    print("            guest kernel file %s" % info.get("guest_kernel_file", "?"))
print("  disks   : four %s MiB files on the host VM's tmpfs, written in full first"
      % info.get("size_mb", "?"))
desc = {
    "mdev": "nvmet file namespace (buffered_io=%s), mdev port, vfio-pci;\n"
            "               %s" % (info.get("buffered_io", "?"),
                                   info.get("mdev_attrs", "").strip()),
    "mdev-alt": "the same as a second mdev (own subsystem and file), but doorbell_mmap=%s"
                % info.get("alt_doorbell_mmap", "?"),
    "qemu-nvme": "-device nvme, -drive %s" % info.get("drive_opts", "?"),
    "virtio-blk": "-device virtio-blk-pci (legacy virtio), -drive %s" % info.get("drive_opts", "?"),
}
for d in disks:
    v = devs.get(d)
    where = "MISSING in the guest" if v is None else \
        "%s, %d MiB, %s" % (v[0], v[1] >> 20, "%d blk-mq queue(s)" % v[2] if v[2]
                            else "native multipath node")
    print("    %-10s %s\n               %s" % (d, where, desc[d]))
print("  fio     : %s, ioengine=io_uring direct=1, per job %ss ramp + %ss measured,"
      % (guest.get("fio", "?"), info.get("ramp", "?"), info.get("runtime", "?")))
print("            jobs interleaved across the disks, %s repeat(s) of the whole"
      % guest.get("repeats", "?"))

def secs(v):
    try:
        return "%.0f s" % float(v)
    except ValueError:
        return "?"

try:
    fio_s = float(guest["guest_end_seconds"]) - float(guest["guest_boot_seconds"])
except (KeyError, ValueError):
    fio_s = "?"
print("  time    : host VM boot and set-up %s, guest boot %s, fio %s, whole guest run %s"
      " (status %s)" % (secs(info.get("host_setup_seconds", "?")),
                        secs(guest.get("guest_boot_seconds", "?")), secs(fio_s),
                        secs(info.get("guest_seconds", "?")), info.get("guest_status", "?")))
print()
table("IOPS (and MiB/s)", tput, 0)
print()
table("mean latency (us)", lat, 2)
print()
table("p99 completion latency (us)", p99, 3)
print()
print("  Each cell is the median of the repeats; a ratio is the median of the")
print("  repeats' ratios, with their range in brackets.  IOPS ratios above 1 and")
print("  latency ratios below 1 favour the mdev.")
print("  All of it runs nested under TCG: the absolute numbers mean little.")

# Host side, per I/O: bench-stats.py's counters from the start to the end
# of each job (from its first I/O, ramp included), over the job's I/Os at its
# measured rate.
marks = {}
try:
    for line in open(sys.argv[3]):
        f = line.split()
        marks[(f[0], f[1])] = [float(x) for x in f[2:]]
except OSError:
    pass
hz = 100.0
try:
    import os
    hz = float(os.sysconf("SC_CLK_TCK"))
except (ValueError, OSError):
    pass
cols = ["KVM exits", "MMIO exits", "halts", "pf taken", "irqs", "mdev sleeps",
        "mdev CPU us", "host busy", "traps", "dev irqs", "probes", "deferred",
        "timeouts"]
rows = []
for j in jobs:
    for d in disks:
        if not ok(j, d):
            continue
        # summed over the repeats
        dt = ios = 0.0
        dl = []
        for k, v in res[(j, d)].items():
            key = "%s@%s/%d" % (j, d, k)
            a, b = marks.get(("start", key)), marks.get(("end", key))
            if not a or not b or b[0] <= a[0]:
                continue
            dt += b[0] - a[0]
            ios += v[0] * (b[0] - a[0])
            dl = [t + y - x for t, x, y in
                  zip(dl or [0.0] * (len(a) - 1), a[1:], b[1:])]
        if dt <= 0 or ios <= 0:
            continue
        # exits mmio halt_exits halt_wakeup pf irq cpu sleeps idle, then
        # the mdev's commands traps interrupts probes failed deferred
        # timeouts
        busy = 1 - dl[8] / hz / dt
        dev = ["-"] * 5
        if d.startswith("mdev") and len(dl) >= 16 and dl[9] > 0:
            dev = ["%.2f" % (dl[i] / dl[9]) for i in (10, 11, 12, 14, 15)]
        rows.append([labels[j] + " " + d,
                     "%.2f" % (dl[0] / ios), "%.2f" % (dl[1] / ios),
                     "%.2f" % (dl[2] / ios), "%.2f" % (dl[4] / ios),
                     "%.2f" % (dl[5] / ios),
                     "%.2f" % (dl[7] / ios) if d.startswith("mdev") else "-",
                     "%.0f" % (dl[6] / hz * 1e6 / ios) if d.startswith("mdev") else "-",
                     "%.0f%%" % (100 * max(0.0, busy))] + dev)
if rows:
    print()
    print("  host VM side, per I/O (from the job's first I/O, ramp included, over")
    print("  all its repeats; KVM counters are the guest's, mdev sleeps/CPU the")
    print("  nvmet-mdev queue threads'; traps, dev irqs, probes, deferred and")
    print("  timeouts are the mdev's trapped doorbell writes, interrupts,")
    print("  moderation probes, deferred traps and moderation timeouts per")
    print("  command):")
    rows.insert(0, ["job"] + cols)
    w = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  " + r[0].ljust(w[0]) + "".join("  " + c.rjust(w[i + 1])
                                                 for i, c in enumerate(r[1:])))
if extra["bench-err"]:
    print("fio errors:")
    for l in extra["bench-err"]:
        print("  " + l)
if extra["qemu"]:
    print("QEMU (the guest's) said:")
    for l in sorted(set(extra["qemu"])):
        print("  " + l)
if extra["bench-dmesg"]:
    print("guest kernel errors/warnings:")
    for l in extra["bench-dmesg"][:20]:
        print("  " + l)
if extra["host-dmesg"]:
    print("host VM kernel errors/warnings during the guest run:")
    for l in extra["host-dmesg"][:20]:
        print("  " + l)
EOF
	echo "=== end ==="
	[ "$rc" -eq 0 ]
}

# --- on the build machine -------------------------------------------------------
run_vm() {
	# The host VM's /tmp (tmpfs, half of its memory) holds the four disks.
	local mem=$((8 * ${NVMET_MDEV_BENCH_SIZE_MB:-512} + 1024))
	[ $mem -ge 4096 ] || mem=4096
	"$here/vm.sh" --smp "${NVMET_MDEV_BENCH_HOST_SMP:-2}" --mem ${mem}M \
		--timeout $((guest_timeout + 600)) -- "$here/bench.sh" --inside 2>&1 |
		tee "$1"
	return "${PIPESTATUS[0]}"
}

case "${1:-}" in
--guest) guest_main; exit ;;
--inside) inside_main; exit ;;
esac

out=$top/build/bench
mkdir -p "$out"
cpu=$(sed -n 's/^model name[[:space:]]*: *//p' /proc/cpuinfo | head -1)
# Other VMs share the cores: the report gives the load around the run.
others() { pgrep -c -f '^qemu-system' || true; }
NVMET_MDEV_BENCH_MACHINE="$(hostname), $(nproc) cores ($cpu)"
export NVMET_MDEV_BENCH_MACHINE
note=
load0="load average $(cut -d' ' -f1-3 /proc/loadavg), $(others) other QEMU process(es)"
start=$(date +%s)
run_vm "$out/console.log"
rc=$?
if [ $rc -ne 0 ] && grep -aq 'Oops: int3' "$out/console.log"; then
	note="NOTE: the first run died with \"Oops: int3\" (multi-threaded TCG"
	note+=" racing with KVM's static key patching, see the README);"
	note+=" this is the one re-run."
	echo "bench.sh: $note" >&2
	cp "$out/console.log" "$out/console-first-run.log"
	run_vm "$out/console.log"
	rc=$?
fi
results=$(sed -n '/^=== nvmet-mdev bench results ===/,/^=== end ===/p' "$out/console.log" |
	tr -d '\r' | sed '1d;$d')
if [ -z "$results" ]; then
	echo "bench.sh: no results (status $rc); the console is in ${out#"$top"/}/console.log" >&2
	exit 1
fi
{
	echo "$results"
	secs=$(( $(date +%s) - start ))
	echo "  make bench: $((secs / 60)) min $((secs % 60)) s wall, boot to power-off"
	echo "  machine at start: $load0"
	echo "  machine at end:   load average $(cut -d' ' -f1-3 /proc/loadavg)," \
		"$(others) other QEMU process(es)"
	[ -n "$note" ] && echo "$note"
	k=$(grep -ac '^vm.sh: QEMU lost a wake-up' "$out/console.log" || true)
	[ "$k" -gt 0 ] && echo "  QEMU lost a wake-up of the host VM $k time(s)," \
		"recovered after 2 to 10 s (see wakeup-watch.py)"
	[ $rc -ne 0 ] && echo "WARNING: the run ended with status $rc" \
		"(a kernel splat or a failed step); see build/bench/console.log"
} > "$out/latest.txt"
echo
cat "$out/latest.txt"
echo "(saved as ${out#"$top"/}/latest.txt; console in ${out#"$top"/}/console.log)"
exit $rc
