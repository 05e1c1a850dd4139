#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The harness itself: a command's status comes back from the VM, and a kernel
# WARNING (provoked with LKDTM) fails the run even though the command passed;
# the splat scanner on recorded log lines (RCU stall forms); and lib.sh's
# helpers that change nvmet, mdev or libvirt state refuse outside a test VM.
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/lib.sh"

# The scanner itself, on recorded kernel log lines (no VM): each splat form
# is reported as that one line, harmless lines and test output are not.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# scan_says DESC EXPECTED LINE...: the scanner's report on the LINEs.
scan_says() {
	local desc=$1 want=$2 got
	shift 2
	printf '%s\n' "$@" > "$tmp/log"
	got=$("$here/splat-scan.sh" "$tmp/log")
	if [ "$got" != "$want" ]; then
		echo "# $desc: expected [${want//$'\n'/ | }], got [${got//$'\n'/ | }]"
		return 1
	fi
}

# RCU stall forms of kernel/rcu/tree_stall.h, tree_exp.h and tasks.h, as a
# 1-vCPU VM prints them (the first line of each report), one a line.
mapfile -t stalls < "$here/tests/host-splat-detector.stalls" || die "stall samples"
for l in "${stalls[@]}"; do
	tap_ok "splat-scan reports: ${l#\[*\] }" scan_says "stall" "$l" "$l"
done
# Harmless RCU boot lines, the other lines of a stall report, and splat
# words in test output (no printk timestamp).
mapfile -t harmless < "$here/tests/host-splat-detector.harmless" ||
	die "harmless samples"
tap_ok "splat-scan ignores harmless RCU lines and test output" scan_says "harmless" "" \
	"${harmless[@]}"
tap_ok "splat-scan reports every stall line of a mixed log once" scan_says "mixed" \
	"$(printf '%s\n' "${stalls[@]}" | sort -u)" \
	'[    0.000000] rcu: Preemptible hierarchical RCU implementation.' \
	"${stalls[@]}" "${stalls[@]}" \
	'# rcu: INFO: rcu_preempt self-detected stall on CPU'

# Here, outside any VM, the helpers that change the machine's state refuse,
# say so and touch nothing (make_subsys would create its backing file
# first).
# refused HELPER [ARGS]: HELPER fails with lib.sh's refusal.
refused() {
	local out

	out=$(bash -c '. "$1/lib.sh"; shift; "$@"' _ "$here" "$@" 2>&1) && return 1
	[[ $out == *"lib.sh: $1 refused: not in a test VM"* ]] ||
		{ echo "# $1: $out"; return 1; }
}
for h in teardown_nvmet start_libvirtd "create_mdev 1" \
	 "remove_mdev $(cat /proc/sys/kernel/random/uuid)" \
	 "make_port 1" "link_subsys 1 nqn.2026-11.org.example:x" \
	 "unlink_subsys 1 nqn.2026-11.org.example:x"; do
	# shellcheck disable=SC2086 # the helper and its arguments
	tap_ok "outside a test VM, lib.sh refuses ${h%% *}" refused $h
done
tap_ok "outside a test VM, lib.sh refuses setup_default and creates no file" \
	eval 'refused setup_default 1 nqn.2026-11.org.example:x "$tmp/backing" &&
	      [ ! -e "$tmp/backing" ]'

"$here/vm.sh" --mem 1G --timeout 300 -- true
tap_ok "a passing command passes" test $? -eq 0

"$here/vm.sh" --mem 1G --timeout 300 -- bash -c ". '$here/lib.sh'; in_test_vm"
tap_ok "in the test VM, lib.sh knows it is there" test $? -eq 0

"$here/vm.sh" --mem 1G --timeout 300 -- sh -c 'exit 3'
tap_ok "a failing command's status comes back" test $? -eq 3

"$here/vm.sh" --mem 1G --timeout 300 -- sh -c \
	'echo WARNING > /sys/kernel/debug/provoke-crash/DIRECT; exit 0'
tap_ok "an LKDTM WARNING fails the run" test $? -eq 99

"$here/vm.sh" --mem 1G --timeout 300 -- sh -c 'echo "WARNING: BUG: KASAN Oops"; exit 0'
tap_ok "splat words in test output are not kernel splats" test $? -eq 0
tap_done
