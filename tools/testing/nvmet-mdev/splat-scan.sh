#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Print the kernel log lines that report a splat: BUG, WARNING, Oops, KASAN,
# UBSAN, lockdep, RCU stalls, hung tasks, soft/hard lockups, list or object
# debugging reports, kmemleak.  Only kernel log lines are looked at (console
# lines with a printk timestamp, and dmesg dumps), so test output that merely
# mentions these words does not count.
#
# Usage: splat-scan.sh LOGFILE...   (missing files are ignored)
re='(BUG:|WARNING:|Oops|general protection fault|kernel BUG at|KASAN|UBSAN|'
re+='possible circular locking|possible recursive locking|inconsistent lock state|'
re+='DEBUG_LOCKS_WARN_ON|bad unlock balance|possible irq lock inversion|'
re+='lock held when returning|suspicious RCU usage|rcu_.* detected stalls|'
re+='RCU stall|INFO: task .* blocked for more than|soft lockup|hard LOCKUP|'
re+='list_add corruption|list_del corruption|ODEBUG:|unreferenced object|'
re+='Kernel panic|workqueue lockup|refcount_t:|kfence|segfault at .* in (qemu|fio))'
for f in "$@"; do
	[ -r "$f" ] || continue
	grep -aE '^\[ *[0-9]+\.[0-9]+\]' "$f" | grep -aE "$re"
done | sed 's/\r$//' | sort -u | head -40
