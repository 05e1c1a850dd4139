#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Host-side counters around each fio job of bench.sh, in the host VM.

    bench-stats.py MARKS OUT [QMP]

Follows the file MARKS (a glob: the guest's run directory is made by vm.sh)
the guest appends its markers to; at each "bench-mark: start|end KEY IOS"
line, written around each fio job with the disk's I/O count so far,
appends one line to OUT:

    start|end KEY IOS SECONDS KVM-COUNTERS... MDEV-CPU MDEV-SLEEPS IDLE
        BUSY MDEV-COUNTERS...

KVM counters are KVM's debugfs statistics (all VMs of the host VM: the one
guest), MDEV-CPU the CPU time of the nvmet-mdev queue threads and
MDEV-SLEEPS their voluntary context switches (how often they slept), both
summed over the threads, IDLE and BUSY the host VM's idle and busy time
(/proc/stat; busy is user, nice, system, irq, softirq and steal), times
in clock ticks, and MDEV-COUNTERS the mdevs' debugfs counters
(MDEV_KEYS), summed over the mdevs.  One process that never forks: a fork and exec costs
a debug host VM under TCG about 0.3 s, which a shell loop would take from
the guest it measures.  Ends at "bench-mark: done", or after a day.

When no marker comes for STALL seconds (no fio job lasts that long), it
says where everything is, on stderr (the host VM's console): the busiest
threads of the host VM with their kernel stacks, the mdevs' counters
twice, the end of the guest's console and, given the nested guest's QMP
socket, the guest's registers and, for each of its vCPUs, where it is
and the kernel text addresses on its stack (vm-state.py's lines).
A stalled run then leaves evidence of its cause instead of a timeout; after
the third report it ends the guest's QEMU, and the run fails.
"""
import glob
import importlib.util
import os
import sys
import time

import vmqmp

STALL = 300

KVM = "/sys/kernel/debug/kvm"
KVM_KEYS = ["exits", "mmio_exits", "halt_exits", "halt_wakeup", "pf_taken",
            "irq_injections"]
MDEV_KEYS = ["commands", "trapped_doorbell_writes", "interrupts",
             "moderation_probes", "moderation_probes_failed", "deferred_traps",
             "moderation_timeouts", "doorbell_faults", "completions", "sleeps",
             "wakeups", "pin_cache_hits", "pin_cache_misses"]


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


def cpu_ticks():
    """(idle, busy) clock ticks of the host VM so far."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return v[3], v[0] + v[1] + v[2] + v[5] + v[6] + v[7]


def mdev_counters():
    """MDEV_KEYS of nvmet-mdev's debugfs counters, summed over the mdevs."""
    tot = dict.fromkeys(MDEV_KEYS, 0)
    for p in glob.glob("/sys/kernel/debug/nvmet-mdev/*/stats"):
        for line in read(p).splitlines():
            f = line.split()
            if len(f) == 2 and f[0] in tot and f[1].isdigit():
                tot[f[0]] += int(f[1])
    return [tot[k] for k in MDEV_KEYS]


def sample():
    vals = [read_int(os.path.join(KVM, k)) for k in KVM_KEYS]
    cpu, sleeps = mdev_threads()
    return vals + [cpu, sleeps] + list(cpu_ticks()) + mdev_counters()


def threads():
    """(cpu ticks, pid, tid, comm, state) of every thread of the host VM."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            tids = os.listdir("/proc/%s/task" % pid)
        except OSError:
            continue
        for tid in tids:
            try:
                with open("/proc/%s/task/%s/stat" % (pid, tid)) as f:
                    st = f.read()
            except OSError:
                continue
            comm = st[st.index("(") + 1:st.rindex(")")]
            fields = st[st.rindex(")") + 2:].split()
            out.append((int(fields[11]) + int(fields[12]), pid, tid, comm,
                        fields[0]))
    return out


def dump(text):
    for line in text.rstrip("\n").split("\n"):
        sys.stderr.write("bench-stall: %s\n" % line)
    sys.stderr.flush()


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError as e:
        return "(%s)\n" % e


def mdev_stats():
    return "".join("%s: %s\n" % (p.split("/")[-2], " ".join(read(p).split()))
                   for p in sorted(glob.glob("/sys/kernel/debug/nvmet-mdev/*/stats")))


def guest_registers(path):
    """The nested guest's vCPU registers, from its QEMU's monitor."""
    try:
        return "\n".join(str(r) for r in vmqmp.qmp(
            path, [vmqmp.hmp("info registers"), vmqmp.hmp("info lapic")]))
    except (OSError, ValueError) as e:
        return "(QMP: %s)" % e


def guest_vcpus(path):
    """vm-state.py's two lines per vCPU of the nested guest."""
    here = os.path.dirname(os.path.abspath(__file__))
    sysmap = ""
    if not os.environ.get("NVMET_MDEV_GUEST_KERNEL"):
        sysmap = os.path.join(here, "../../../build/obj-guest/System.map")
    try:
        spec = importlib.util.spec_from_file_location(
            "vm_state", os.path.join(here, "vm-state.py"))
        vs = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(vs)
        syms = vs.Symbols(sysmap)
        lines = []
        for c in vmqmp.qmp(path, [("query-cpus-fast", None)], timeout=30)[0]:
            lines += vs.describe(path, c["cpu-index"], syms)
        return lines
    except (OSError, ValueError, KeyError, ImportError) as e:
        return ["(QMP: %s)" % e]


def quit_guest(path):
    """End the nested guest's QEMU: the run fails instead of hanging."""
    try:
        vmqmp.qmp(path, [("quit", None)])
    except (OSError, ValueError) as e:
        dump("(QMP: %s)" % e)


def stall_report(since, qmp, rundir):
    """Where the host VM and the guest are after `since` s without a marker."""
    a = {(t[1], t[2]): t for t in threads()}
    s0 = mdev_stats()
    time.sleep(5)
    b = threads()
    s1 = mdev_stats()
    busy = sorted(((t[0] - a.get((t[1], t[2]), (t[0],))[0], t) for t in b),
                  reverse=True)[:8]
    text = ["no marker for %d s; busiest threads over 5 s (ticks, pid, tid, "
            "comm, state) and their kernel stacks:" % since]
    for d, t in busy:
        text.append("%4d %s %s %s %s" % (d, t[1], t[2], t[3], t[4]))
        text += ["    " + l for l in
                 read("/proc/%s/task/%s/stack" % (t[1], t[2])).splitlines()[:12]]
    for t in b:
        if t[3].startswith("nvmet-mdev") or t[3].startswith("qemu"):
            text.append("%s %s %s %s wchan %s" % (t[1], t[2], t[3], t[4],
                        read("/proc/%s/task/%s/wchan" % (t[1], t[2])).strip()))
    text.append("mdev counters, 5 s apart:")
    text += s0.splitlines() + s1.splitlines()
    text.append("KVM: " + " ".join("%s=%d" % (k, read_int(os.path.join(KVM, k)))
                                   for k in KVM_KEYS))
    text.append("the end of the guest's console (vm.sh's copy):")
    text += read(os.path.join(rundir, "console")).splitlines()[-30:]
    if qmp:
        text.append("the guest's vCPU (QEMU monitor):")
        text += guest_registers(qmp).splitlines()
        text.append("the guest's vCPUs:")
        text += guest_vcpus(qmp)
    dump("\n".join(text))


def main():
    pattern, out = sys.argv[1], sys.argv[2]
    qmp = sys.argv[3] if len(sys.argv) > 3 else None
    marks, pos, buf, end = None, 0, "", time.time() + 86400
    last = time.time()
    reports = 0
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
        if lines:
            last, reports = time.time(), 0
        elif marks and time.time() - last > STALL * (reports + 1) and reports < 3:
            stall_report(int(time.time() - last), qmp, os.path.dirname(marks))
            reports += 1
            if reports == 3 and qmp:
                dump("ending the guest")
                quit_guest(qmp)
        for line in lines:
            line = line.rstrip("\r")
            if line == "bench-mark: done":
                return
            if line.startswith("bench-mark: "):
                what = line.split()[1:4]
                with open(out, "a") as f:
                    f.write(" ".join(what + ["%.3f" % time.time()] +
                                     [str(v) for v in sample()]) + "\n")
        time.sleep(0.1)


if __name__ == "__main__":
    main()
