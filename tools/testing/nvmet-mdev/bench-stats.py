#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Host-side counters around each fio job of bench.sh, in the host VM.

    bench-stats.py MARKS OUT

Follows the file MARKS (a glob: the guest's run directory is made by vm.sh)
the guest appends its markers to; at each "bench-mark: start|end JOB@DISK"
line, written around each fio job, appends one line to OUT:

    start|end JOB@DISK SECONDS KVM-COUNTERS... MDEV-CPU MDEV-SLEEPS IDLE

KVM counters are KVM's debugfs statistics (all VMs of the host VM: the one
guest), MDEV-CPU the CPU time of the nvmet-mdev queue threads and
MDEV-SLEEPS their voluntary context switches (how often they slept), both
summed over the threads, and IDLE the host VM's idle time (/proc/stat),
times in clock ticks.  One process that never forks: a fork and exec costs
a debug host VM under TCG about 0.3 s, which a shell loop would take from
the guest it measures.  Ends at "bench-mark: done", or after a day.
"""
import glob
import os
import sys
import time

KVM = "/sys/kernel/debug/kvm"
KVM_KEYS = ["exits", "mmio_exits", "halt_exits", "halt_wakeup", "pf_taken",
            "irq_injections"]


def read_int(path):
    try:
        with open(path) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


def mdev_threads():
    cpu = sleeps = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % pid) as f:
                st = f.read()
            comm = st[st.index("(") + 1:st.rindex(")")]
            if not comm.startswith("nvmet-mdev"):
                continue
            fields = st[st.rindex(")") + 2:].split()
            cpu += int(fields[11]) + int(fields[12])	# utime, stime
            with open("/proc/%s/status" % pid) as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches:"):
                        sleeps += int(line.split()[1])
        except (OSError, ValueError):
            continue
    return cpu, sleeps


def idle_ticks():
    with open("/proc/stat") as f:
        return int(f.readline().split()[4])


def sample():
    vals = [read_int(os.path.join(KVM, k)) for k in KVM_KEYS]
    cpu, sleeps = mdev_threads()
    return vals + [cpu, sleeps, idle_ticks()]


def main():
    pattern, out = sys.argv[1], sys.argv[2]
    marks, pos, buf, end = None, 0, "", time.time() + 86400
    while time.time() < end:
        if marks is None:
            found = glob.glob(pattern)
            marks = found[0] if found else None
        data = ""
        if marks:
            try:
                with open(marks, errors="replace") as f:
                    f.seek(pos)
                    data = f.read()
                    pos = f.tell()
            except OSError:
                pass
        buf += data
        lines = buf.split("\n")
        buf = lines.pop()
        for line in lines:
            line = line.rstrip("\r")
            if line == "bench-mark: done":
                return
            if line.startswith("bench-mark: "):
                what = line.split()[1:3]
                with open(out, "a") as f:
                    f.write(" ".join(what + ["%.3f" % time.time()] +
                                     [str(v) for v in sample()]) + "\n")
        time.sleep(0.1)


if __name__ == "__main__":
    main()
