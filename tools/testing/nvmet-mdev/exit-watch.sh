#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Watch a TCG host VM's QEMU for an exit that never comes.
#
#   exit-watch.sh DONE PIDFILE RECORD
#
# The VM's init writes the kernel log to DONE (vm.sh's run directory, over
# 9p) right before it powers the VM off, and QEMU then exits within a
# second or two.  If QEMU (the process in PIDFILE) is still there GRACE
# seconds (NVMET_MDEV_EXIT_GRACE, default 60) after DONE last grew, this
# prints its threads (name, state, kernel wait channel) and their
# backtraces (gdb; QEMU's binary exports its functions' names) on
# standard error, writes to RECORD where its main thread was, and kills
# it:
#
#   cleanup   the main thread is in qemu_cleanup(): QEMU took the guest's
#             power-off, left its main loop and hangs in its own teardown
#             (a CI run of 2026-12-05 lost 18 min to one such hang after a
#             clean power-off, with the monitor silent): the emulator's
#             fault, after the VM under test had finished
#   running   anywhere else: QEMU never acted on a power-off (the kernel
#             may not have got as far as asking for one)
#
# A file, not the console: a test that prints a nested guest's console
# as it is shows that guest's "reboot: Power down" line in the host VM's.
#
# vm.sh tells the two apart (see there).  It runs beside the host VM, on
# the machine, where a program's start costs little.
set -uo pipefail

done_file=$1 pidfile=$2 record=$3
grace=${NVMET_MDEV_EXIT_GRACE:-60}
pid=

# QEMU writes its pid file at start-up, late on a loaded machine: wait for
# it as long as vm.sh runs (it ends this watch once QEMU has gone).
until { read -r pid < "$pidfile"; } 2>/dev/null && [ -n "$pid" ]; do
	kill -0 "$PPID" 2>/dev/null || exit 0
	sleep 0.5
done

# Until DONE has stopped growing for GRACE seconds (it may take a while
# to write on a loaded machine), or QEMU has gone.
size=-1 since=
while kill -0 "$pid" 2>/dev/null; do
	sleep 1
	now=$(stat -c %s "$done_file" 2>/dev/null) || continue
	if [ "$now" != "$size" ]; then
		size=$now since=$SECONDS
	elif [ $((SECONDS - since)) -ge "$grace" ]; then
		break
	fi
done
kill -0 "$pid" 2>/dev/null || exit 0

{
	echo "vm.sh: QEMU (pid $pid) is still running $grace s after the VM's" \
		"init powered it off; its threads:"
	for t in /proc/"$pid"/task/*; do
		# The state follows the name in stat, which may hold spaces
		# ("CPU 0/TCG").
		st=$(sed 's/.*) //; s/ .*//' "$t/stat" 2>/dev/null)
		printf '%s %s state=%s wchan=%s\n' "${t##*/}" \
			"$(cat "$t/comm" 2>/dev/null)" "$st" \
			"$(cat "$t/wchan" 2>/dev/null)"
	done
	timeout 120 gdb -p "$pid" -batch -nx -ex 'set pagination off' \
		-ex 'thread apply all bt 40' 2>&1 |
		grep -E '^(Thread |#)' > "$record.bt"
	cat "$record.bt"
} 2>&1 | sed 's/^/vm.sh:   /; 1s/^vm.sh:   //' >&2

# The main thread's backtrace: gdb's thread whose LWP is QEMU's pid.
awk -v lwp="(LWP $pid)" '
	/^Thread / { main = index($0, lwp) > 0; next }
	main && / qemu_cleanup / { found = 1 }
	END { print found ? "cleanup" : "running" }' "$record.bt" > "$record"
rm -f "$record.bt"
kill -KILL "$pid" 2>/dev/null
exit 0
