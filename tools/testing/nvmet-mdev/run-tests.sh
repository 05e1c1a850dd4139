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

pass=0 fail=0 skip=0 n=0 wakeups=0
todos=()
echo "TAP version 13"
echo "1..${#tests[@]}"
for t in "${tests[@]}"; do
	name=$(basename "$t" .sh)
	n=$((n + 1))
	log=$logs/$name.log
	if [ ! -x "$t" ]; then
		echo "not ok $n $name # no such test"
		fail=$((fail + 1))
		continue
	fi
	echo "# --- $name"
	start=$(date +%s)
	case "$name" in
	host-*) "$t" > "$log" 2>&1 ;;
	*)
		# A test may ask for more time with a "# timeout: SECONDS" line,
		# and for kernel arguments with "# append: ARGS" lines (e.g.
		# "# append: kmemleak=on").
		limit=$(sed -n 's/^# timeout: *\([0-9][0-9]*\)$/\1/p' "$t" | head -1)
		append=$(sed -n 's/^# append: *\(.*[^ ]\) *$/\1/p' "$t" | tr '\n' ' ')
		"$here/vm.sh" --timeout "${NVMET_MDEV_TEST_TIMEOUT:-${limit:-1200}}" \
			${append:+--append "$append"} -- "$t" > "$log" 2>&1 ;;
	esac
	rc=$?
	secs=$(( $(date +%s) - start ))

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
	elif [ $rc -ne 0 ] && [ $rc -ne 4 ] && [ "$f" -eq 0 ]; then
		f=1
	fi
	pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))

	sed 's/\r$//; s/^/#   /' <<<"$sub"
	# QEMU 7.2 TCG lost wake-ups that vm.sh recovered (wakeup-watch.py).
	k=$(grep -ac '^vm.sh: QEMU lost a wake-up' "$log" || true)
	if [ "$k" -gt 0 ]; then
		echo "#   QEMU lost a wake-up of the host VM $k time(s); recovered (see README)"
		wakeups=$((wakeups + k))
	fi
	if [ "$f" -gt 0 ]; then
		echo "not ok $n $name (status $rc, ${secs}s; log: ${log#"$top"/})"
		echo "#   last lines of the log:"
		tail -n 40 "$log" | sed 's/\r$//; s/^/#     /'
	elif [ "$p" -eq 0 ] && [ "$s" -gt 0 ]; then
		echo "ok $n $name # SKIP (${secs}s)"
	else
		echo "ok $n $name (${secs}s)"
	fi
done
if [ ${#todos[@]} -gt 0 ]; then
	echo "# known failures (TAP TODO), counted as skipped:"
	printf '%s\n' "${todos[@]}" | sed 's/^/#   /'
fi
[ $wakeups -gt 0 ] &&
	echo "# QEMU lost wake-ups recovered in this run: $wakeups (emulator, see README)"
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
