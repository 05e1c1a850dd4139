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
# RCU stall forms (kernel/rcu/tree_stall.h, tree_exp.h, tasks.h): on one CPU
# a stall is "self-detected"; expedited and CSD-lock variants; the Tasks RCU
# stall, its pre-stall notes (a grace period 10 s old, an exiting task stuck)
# and the starved grace-period kthread.
re+='INFO: [a-z_]+ (self-)?detected (expedited )?stall|'
re+='rcu_tasks detected stalls|grace period number [0-9]+ \(since boot\).* jiffies old|'
re+='Please check any exiting tasks stuck|kthread starved for [0-9]+ jiffies|'
re+='kthread timer wakeup didn.t happen|'
re+='RCU stall|INFO: task .* blocked for more than|soft lockup|hard LOCKUP|'
re+='list_add corruption|list_del corruption|ODEBUG:|unreferenced object|'
re+='Kernel panic|workqueue lockup|refcount_t:|kfence|segfault at .* in (qemu|fio))'
for f in "$@"; do
	[ -r "$f" ] || continue
	grep -aE '^\[ *[0-9]+\.[0-9]+\]' "$f" | grep -aE "$re"
done | sed 's/\r$//' | sort -u | head -40
