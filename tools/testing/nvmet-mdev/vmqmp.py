# SPDX-License-Identifier: GPL-2.0
"""QEMU's QMP monitor, for the harness's VM helpers (wakeup-watch.py,
vm-state.py): a fresh connection per call, as QEMU serves one at a time."""
import json
import socket


def qmp(path, commands, timeout=10):
    """Run commands (name, arguments) on a fresh QMP connection: their
    return values, '' for a command that failed."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(path)
        f = s.makefile('rw')
        f.readline()                                # greeting
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
                    break                           # skip events
            out.append(r.get('return', ''))
    finally:
        s.close()
    return out[1:]


def hmp(cmd, cpu=None):
    """An HMP command, on vCPU cpu if given (HMP's "cpu N" does not last
    across human-monitor-command calls; their cpu-index argument does)."""
    args = {'command-line': cmd}
    if cpu is not None:
        args['cpu-index'] = cpu
    return ('human-monitor-command', args)
