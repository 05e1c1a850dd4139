#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Live-migrate a nested KVM guest with an mdev between two mdevs of one
subsystem, back and forth, with plain QEMUs and QMP (libvirt refuses a
migration to the host it runs on).

  migrate.py RUN KERNEL INITRD UUID1 UUID2 BACKING

RUN a directory for the QEMUs' files, KERNEL and INITRD the guest's (see
tests/guest/migrate-init.sh), UUID1 and UUID2 the mdevs, BACKING the
namespace's backing file (the host's "STOP" goes into its last 4 KiB).

The guest boots on UUID1 (container binding), and once its fio runs it
moves to UUID2 (iommufd), back to UUID1 (container), then a migration to
UUID2 is cancelled halfway (bandwidth capped: the source must run on),
and a last one to UUID2 (container) completes.  Then the host says STOP
and the guest reports its checks and powers off.

Output: "check: ok|fail: ..." lines (lib.sh's guest_checks makes them
TAP), "# ..." comments with each migration's total time, downtime, the
VFIO data, the pages the device reported dirty (QEMU's
vfio_get_dirty_bitmap trace, per report) and the commands in flight its
stop waited for (the mdev's counters), and the guest's console.
"""
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmqmp import qmp  # noqa: E402

MEM = '512M'

QBOOT = '/usr/share/qemu/qboot.rom'


def say(msg):
    print('# ' + msg, flush=True)


def check(ok, desc):
    print('check: %s: %s' % ('ok' if ok else 'fail', desc), flush=True)
    return ok


class Qemu:
    def __init__(self, run, name, kernel, initrd, uuid, iommufd, incoming):
        self.name = name
        self.dir = os.path.join(run, name)
        os.makedirs(self.dir)
        self.sock = os.path.join(self.dir, 'qmp.sock')
        self.mig = os.path.join(self.dir, 'mig.sock')
        self.console = os.path.join(self.dir, 'console')
        self.uuid = uuid
        cmdline = ('console=ttyS0 loglevel=6 panic=-1 nokaslr mitigations=off'
                   ' tsc=reliable pci=lastbus=0 nvme_core.max_retries=0'
                   ' rdinit=/init')
        dev = ('vfio-pci,sysfsdev=/sys/bus/mdev/devices/%s,id=nvme0,'
               'bus=pcie.0,addr=0x4' % uuid)
        args = ['qemu-system-x86_64', '-accel', 'kvm', '-cpu', 'qemu64',
                '-machine', 'q35,hpet=off', '-m', MEM, '-smp', '1',
                '-nodefaults', '-display', 'none', '-monitor', 'none',
                '-no-reboot', '-kernel', kernel, '-initrd', initrd,
                '-append', cmdline, '-serial', 'file:' + self.console,
                '-qmp', 'unix:%s,server=on,wait=off' % self.sock,
                '-msg', 'timestamp=on',
                '-trace', 'vfio_get_dirty_bitmap',
                '-trace', 'vm_state_notify',
                '-trace', 'migration_completion_vm_stop',
                '-trace', 'vfio_migration_set_device_state']
        if os.path.exists(QBOOT):
            args += ['-bios', QBOOT]
        if iommufd:
            args += ['-object', 'iommufd,id=iommufd0']
            dev += ',iommufd=iommufd0'
        args += ['-device', dev]
        if incoming:
            args += ['-incoming', 'unix:' + self.mig]
        self.err = open(os.path.join(self.dir, 'qemu.err'), 'w')
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL,
                                     stderr=self.err)
        end = time.time() + 120
        while not os.path.exists(self.sock) or (incoming and
                                                not os.path.exists(self.mig)):
            if self.proc.poll() is not None or time.time() > end:
                raise RuntimeError('%s: QEMU did not start' % name)
            time.sleep(0.2)

    def cmd(self, name, args=None, timeout=60):
        return qmp(self.sock, [(name, args)], timeout=timeout)[0]

    def said(self, text):
        try:
            with open(self.console, errors='replace') as f:
                return text in f.read()
        except OSError:
            return False

    def quit(self):
        if self.proc.poll() is None:
            try:
                self.cmd('quit')
            except OSError:
                pass
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.err.close()

    def stderr(self):
        with open(os.path.join(self.dir, 'qemu.err'), errors='replace') as f:
            return f.read()


def mdev_stat(uuid, name):
    try:
        with open('/sys/kernel/debug/nvmet-mdev/%s/stats' % uuid) as f:
            for line in f:
                k, v = line.split()
                if k == name:
                    return int(v)
    except OSError:
        pass
    return -1


def wait_for(what, cond, timeout, step=1.0):
    end = time.time() + timeout
    while time.time() < end:
        if cond():
            return True
        time.sleep(step)
    say('%s: not after %d s' % (what, timeout))
    return False


def migrate(src, dst, cancel=False):
    """Migrate src to dst (or cancel it halfway); the QEMU that runs the
    guest afterwards."""
    desc = '%s (%s) -> %s (%s)' % (src.name, src.uuid[:8], dst.name,
                                   dst.uuid[:8])
    dirty0 = mdev_stat(src.uuid, 'dirty_pages_reported')
    busy0 = mdev_stat(src.uuid, 'stop_waited_commands')
    if cancel:
        # 2 MiB/s: 512 MiB of RAM would take minutes.
        src.cmd('migrate-set-parameters', {'max-bandwidth': 2 << 20})
    src.cmd('migrate', {'uri': 'unix:' + dst.mig})
    if cancel:
        time.sleep(5)
        info = src.cmd('query-migrate')
        check(info.get('status') == 'active',
              'migration %s is under way before the cancel (%s)' %
              (desc, info.get('status')))
        src.cmd('migrate_cancel')
    end = time.time() + 900
    while True:
        info = src.cmd('query-migrate')
        st = info.get('status')
        if st in ('completed', 'failed', 'cancelled') or time.time() > end:
            break
        time.sleep(0.5)
    if cancel:
        src.cmd('migrate-set-parameters', {'max-bandwidth': 128 << 20})
        check(st == 'cancelled', 'migration %s cancelled (%s)' % (desc, st))
        ok = wait_for('source running', lambda: src.cmd('query-status')
                      .get('status') == 'running', 60)
        check(ok, 'the source runs on after the cancel')
        dst.quit()
        check(dst.proc.returncode is not None,
              'the destination of the cancelled migration quit')
        return src
    ram = info.get('ram', {})
    vfio = info.get('vfio', {})
    dirty = mdev_stat(src.uuid, 'dirty_pages_reported') - dirty0
    busy = mdev_stat(src.uuid, 'stop_waited_commands') - busy0
    with open('/sys/kernel/debug/nvmet-mdev/%s/stats' % src.uuid) as f:
        say('source stats: ' + ' '.join(f.read().split()))
    say('migration %s: %s, total %s ms, downtime %s ms, setup %s ms, '
        'RAM %s bytes in %s dirty syncs, VFIO device data %s bytes, '
        'the device reported %d dirty pages, its stop waited for %d '
        'commands in flight' %
        (desc, st, info.get('total-time'), info.get('downtime'),
         info.get('setup-time'), ram.get('transferred'),
         ram.get('dirty-sync-count'), vfio.get('transferred'), dirty, busy))
    if not check(st == 'completed', 'migration %s completed' % desc):
        raise RuntimeError('migration %s: %s' % (desc,
                                                 info.get('error-desc')))
    ok = wait_for('destination running', lambda: dst.cmd('query-status')
                  .get('status') == 'running', 120)
    check(ok, 'the guest runs on %s after the migration' % dst.name)
    # Each report of the device's log while QEMU copied the RAM.
    reports = [int(m) for m in re.findall(r'vfio_get_dirty_bitmap .*'
                                          r'dirty_pages=(\d+)',
                                          src.stderr())]
    say('migration %s: the device log reports: %d, dirty pages in each '
        '(non-zero): %s' % (desc, len(reports),
                            [r for r in reports if r][:40]))
    src.quit()
    return dst


def main():
    run, kernel, initrd, u1, u2, backing = sys.argv[1:7]
    qemus = []
    try:
        a = Qemu(run, 'a', kernel, initrd, u1, False, False)
        qemus.append(a)
        if not check(wait_for('fio in the guest', lambda: a.said(
                'mig: fio runs'), 1500, 2), 'the guest came up and '
                'its fio runs'):
            return
        time.sleep(5)
        b = Qemu(run, 'b', kernel, initrd, u2, True, True)
        qemus.append(b)
        cur = migrate(a, b)
        time.sleep(3)
        c = Qemu(run, 'c', kernel, initrd, u1, False, True)
        qemus.append(c)
        cur = migrate(cur, c)
        time.sleep(3)
        d = Qemu(run, 'd', kernel, initrd, u2, False, True)
        qemus.append(d)
        cur = migrate(cur, d, cancel=True)
        time.sleep(3)
        e = Qemu(run, 'e', kernel, initrd, u2, False, True)
        qemus.append(e)
        cur = migrate(cur, e)

        # Some more I/O on the last one, then stop.
        time.sleep(10)
        with open(backing, 'r+b') as f:
            f.seek(-4096, os.SEEK_END)
            f.write(b'STOP'.ljust(4096, b'\0'))
            f.flush()
            os.fsync(f.fileno())
        ok = wait_for('the guest powers off', lambda: cur.proc.poll()
                      is not None, 600, 2)
        check(ok, 'the guest finished after the host said stop')
    except RuntimeError as e:
        check(False, str(e))
    finally:
        for q in qemus:
            if q.proc.poll() is None:
                q.proc.kill()
                q.proc.wait()
        for q in qemus:
            try:
                text = open(q.console, errors='replace').read()
            except OSError:
                continue
            for line in text.splitlines():
                line = line.rstrip('\r')
                if line.startswith('check: '):
                    print(line)
                elif line.startswith('mig: '):
                    print('# %s: %s' % (q.name, line))
            for line in q.stderr().splitlines():
                if 'vfio_get_dirty_bitmap' in line:
                    continue
                print('# %s qemu: %s' % (q.name, line))


if __name__ == '__main__':
    main()
