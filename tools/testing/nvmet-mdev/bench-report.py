#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The report of make bench, from what bench.sh's host VMs printed.

    bench-report.py DIR

Reads DIR/run-info.txt and DIR/raw-<vCPUs>.txt (one per host shape) and
writes DIR/latest.txt (the tables, also printed) and DIR/latest.json:

    {"kernel": ..., "repeats": N, "cells": [{"job": ..., "disk": ...,
     "backend": ..., "host_vcpus": 1|2, "iops": [per repeat], "p99_us": [..],
     "cpu_us_per_io": [..], ...}], ...}

Every ratio is taken per repeat (the disks of one repeat ran minutes
apart, under the same load) and reported as the median of the repeats with
their range.  A fio error anywhere makes the exit status 1.
"""
import importlib.util
import json
import os
import statistics
import sys

PEERS = ["qemu-nvme", "virtio-blk", "vhost-user-blk", "vhost-scsi"]
DISKS = ["mdev"] + PEERS + ["host-local"]
# bench-stats.py's sample: KVM_KEYS, mdev CPU, mdev sleeps, idle, busy,
# then its MDEV_KEYS counters.
_spec = importlib.util.spec_from_file_location(
    "bench_stats", os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench-stats.py"))
_stats = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_stats)
KVM_KEYS, MDEV_KEYS = _stats.KVM_KEYS, _stats.MDEV_KEYS
I_MCPU, I_BUSY, I_MDEV = len(KVM_KEYS), len(KVM_KEYS) + 3, len(KVM_KEYS) + 4


def median(v):
    return statistics.median(v) if v else None


def guest_lines(path):
    """The guest's own lines in a host VM's console: what a host VM that
    died before printing its results still leaves of them."""
    try:
        with open(path, errors="replace") as f:
            return [line.rstrip("\r\n")[len("guest| "):] for line in f
                    if line.startswith("guest| bench")]
    except OSError:
        return []


def parse(lines, shape, st):
    """Adds the records of one host VM's raw output to st."""
    info = st["info"].setdefault(shape, {})
    marks = {}
    cpu_host = {}
    for line in lines:
        line = line.rstrip("\n")
        k, _, v = line.partition(" ")
        f = v.split()
        if k == "info":
            info[f[0]] = v.partition(" ")[2]
        elif k == "bench-info:":
            if f[0] == "dev":
                st["devs"].setdefault(shape, {})[f[1]] = f[2:]
            elif f[0] == "missing":
                st["problems"].append("%s vCPU(s): %s missing in the guest"
                                      % (shape, f[1]))
            else:
                info["guest_" + f[0] if not f[0].startswith("guest") else f[0]] = \
                    v.partition(" ")[2]
        elif k == "bench:":
            job, disk, backend, rep = f[0], f[1], f[2], int(f[3])
            iops, bw, mean, p50, p99, err, ios = (float(f[4]), float(f[5]), float(f[6]),
                                                  float(f[7]), float(f[8]), f[9],
                                                  float(f[10]))
            r = st["runs"].setdefault((shape, backend, disk, job), {})
            r[rep] = {"iops": iops, "bw": bw, "mean_us": mean / 1000,
                      "p50_us": p50 / 1000, "p99_us": p99 / 1000, "error": err,
                      "ios": ios}
            if err != "0" or iops <= 0:
                st["problems"].append("%s vCPU(s): fio failed: %s %s %s repeat %d"
                                      % (shape, job, disk, backend, rep))
        elif k == "bench-cpu:":
            cpu_host[(f[0], f[2], int(f[3]))] = (float(f[4]), float(f[6]) - float(f[5]))
        elif k == "bench-skip:":
            st["skipped"].add((shape, f[0], f[1], f[2] if len(f) > 2 else "",
                               " ".join(f[3:])))
        elif k == "bench-dev:":
            w, backend, rep, tool = f[0], f[1], int(f[2]), f[3]
            kv = dict(x.split("=", 1) for x in f[4:] if "=" in x)
            try:
                d = {"iops": float(kv["iops"]), "mean_us": float(kv["avg"]),
                     "p50_us": float(kv["p50"]), "p99_us": float(kv["p99"])}
            except (KeyError, ValueError):
                st["problems"].append("%s vCPU(s): device side %s %s %s: %s"
                                      % (shape, w, backend, tool, v))
                continue
            st["dev"].setdefault((shape, backend, w, tool), {})[rep] = d
        elif k == "stat":
            marks[(f[0], f[1])] = (float(f[2]), float(f[3]), [float(x) for x in f[4:]])
        elif k in ("bench-err:", "bench-dmesg:", "host-dmesg", "qemu:"):
            st["messages"].append("%s vCPU(s): %s" % (shape, line))
        elif k == "bench-order:":
            st["orders"].setdefault(shape, []).append(v)
    hz = float(info.get("clk_tck", 100))
    for (s, backend, disk, job), reps in st["runs"].items():
        if s != shape:
            continue
        for rep, r in reps.items():
            if disk == "host-local":
                c = cpu_host.get((job, backend, rep))
                if c and r["ios"] > 0:
                    r["cpu_us_per_io"] = c[0] / hz * 1e6 / r["ios"]
                continue
            key = "%s@%s@%s/%d" % (job, disk, backend, rep)
            a, b = marks.get(("start", key)), marks.get(("end", key))
            if not a or not b or b[0] <= a[0]:
                continue
            ios = b[0] - a[0]
            d = [y - x for x, y in zip(a[2], b[2])]
            r["cpu_us_per_io"] = d[I_BUSY] / hz * 1e6 / ios
            r["kvm_exits_per_io"] = d[0] / ios
            if disk == "mdev":
                r["worker_us_per_io"] = d[I_MCPU] / hz * 1e6 / ios
                r["counters_per_io"] = {k: d[I_MDEV + i] / ios
                                        for i, k in enumerate(MDEV_KEYS)
                                        if I_MDEV + i < len(d)}


def fmt(v, unit=""):
    if v is None:
        return "n/a"
    if v >= 100:
        return "%.0f%s" % (v, unit)
    if v >= 10:
        return "%.1f%s" % (v, unit)
    return "%.2f%s" % (v, unit)


def rng(v):
    """median (min-max) of a list of ratios."""
    v = [x for x in v if x is not None]
    if not v:
        return "n/a"
    if len(v) == 1:
        return "%.2f" % v[0]
    return "%.2f (%.2f-%.2f)" % (median(v), min(v), max(v))


def table(rows, out):
    w = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        out.append("  " + r[0].ljust(w[0]) + "".join(
            "  " + c.rjust(w[i + 1]) for i, c in enumerate(r[1:])))


def main():
    d = sys.argv[1]
    st = {"info": {}, "runs": {}, "devs": {}, "problems": [], "skipped": set(),
          "dev": {}, "messages": [], "orders": {}}
    run = {}
    for line in open(os.path.join(d, "run-info.txt")):
        k, _, v = line.rstrip("\n").partition(" ")
        run[k] = v
    shapes = []
    for name in sorted(os.listdir(d), reverse=True):
        if name.startswith("raw-") and name.endswith(".txt"):
            shape = int(name[4:-4])
            shapes.append(shape)
            with open(os.path.join(d, name), errors="replace") as f:
                parse(f, shape, st)
            if not any(k[0] == shape and k[2] != "host-local" for k in st["runs"]):
                lines = guest_lines(os.path.join(d, "console-%d.log" % shape))
                if any(line.startswith("bench: ") for line in lines):
                    st["problems"].append(
                        "%s vCPU(s): the host VM printed no results; the guest's cells "
                        "are taken from its console, without CPU figures or counters"
                        % shape)
                    parse(lines, shape, st)
    if not shapes:
        print("bench-report.py: no raw-*.txt in %s" % d, file=sys.stderr)
        return 1
    runs = st["runs"]
    if not runs:
        st["problems"].append("no fio results at all")
    jobs = []
    for s in shapes:
        for j in st["info"][s].get("jobs", "").split():
            if j not in jobs:
                jobs.append(j)
    backends = [b for b in ("file", "null_blk")
                if any(k[1] == b for k in runs)]
    reps = max([max(r) for r in runs.values()] or [0])
    first = st["info"][shapes[0]]
    out = []
    out.append("nvmet-mdev benchmark, %s, on %s" % (run.get("date", "?"), run.get("machine", "?")))
    for s in shapes:
        i = st["info"][s]
        out.append("  host VM %d vCPU(s), run %s: kernel %s, MemTotal %.1f GiB,"
                   % (s, i.get("date", "?"), i.get("host_kernel", "?"),
                      int(i.get("host_mem_kb", 0)) / 2**20))
        out.append("    %s" % i.get("qemu_version", "?"))
        out.append("    guest: %s vCPU(s), kernel %s, %s; run %s s (status %s)"
                   % (i.get("guest_cpus", "?"), i.get("guest_kernel", "?"),
                      i.get("guest_fio", "?"), i.get("guest_seconds", "?"),
                      i.get("guest_status", "?")))
        if i.get("mdev_attrs"):
            out.append("    mdev:%s" % i["mdev_attrs"].split("mdev_attrs")[-1])
    out.append("  disks, each over each backend (a file on the host VM's tmpfs, "
               "%s MiB, written in full;" % first.get("size_mb", "?"))
    out.append("  and a null_blk device with inline completions): mdev (nvmet namespace, "
               "mdev port, vfio-pci),")
    out.append("  qemu-nvme (-device nvme,ioeventfd=on), virtio-blk (modern, "
               "iothread-vq-mapping over one")
    out.append("  iothread per host vCPU), vhost-user-blk (qemu-storage-daemon), "
               "vhost-scsi (LIO), host-local")
    out.append("  (fio in the host VM on the backend itself); QEMU's drives "
               "cache=none,aio=io_uring.")
    out.append("  fio io_uring direct=1, %s s ramp + %s s measured (host-local: "
               "%s s, no ramp), %d repeat(s),"
               % (first.get("ramp", "?"), first.get("runtime", "?"),
                  int(first.get("ramp", 0)) + int(first.get("runtime", 0)), reps))
    out.append("  the guest's disks in an order shuffled per repeat; "
               "polled jobs use nvme.poll_queues=1,")
    out.append("  virtio_blk.poll_queues=1 and fio hipri.  Each cell is the median "
               "of the repeats; each ratio")
    out.append("  the median of the per-repeat ratios (their range in brackets).  "
               "CPU/IO is the host VM's")
    out.append("  busy time over the job divided by its I/Os, in us.")
    out.append("  make bench: %s s wall; machine at start: %s; at end: %s"
               % (run.get("wall_seconds", "?"), run.get("load_start", "?"),
                  run.get("load_end", "?")))

    def vals(s, b, disk, job, m):
        r = runs.get((s, b, disk, job), {})
        return [r[k].get(m) if k in r else None for k in range(1, reps + 1)]

    def med(s, b, disk, job, m):
        return median([v for v in vals(s, b, disk, job, m) if v is not None])

    def best_peer(s, b, job, m, lower=False):
        """Per repeat: the best peer's value and name."""
        res = []
        for k in range(1, reps + 1):
            c = []
            for p in PEERS:
                r = runs.get((s, b, p, job), {}).get(k)
                if r and r.get(m) is not None and r["error"] == "0":
                    c.append((r[m], p))
            res.append((min(c) if lower else max(c)) if c else None)
        return res

    def ratio(s, b, job, m, lower=False, other=None):
        a = vals(s, b, "mdev", job, m)
        if other:
            o = vals(s, b, other, job, m)
        else:
            o = [x[0] if x else None for x in best_peer(s, b, job, m, lower)]
        return [x / y if x is not None and y else None for x, y in zip(a, o)]

    cells_json = []
    targets = {"irq": [], "p99": [], "cpu": [], "poll": [], "one": []}
    for s in shapes:
        for b in backends:
            out.append("")
            out.append("== host VM %d vCPU(s), backend %s" % (s, b))
            rows = [["job / disk", "IOPS", "MiB/s", "mean us", "p50 us", "p99 us",
                     "CPU/IO", "worker/IO"]]
            for job in jobs:
                for disk in DISKS:
                    if (s, b, disk, job) not in runs:
                        continue
                    rows.append(["%s %s" % (job, disk),
                                 fmt(med(s, b, disk, job, "iops")),
                                 fmt(med(s, b, disk, job, "bw") / 2**20),
                                 fmt(med(s, b, disk, job, "mean_us")),
                                 fmt(med(s, b, disk, job, "p50_us")),
                                 fmt(med(s, b, disk, job, "p99_us")),
                                 fmt(med(s, b, disk, job, "cpu_us_per_io")),
                                 fmt(med(s, b, disk, job, "worker_us_per_io"))])
                    c = {"job": job, "disk": disk, "backend": b, "host_vcpus": s}
                    for m in ("iops", "mean_us", "p50_us", "p99_us", "cpu_us_per_io",
                              "worker_us_per_io", "kvm_exits_per_io"):
                        v = vals(s, b, disk, job, m)
                        if any(x is not None for x in v):
                            c[m] = v
                    cp = [runs[(s, b, disk, job)].get(k, {}).get("counters_per_io")
                          for k in range(1, reps + 1)]
                    if any(cp):
                        c["counters_per_io"] = cp
                    cells_json.append(c)
            if len(rows) > 1:
                table(rows, out)
            out.append("")
            rows = [["mdev vs", "IOPS/best peer", "best peer", "IOPS/host-local",
                     "p99/best peer", "CPU/IO/best peer"]]
            for job in jobs:
                if (s, b, "mdev", job) not in runs:
                    continue
                bp = best_peer(s, b, job, "iops")
                names = sorted({x[1] for x in bp if x})
                ri = ratio(s, b, job, "iops")
                rp = ratio(s, b, job, "p99_us", lower=True)
                rc = ratio(s, b, job, "cpu_us_per_io", lower=True)
                rh = ratio(s, b, job, "iops", other="host-local")
                rows.append([job, rng(ri), ",".join(names) or "n/a", rng(rh),
                             rng(rp), rng(rc)])
                mi = median([x for x in ri if x is not None])
                mp = median([x for x in rp if x is not None])
                mc = median([x for x in rc if x is not None])
                where = "%d vCPU %s %s" % (s, b, job)
                if "poll" in job:
                    mh = median([x for x in rh if x is not None])
                    if mh is not None:
                        targets["poll"].append((where, mh))
                elif mi is not None:
                    targets["irq"].append((where, mi))
                if mp is not None:
                    targets["p99"].append((where, mp))
                if mc is not None:
                    targets["cpu"].append((where, mc))
                if s == 1 and mi is not None:
                    targets["one"].append((where, mi))
            if len(rows) > 1:
                table(rows, out)
            rows = [["mdev per I/O", "commands", "irqs", "cqe/irq", "traps",
                     "db faults", "wakeups", "sleeps", "pin hit", "pin miss",
                     "KVM exits"]]
            for job in jobs:
                r = runs.get((s, b, "mdev", job), {})
                cs = [x["counters_per_io"] for x in r.values() if x.get("counters_per_io")]
                if not cs:
                    continue

                def cm(key):
                    return median([c.get(key, 0) for c in cs])
                irq = cm("interrupts")
                rows.append([job, fmt(cm("commands")), fmt(irq),
                             fmt(cm("completions") / irq if irq else None),
                             fmt(cm("trapped_doorbell_writes")),
                             fmt(cm("doorbell_faults")), fmt(cm("wakeups")),
                             fmt(cm("sleeps")), fmt(cm("pin_cache_hits")),
                             fmt(cm("pin_cache_misses")),
                             fmt(med(s, b, "mdev", job, "kvm_exits_per_io"))])
            if len(rows) > 1:
                out.append("")
                table(rows, out)

    dev_json = []
    if st["dev"]:
        out.append("")
        out.append("== the device side alone: the client's perf tool (a polling user "
                   "space driver,")
        out.append("   one queue) on the mdev vs fio on the same backend, both in the "
                   "host VM")
        rows = [["vCPUs backend job", "perf IOPS", "fio IOPS", "perf/fio",
                 "perf p50/p99 us", "fio p50/p99 us"]]
        names = {"qd1r": "4k randread QD1", "qd32r": "4k randread QD32",
                 "qd32w": "4k randwrite QD32"}
        for s in shapes:
            for b in backends:
                for w in ("qd1r", "qd32r", "qd32w"):
                    p = st["dev"].get((s, b, w, "perf"), {})
                    f = st["dev"].get((s, b, w, "fio"), {})
                    if not p or not f:
                        continue
                    rr = [p[k]["iops"] / f[k]["iops"] for k in p
                          if k in f and f[k]["iops"] > 0]
                    rows.append(["%d %s %s" % (s, b, names[w]),
                                 fmt(median([x["iops"] for x in p.values()])),
                                 fmt(median([x["iops"] for x in f.values()])), rng(rr),
                                 "%s/%s" % (fmt(median([x["p50_us"] for x in p.values()])),
                                            fmt(median([x["p99_us"] for x in p.values()]))),
                                 "%s/%s" % (fmt(median([x["p50_us"] for x in f.values()])),
                                            fmt(median([x["p99_us"] for x in f.values()])))])
                    dev_json.append({"host_vcpus": s, "backend": b, "job": names[w],
                                     "perf_iops": [p.get(k, {}).get("iops")
                                                   for k in range(1, reps + 1)],
                                     "fio_iops": [f.get(k, {}).get("iops")
                                                  for k in range(1, reps + 1)]})
        if len(rows) > 1:
            table(rows, out)

    out.append("")
    out.append("== issue targets (medians of the repeats)")

    def verdict(name, items, ok, want):
        if not items:
            out.append("  %s: not measured" % name)
            return
        bad = [(w, v) for w, v in items if not ok(v)]
        out.append("  %s: %s (%d of %d cells)" % (name, "met" if not bad else "NOT met",
                                                 len(items) - len(bad), len(items)))
        for w, v in bad:
            out.append("      %s: %.2f, want %s" % (w, v, want))
    verdict("polled 4k QD1 >= 0.5x host-local", targets["poll"], lambda v: v >= 0.5,
            ">= 0.5")
    verdict("interrupt-driven IOPS >= 1.5x best peer", targets["irq"],
            lambda v: v >= 1.5, ">= 1.5")
    p99 = targets["p99"]
    good = sum(1 for _, v in p99 if v <= 1)
    out.append("  p99 at or below the best peer's: %d of %d cells (want 8 of 10)"
               % (good, len(p99)))
    verdict("CPU per I/O <= best peer", targets["cpu"], lambda v: v <= 1, "<= 1")
    verdict("1-vCPU host: IOPS >= best peer", targets["one"], lambda v: v >= 1, ">= 1")

    if st["skipped"]:
        out.append("")
        out.append("not run:")
        for s, job, disk, b, why in sorted(st["skipped"]):
            out.append("  %d vCPU(s) %s %s %s: %s" % (s, job, disk, b, why))
    if st["problems"] or st["messages"]:
        out.append("")
        out.append("problems and messages:")
        for m in st["problems"] + st["messages"][:40]:
            out.append("  " + m)
    text = "\n".join(out) + "\n"
    with open(os.path.join(d, "latest.txt"), "w") as f:
        f.write(text)
    print(text, end="")
    kernels = sorted({st["info"][s].get("host_kernel", "?") for s in shapes})
    js = {"kernel": " ".join(kernels), "repeats": reps,
          "date": run.get("date"), "machine": run.get("machine"),
          "shapes": {str(s): {k: v for k, v in st["info"][s].items()} for s in shapes},
          "cells": cells_json, "device_side": dev_json,
          "skipped": [{"host_vcpus": s, "job": j, "disk": dk, "backend": b, "why": w}
                      for s, j, dk, b, w in sorted(st["skipped"])],
          "problems": st["problems"]}
    with open(os.path.join(d, "latest.json"), "w") as f:
        json.dump(js, f, indent=1)
        f.write("\n")
    return 1 if st["problems"] or run.get("status", "0") != "0" else 0


if __name__ == "__main__":
    sys.exit(main())
