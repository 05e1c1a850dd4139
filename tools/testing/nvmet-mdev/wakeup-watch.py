#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Watch a TCG host VM for QEMU 7.2's lost wake-up and recover from it.

Usage: wakeup-watch.py QMP_SOCKET

QEMU 7.2's TCG can lose the request that wakes a halted vCPU for an APIC
interrupt (most likely: its SVM emulation updates cpu->interrupt_request
without atomics on the vCPU thread while the main loop thread posts the
APIC's CPU_INTERRUPT_POLL; qemu-devel patches of 2025 make them atomic).  With
nested guests running, about one 12-two-guests run in four or five froze
for good: the vCPU halted with IF=1 and the expired LAPIC timer's vector
pending in IRR, deliverable (PPR 0x10), and QEMU's vCPU thread asleep.  An
injected NMI stayed pending; any new device interrupt woke it at once
and the kernel went on.

That state cannot exist on real hardware: a halted CPU with interrupts
enabled takes a deliverable pending interrupt.  So every second this reads
"info registers" and "info lapic"; when two looks in a row see the same
halted vCPU with IF set, an empty ISR and the same vectors pending in IRR,
it says so on stderr and sends an ACPI power button event (a device
interrupt the kernel just acknowledges: no user space here acts on it),
which makes QEMU look at the APIC again.  Nothing else is touched: the
kernel's own checks (soft lockup, RCU stall, hung task) still report
whatever they see.
"""
import json
import os
import re
import socket
import sys
import time


def qmp(path, commands):
    """Run commands (name, arguments) on a fresh QMP connection."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(path)
    f = s.makefile('rw')
    f.readline()                                    # greeting
    out = []
    for name, args in [('qmp_capabilities', None)] + commands:
        msg = {'execute': name}
        if args:
            msg['arguments'] = args
        f.write(json.dumps(msg) + '\n')
        f.flush()
        while True:
            r = json.loads(f.readline())
            if 'return' in r or 'error' in r:
                break                               # skip events
        out.append(r.get('return'))
    s.close()
    return out[1:]


def hmp(cmd):
    return ('human-monitor-command', {'command-line': cmd})


def frozen_state(path):
    regs, lapic = qmp(path, [hmp('info registers'), hmp('info lapic')])
    m = re.search(r'RIP=([0-9a-f]+) RFL=([0-9a-f]+).*?HLT=([01])', regs, re.S)
    irr = re.search(r'^IRR[ \t]*(.*)$', lapic, re.M)
    isr = re.search(r'^ISR[ \t]*(.*)$', lapic, re.M)
    if not m or not irr or not isr:
        return None
    rip, rfl, hlt = m.group(1), int(m.group(2), 16), m.group(3)
    pending = irr.group(1).strip()
    if hlt != '1' or not rfl & 0x200 or pending in ('', '(none)') or \
       isr.group(1).strip() != '(none)':
        return None
    return 'RIP=%s IRR=%s' % (rip, pending)


def main():
    path = sys.argv[1]
    for _ in range(300):                            # wait for QEMU
        if os.path.exists(path):
            break
        time.sleep(0.1)
    prev = None
    while True:
        # Well within the soft lockup threshold (20 s).
        time.sleep(1)
        try:
            cur = frozen_state(path)
            if cur and cur == prev:
                sys.stderr.write('vm.sh: QEMU lost a wake-up (halted vCPU, IF=1, %s pending); '
                                 'sending a device interrupt (see wakeup-watch.py)\n' % cur)
                sys.stderr.flush()
                qmp(path, [('system_powerdown', None)])
                cur = None
            prev = cur
        except (OSError, ValueError):
            return                                  # QEMU is gone


if __name__ == '__main__':
    main()
