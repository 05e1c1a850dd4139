#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Run the nvmet-mdev tests and report TAP.
#
#   run-tests.sh [NAME...]     (default: every tests/*.sh, in name order)
#
# tests/NAME.sh runs inside a fresh host VM (vm.sh), one boot per test, so a
# splat is charged to the test that caused it.  tests/host-*.sh run here,
# outside any VM (they drive vm.sh themselves).
#
# A test reports either one result (its exit status: 0 pass, 4 skip, other
# fail) or several, as TAP lines "ok N desc" / "not ok N desc" [# SKIP] of
# its own; each of those counts.  A test whose status is a failure (or a VM
# that died, or a splat) with no failing line of its own counts as one more
# failure.  The last line is "N passed, N failed, N skipped".
#
# A host VM has the vCPUs its test's "# smp: N" line asks for, or else
# NVMET_MDEV_TEST_SMP, or else vm.sh's default.
#
# Tests run NVMET_MDEV_TEST_JOBS at a time (default: 2 on a machine with two
# or more CPUs; each 1-vCPU TCG VM keeps one CPU busy), those that ask for
# the most time first; each is reported once it has ended.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../../.." && pwd)
logs=$top/build/test-logs
mkdir -p "$logs"

if [ $# -gt 0 ]; then
	tests=()
	for t in "$@"; do tests+=("$here/tests/${t%.sh}.sh"); done
else
	tests=("$here"/tests/*.sh)
fi

pass=0 fail=0 skip=0 n=0 wakeups=0 exithangs=0 tscjumps=0
todos=() failures=() times=()
jobs=${NVMET_MDEV_TEST_JOBS:-$(($(nproc) > 1 ? 2 : 1))}

# "# timeout: SECONDS" of a test (1200 if it has none).
test_limit() {
	local l
	l=$(sed -n 's/^# timeout: *\([0-9][0-9]*\)$/\1/p' "$1" 2>/dev/null | head -1)
	echo "${l:-1200}"
}

# The TCG host VMs take this machine's TSC for theirs, and it can jump
# (see vm.sh: tsc=unstable): the machine's TSC rate, and its offset from
# CLOCK_MONOTONIC and skew between CPUs around each test, to tell.  The
# rate is measured over 200 ms on a loaded machine, so the offset drifts
# (0.1 to 0.3 s in a 15 min test here): a move of over a minute is a jump
# (the one seen was of days).
tscoffset=$here/client/out/tscoffset
tsc_hz=$("$tscoffset" 2>/dev/null | cut -d' ' -f1)
[ -n "$tsc_hz" ] || echo "# no TSC readings (make client builds tscoffset)"
tsc_offset() {
	[ -z "$tsc_hz" ] || "$tscoffset" "$tsc_hz" | cut -d' ' -f2-
}

# run_one TEST: run it, leaving its log, "STATUS SECONDS" and the TSC's
# offsets and skews before and after it in $logs.
run_one() {
	local t=$1 name log start rc append mem smp nvme tsc0
	name=$(basename "$t" .sh)
	log=$logs/$name.log
	start=$(date +%s)
	tsc0=$(tsc_offset)
	case "$name" in
	host-*) "$t" > "$log" 2>&1 ;;
	*)
		# A test may ask for more time with a "# timeout: SECONDS" line,
		# for kernel arguments with "# append: ARGS" lines (e.g.
		# "# append: kmemleak=on"), for a bigger host VM with a
		# "# mem: SIZE" line, for more vCPUs with "# smp: N", and for
		# an emulated NVMe controller with a "# nvme: SIZE" line.
		append=$(sed -n 's/^# append: *\(.*[^ ]\) *$/\1/p' "$t" | tr '\n' ' ')
		mem=$(sed -n 's/^# mem: *\([0-9][0-9]*[MG]\)$/\1/p' "$t" | head -1)
		nvme=$(sed -n 's/^# nvme: *\([0-9][0-9]*[MG]\)$/\1/p' "$t" | head -1)
		smp=$(sed -n 's/^# smp: *\([0-9][0-9]*\)$/\1/p' "$t" | head -1)
		smp=${smp:-${NVMET_MDEV_TEST_SMP:-}}
		"$here/vm.sh" --timeout "${NVMET_MDEV_TEST_TIMEOUT:-$(test_limit "$t")}" \
			${append:+--append "$append"} ${mem:+--mem "$mem"} \
			${smp:+--smp "$smp"} ${nvme:+--nvme "$nvme"} \
			-- "$t" > "$log" 2>&1 ;;
	esac
	rc=$?
	echo "$tsc0 $(tsc_offset)" > "$logs/$name.tsc"
	echo "$rc $(($(date +%s) - start))" > "$logs/$name.status"
}

# report TEST: its TAP lines, once it has ended.
report() {
	local t=$1 name log rc secs sub p s f td k
	name=$(basename "$t" .sh)
	log=$logs/$name.log
	n=$((n + 1))
	if [ ! -x "$t" ]; then
		echo "not ok $n $name # no such test"
		fail=$((fail + 1))
		return
	fi
	read -r rc secs < "$logs/$name.status"
	echo "# --- $name"

	# Subtest lines the test printed itself (not the kernel's, not nested).
	sub=$(grep -aE '^(not )?ok [0-9]+' "$log" | sed 's/\r$//')
	# "not ok ... # TODO": a known failure, counted with the skips and
	# listed at the end, never as a pass.
	p=$(grep -E '^ok [0-9]+' <<<"$sub" | grep -vc '# SKIP' || true)
	s=$(grep -E '^ok [0-9]+' <<<"$sub" | grep -c '# SKIP' || true)
	td=$(grep -E '^not ok [0-9]+.* # TODO' <<<"$sub" || true)
	[ -n "$td" ] && todos+=("$td")
	s=$((s + $(grep -cE '^not ok [0-9]+.* # TODO' <<<"$sub" || true)))
	f=$(grep -E '^not ok [0-9]+' <<<"$sub" | grep -vc ' # TODO' || true)
	if [ -z "$sub" ]; then
		case $rc in
		0) p=1 ;;
		4) s=1 ;;
		*) f=1 ;;
		esac
	elif [ "$rc" -ne 0 ] && [ "$rc" -ne 4 ] && [ "$f" -eq 0 ]; then
		f=1
	fi
	pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))

	sed 's/\r$//; s/^/#   /' <<<"$sub"
	times+=("$name ${secs}s")
	# QEMU TCG lost wake-ups that vm.sh recovered (wakeup-watch.py).
	k=$(grep -ac '^vm.sh: QEMU lost a wake-up' "$log" || true)
	if [ "$k" -gt 0 ]; then
		echo "#   QEMU lost a wake-up of the host VM $k time(s); recovered (see README)"
		wakeups=$((wakeups + k))
	fi
	grep -a "^vm.sh: QEMU's lost wake-up left" "$log" | sed 's/^/#   /'
	# QEMU hangs in its exit after a clean power-off (exit-watch.sh).
	k=$(grep -ac '^vm.sh: QEMU hung in its own exit' "$log" || true)
	if [ "$k" -gt 0 ]; then
		echo "#   QEMU hung in its exit after the host VM powered off" \
			"$k time(s); killed (see exit-watch.sh)"
		exithangs=$((exithangs + k))
	fi
	k=$(awk 'NF == 4 && ($3 - $1 > 60 || $1 - $3 > 60 || $2 > 1 || $4 > 1) {
		printf "the machine'"'"'s TSC moved %+.0f s against its clock", $3 - $1
		printf " (skew between CPUs: %.0f s, then %.0f s)", $2, $4 }' \
		"$logs/$name.tsc" 2>/dev/null)
	if [ -n "$k" ]; then
		echo "#   $k during the test: its VMs saw their TSC jump (see vm.sh)"
		tscjumps=$((tscjumps + 1))
	fi
	if [ "$f" -gt 0 ]; then
		echo "not ok $n $name (status $rc, ${secs}s; log: ${log#"$top"/})"
		# What failed, for the summary at the end: the test's failing
		# lines, each with the last diagnostics printed before it (the
		# failed assertion: CI may show only the output's tail), or
		# its status when it printed none.
		k=$(sed 's/\r$//' "$log" | awk '
			/^(not )?ok [0-9]+/ {
				if (/^not ok/ && !/ # TODO/) {
					print
					for (i = nd > 4 ? nd - 4 : 0; i < nd; i++)
						print "  " d[i]
				}
				nd = 0
				next
			}
			/^# / && !/^# +(RUN|OK|FAIL|SKIP) / { d[nd++] = $0 }')
		[ -n "$k" ] || k="status $rc"
		while IFS= read -r k; do
			case $k in
			"  "*) failures+=("$k") ;;
			*) failures+=("$name: $k") ;;
			esac
		done <<<"$k"
		echo "#   last lines of the log:"
		tail -n 40 "$log" | sed 's/\r$//; s/^/#     /'
	elif [ "$p" -eq 0 ] && [ "$s" -gt 0 ]; then
		echo "ok $n $name # SKIP (${secs}s)"
	else
		echo "ok $n $name (${secs}s)"
	fi
}

echo "TAP version 13"
echo "1..${#tests[@]}"
# Longest first (by the time they ask for), so that the runs end together.
order=$(for t in "${tests[@]}"; do echo "$(test_limit "$t") $t"; done |
	sort -s -k1,1nr | cut -d' ' -f2-)
mapfile -t order <<<"$order"
declare -A reported=()
for t in "${order[@]}"; do
	rm -f "$logs/$(basename "$t" .sh).status"
done
start_all=$(date +%s)
i=0
while [ ${#reported[@]} -lt ${#order[@]} ]; do
	# Start tests while there is a free slot.
	while [ $i -lt ${#order[@]} ] && [ "$(jobs -rp | wc -l)" -lt "$jobs" ]; do
		t=${order[$i]}
		i=$((i + 1))
		if [ -x "$t" ]; then
			run_one "$t" &
		fi
	done
	# Report what has ended.
	for t in "${order[@]}"; do
		[ -n "${reported[$t]:-}" ] && continue
		if [ ! -x "$t" ] || [ -e "$logs/$(basename "$t" .sh).status" ]; then
			report "$t"
			reported[$t]=1
		fi
	done
	[ ${#reported[@]} -lt ${#order[@]} ] && { wait -n 2>/dev/null || sleep 1; }
done
wait
if [ ${#todos[@]} -gt 0 ]; then
	echo "# known failures (TAP TODO), counted as skipped:"
	printf '%s\n' "${todos[@]}" | sed 's/^/#   /'
fi
[ $wakeups -gt 0 ] &&
	echo "# QEMU lost wake-ups recovered in this run: $wakeups (emulator, see README)"
[ $exithangs -gt 0 ] &&
	echo "# QEMU exit hangs after a clean power-off in this run:" \
		"$exithangs (emulator, see exit-watch.sh)"
[ $tscjumps -gt 0 ] &&
	echo "# the machine's TSC jumped during $tscjumps test(s) (see vm.sh)"
t=$(printf '%s, ' "${times[@]}")
echo "# $((($(date +%s) - start_all) / 60)) min for the tests, $jobs at a time: ${t%, }"
if [ ${#failures[@]} -gt 0 ]; then
	echo "# failed:"
	printf '#   %s\n' "${failures[@]}"
fi
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
