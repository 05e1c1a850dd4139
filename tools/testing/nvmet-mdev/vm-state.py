#!/usr/bin/env -S python3 -S
# SPDX-License-Identifier: GPL-2.0
"""Say where a test VM's vCPUs are, from its QMP monitor.

Usage: vm-state.py [--after SECS] QMP_SOCKET [SYSTEM_MAP [PREFIX]]

With --after it first sleeps SECS (vm.sh starts it beside QEMU, to look
just before the VM's timeout kills it) and says nothing if QEMU is gone by
then.  For each vCPU it prints one line with RIP (as a symbol, given the
kernel's System.map), whether it is halted and takes interrupts, and the
pending (IRR) and in-service (ISR) vectors of its local APIC, and a second
line with the kernel text addresses found in the 128 words above its stack
pointer: a stack scan (like the kernel's "?" entries), not a backtrace,
and, when that finds any, a third line with the exception and interrupt
frames of kernel code on it (RIP and RFLAGS: whether the interrupted code
had interrupts enabled).
That is enough to tell a vCPU that waits (halted, IF=1, nothing pending)
from one that spins, one that takes an interrupt storm, or one that waits
for an interrupt that never comes.
"""
import bisect
import re
import sys
import time

from vmqmp import hmp, qmp


class Symbols:
    """Kernel text symbols from a System.map."""

    def __init__(self, path):
        self.addrs, self.names = [], []
        self.start = self.end = 0
        try:
            with open(path) as f:
                syms = []
                for line in f:
                    fields = line.split()
                    if len(fields) != 3:
                        continue
                    addr = int(fields[0], 16)
                    if fields[2] == '_stext':
                        self.start = addr
                    elif fields[2] == '_etext':
                        self.end = addr
                    if fields[1] in 'tT':
                        syms.append((addr, fields[2]))
        except (OSError, ValueError):
            return
        syms.sort()
        self.addrs = [a for a, _ in syms]
        self.names = [n for _, n in syms]

    def is_text(self, addr):
        return self.start <= addr < self.end

    def name(self, addr):
        i = bisect.bisect_right(self.addrs, addr) - 1
        if i < 0 or not self.is_text(addr):
            return '%x' % addr
        return '%s+%#x' % (self.names[i], addr - self.addrs[i])


def main():
    args = sys.argv[1:]
    after = None
    if args[:1] == ['--after']:
        after, args = float(args[1]), args[2:]
    if not args:
        sys.exit(__doc__.split('\n\n')[1])
    path = args[0]
    syms = Symbols(args[1] if len(args) > 1 else '')
    prefix = args[2] if len(args) > 2 else 'vm-state: '
    if after:
        time.sleep(after)
    try:
        lines = []
        for c in qmp(path, [('query-cpus-fast', None)], timeout=30)[0]:
            lines += describe(path, c['cpu-index'], syms)
    except (OSError, ValueError, KeyError) as e:
        if after is not None:
            return                                  # QEMU is gone
        sys.exit('vm-state: %s: %s' % (path, e))
    for line in lines:
        print(prefix + line, flush=True)


def describe(path, cpu, syms):
    """Two lines about a vCPU."""
    regs, lapic = qmp(path, [hmp('info registers', cpu),
                             hmp('info lapic', cpu)], timeout=30)
    m = re.search(r'RIP=([0-9a-f]+) RFL=([0-9a-f]+).*?HLT=([01])', regs, re.S)
    sp = re.search(r'RSP=([0-9a-f]+)', regs)
    if not m or not sp:
        return ['cpu %d: no registers (%s)' % (cpu, regs.strip()[:60])]
    rip, rfl, hlt = int(m.group(1), 16), int(m.group(2), 16), m.group(3)
    irr = re.search(r'^IRR[ \t]*(.*)$', lapic, re.M)
    isr = re.search(r'^ISR[ \t]*(.*)$', lapic, re.M)
    lines = ['cpu %d: RIP %s HLT=%s IF=%d IRR %s ISR %s' % (
        cpu, syms.name(rip), hlt, bool(rfl & 0x200),
        irr.group(1).strip() if irr else '?',
        isr.group(1).strip() if isr else '?')]
    words = qmp(path, [hmp('x /128gx %#x' % int(sp.group(1), 16), cpu)],
                timeout=30)[0]
    vals = [int(w, 16) for w in re.findall(r'0x([0-9a-f]{16})', words)]
    found = [syms.name(v) for v in vals if syms.is_text(v)]
    lines.append('cpu %d: stack scan: %s' %
                 (cpu, ' '.join(found[:24]) or '(no kernel text)'))
    # Hardware exception or interrupt frames of kernel code: RIP, CS,
    # RFLAGS, RSP, SS.  The interrupted code's IF says whether it could
    # take an interrupt at all.
    frames = ['%s RFLAGS=%x IF=%d' % (syms.name(v[0]), v[2],
                                      bool(v[2] & 0x200))
              for v in zip(vals, vals[1:], vals[2:], vals[3:], vals[4:])
              if syms.is_text(v[0]) and v[1] == 0x10 and v[4] == 0x18 and
              v[2] & 0x2 and v[2] < 0x400000]
    if frames:
        lines.append('cpu %d: kernel frames on the stack: %s' %
                     (cpu, '; '.join(frames[:8])))
    return lines


if __name__ == '__main__':
    main()
