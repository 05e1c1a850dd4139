#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Watch a TCG host VM for QEMU's lost wake-up and recover from it.

Usage: wakeup-watch.py QMP_SOCKET [SYSTEM_MAP [RECORD]]

QEMU's TCG (7.2, and 10.0.2 still) can lose the request that wakes a
halted vCPU for an APIC interrupt (most likely: its SVM emulation updates
cpu->interrupt_request without atomics on the vCPU thread while the main
loop thread posts the APIC's CPU_INTERRUPT_POLL; qemu-devel patches of 2025
make them atomic).  In 2-vCPU host VMs under 10.0.2 a call-function IPI
(vector 251) was found pending the same way.  With QEMU 7.2 and
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

The watch can be late: in a CI-like run of 2026-12-02 it recovered a
freeze (IRR=236) after which the kernel reported "soft lockup - CPU#0
stuck for 27s"; it acts within about 2 s of seeing that state, so the
frozen vCPU most likely looked different before (the timer's vector not
yet in IRR; not proven).  So with
the kernel's System.map it also reads jiffies_64 (physical memory, the
kernel is at its default address with nokaslr): a vCPU halted with IF=1
whose jiffies have not moved for 8 s is frozen too, since the soft lockup
watchdog's timer fires every 4 s on every CPU.

Each recovery also adds a line to RECORD, if given: vm.sh counts them to
tell the soft lockup of an idle CPU that such a freeze leaves behind from
a kernel's own (see vm.sh).

Some freezes do not give way.  In a 2-vCPU host VM under 10.0.2
(2026-12-06) vCPU 0 stayed halted with IF=1 and vectors 34, 236 and 251
pending through 555 power button events, a stop and cont, and an NMI
(QMP inject-nmi, which woke the other vCPU at once), while QEMU's vCPU
thread slept in qemu_wait_io_event(): QEMU saw no work for it.  A halted
CPU takes an NMI whatever its IF, unless its global interrupt flag (GIF,
SVM) is clear, which the idle loop never leaves it; that run's previous
host VM had taken a timer interrupt between KVM's CLGI and STGI, the same
flag wrong the other way.  So after GIVE_UP events in a row that did not
thaw the vCPU this says so and ends QEMU: the run fails then, with the
reason, instead of at its time limit.

And some host VMs stop without halting.  In make bench's 1-vCPU host VM
(2026-12-07) the vCPU sat for 18 minutes at one instruction, not halted,
IF=1 and the timer's vector pending, QEMU at 100% of a core, CR3 pointing
at a page of zeros: no kernel half, so neither the next instruction nor
the interrupt could be fetched, and no kernel check could report it.  So
a VM whose jiffies, once seen moving (boot is not watched), have not
moved for NO_PROGRESS_SECS while its vCPU is not halted is ended too,
after its registers are printed: nothing in the kernel ran for that long
(its timer interrupt advances jiffies every tick).
"""
import os
import re
import socket
import sys
import time

from vmqmp import hmp, qmp


START_KERNEL_MAP = 0xffffffff80000000
STUCK_SECS = 8
GIVE_UP = 30                    # events in a row without a thaw
NO_PROGRESS_SECS = 120


def jiffies_phys(sysmap):
    """Physical address of jiffies_64, from System.map, or None."""
    try:
        with open(sysmap) as f:
            for line in f:
                fields = line.split()
                if len(fields) == 3 and fields[2] == 'jiffies_64':
                    return int(fields[0], 16) - START_KERNEL_MAP
    except OSError:
        pass
    return None


def look(path, phys):
    """One look at the vCPU, as (frozen, jiffies, running), the first two
    None unless it is halted with IF=1.  frozen: 'RIP=... IRR=...' when,
    besides, its ISR is empty and vectors are pending in IRR; jiffies:
    jiffies_64 (phys known); running: (jiffies, registers) of a vCPU that
    is not halted, else None."""
    cmds = [hmp('info registers'), hmp('info lapic')]
    if phys is not None:
        cmds.append(hmp('xp /1gx %#x' % phys))
    out = qmp(path, cmds)
    jiffies = None
    if phys is not None:
        v = re.search(r':\s*(0x[0-9a-f]+)', out[2])
        jiffies = int(v.group(1), 16) if v else None
    m = re.search(r'RIP=([0-9a-f]+) RFL=([0-9a-f]+).*?HLT=([01])', out[0], re.S)
    if m and m.group(3) == '0':
        return None, None, (jiffies, out[0])
    if not m or not int(m.group(2), 16) & 0x200:
        return None, None, None
    irr = re.search(r'^IRR[ \t]*(.*)$', out[1], re.M)
    isr = re.search(r'^ISR[ \t]*(.*)$', out[1], re.M)
    if not irr or not isr or isr.group(1).strip() != '(none)':
        return None, jiffies, None
    pending = irr.group(1).strip()
    if pending in ('', '(none)'):
        return None, jiffies, None
    return 'RIP=%s IRR=%s' % (m.group(1), pending), jiffies, None


def main():
    path = sys.argv[1]
    phys = jiffies_phys(sys.argv[2]) if len(sys.argv) > 2 else None
    record = sys.argv[3] if len(sys.argv) > 3 else None
    stuck = None                                    # (jiffies, since)
    for _ in range(300):                            # wait for QEMU
        if os.path.exists(path):
            break
        time.sleep(0.1)
    prev = last_j = None
    kicks = 0                                       # in a row, no thaw
    busy = None                                     # (jiffies, since)
    ticked = None                                   # first jiffies seen
    while True:
        # Well within the soft lockup threshold (20 s).
        time.sleep(1)
        try:
            cur, j, running = look(path, phys)
            now_j = running[0] if running else j
            if ticked is None:
                ticked = now_j
            elif ticked is not True and now_j is not None and now_j != ticked:
                ticked = True                       # the kernel's timer runs
            if running is None or running[0] is None or ticked is not True:
                busy = None
            elif not busy or busy[0] != running[0]:
                busy = (running[0], time.monotonic())
            elif time.monotonic() - busy[1] >= NO_PROGRESS_SECS:
                sys.stderr.write('vm.sh: the kernel made no progress for %d s (jiffies '
                                 'stuck, the vCPU not halted; see wakeup-watch.py); '
                                 'ending the VM.  Its registers:\n%s\n'
                                 % (time.monotonic() - busy[1], running[1]))
                sys.stderr.flush()
                qmp(path, [('quit', None)])
                return
            if cur is None and (j is None or j != last_j):
                kicks = 0
            last_j = j
            why = None
            if cur and cur == prev:
                why = '%s pending' % cur
            elif j is None or not stuck or stuck[0] != j:
                stuck = (j, time.monotonic()) if j is not None else None
            elif time.monotonic() - stuck[1] >= STUCK_SECS:
                why = 'jiffies stuck at %d for %d s' % \
                    (j, time.monotonic() - stuck[1])
            if why:
                sys.stderr.write('vm.sh: QEMU lost a wake-up (halted vCPU, IF=1, %s); '
                                 'sending a device interrupt (see wakeup-watch.py)\n' % why)
                sys.stderr.flush()
                if record:
                    with open(record, 'a') as f:
                        f.write(why + '\n')
                qmp(path, [('system_powerdown', None)])
                kicks += 1
                if kicks >= GIVE_UP:
                    sys.stderr.write('vm.sh: the vCPU stayed frozen through %d device '
                                     'interrupts: an emulator fault (QEMU sees no work '
                                     'for it, see wakeup-watch.py); ending the VM\n'
                                     % kicks)
                    sys.stderr.flush()
                    qmp(path, [('quit', None)])
                    return
                cur = stuck = None
            prev = cur
        except socket.timeout:
            prev = stuck = None                     # a slow monitor: look again
        except (OSError, ValueError):
            return                                  # QEMU is gone


if __name__ == '__main__':
    main()
