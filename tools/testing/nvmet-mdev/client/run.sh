#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Run the nvmet-mdev client tests against a prepared mdev, through both
# VFIO bindings, as one flat TAP stream.
#
#   run.sh [-b container|iommufd] [-d mmap|pwrite|both] [-o OUTDIR] [-t PROG]...
#          UUID [BACKING]
#
# UUID      an mdev of an nvmet-mdev port, not opened by anyone else
# BACKING   optional: the backing file (or block device) of the namespace
#           the controller exposes first; data is then checked against it
# -b        run only one binding (default: container, then iommufd)
# -d        how doorbells are written: through the mmap'ed doorbell page (mmap,
#           the default, what a guest does), through the trapped region path
#           (pwrite), or every program both ways (both)
# -t        run only these programs (regs_test, admin_test, io_test,
#           irq_test, hostile_test, fuzz_test, migration_test,
#           lifecycle_test); repeatable
# -o        where the built programs are (default: out/ next to this script;
#           build them with "make" first, outside the read-only VM)
#
# Each program's results become "ok N <binding>:<test>" lines; its other
# output is passed through as TAP comments.  The exit status is 0 when
# nothing failed (skips are fine), 1 otherwise.
#
# Environment passed on to the programs: NVMET_MDEV_SEED, NVMET_MDEV_FUZZ_SEED,
# NVMET_MDEV_FUZZ_CMDS, NVMET_MDEV_FUZZ_SECS (see README).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=$here/out
bindings=(container iommufd)
doorbells=(mmap)
progs=()

usage() {
	sed -n '4,26p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

while getopts "b:d:o:t:h" opt; do
	case $opt in
	b) bindings=("$OPTARG") ;;
	d) if [ "$OPTARG" = both ]; then doorbells=(mmap pwrite); else doorbells=("$OPTARG"); fi ;;
	o) out=$OPTARG ;;
	t) progs+=("$OPTARG") ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || usage
uuid=$1
backing=${2:-}
[ ${#progs[@]} -gt 0 ] ||
	progs=(regs_test admin_test io_test irq_test hostile_test fuzz_test
	       migration_test lifecycle_test)

export NVMET_MDEV_UUID=$uuid
if [ -n "$backing" ]; then
	export NVMET_MDEV_BACKING=$backing
else
	unset NVMET_MDEV_BACKING
fi

n=0 failed=0
echo "TAP version 13"
echo "# nvmet-mdev client tests: mdev $uuid${backing:+, backing $backing}"

if [ ! -e "/sys/bus/mdev/devices/$uuid" ]; then
	n=$((n + 1))
	echo "not ok $n mdev $uuid exists"
	echo "1..$n"
	exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for binding in "${bindings[@]}"; do
	for db in "${doorbells[@]}"; do
	# Result names: binding, plus the doorbell mode when not the default.
	tag=$binding
	[ "$db" = mmap ] || tag=$binding/$db
	for prog in "${progs[@]}"; do
		bin=$out/$prog
		if [ ! -x "$bin" ]; then
			n=$((n + 1))
			echo "not ok $n $tag:$prog # not built ($bin)"
			failed=1
			continue
		fi
		echo "# ---- $tag: $prog"
		NVMET_MDEV_BINDING=$binding NVMET_MDEV_DOORBELL=$db "$bin" > "$tmp/log" 2>&1
		rc=$?
		results=0 bad=0
		# Renumber the program's result lines into our stream.
		while IFS= read -r line; do
			case $line in
			"ok "*|"not ok "*)
				n=$((n + 1))
				results=$((results + 1))
				if [[ $line == "not ok "* ]]; then
					verdict="not ok" rest=${line#not ok }
				else
					verdict="ok" rest=${line#ok }
				fi
				rest=${rest#* }		# the program's own number
				if [ "$verdict" = "not ok" ] &&
				   [[ $rest != *"# XFAIL"* && $rest != *"# SKIP"* ]]; then
					bad=1
				fi
				echo "$verdict $n $tag:$rest"
				;;
			"#"*)
				echo "$line" ;;
			*)
				echo "# $line" ;;
			esac
		done < "$tmp/log"
		# kselftest: 0 pass, 4 all skipped; anything else is a failure.
		# A program that died without a failing result line gets one.
		if [ $rc -ne 0 ] && [ $rc -ne 4 ] && [ $bad -eq 0 ]; then
			n=$((n + 1))
			echo "not ok $n $tag:$prog # exit status $rc after $results results"
			bad=1
		fi
		[ $bad -eq 0 ] || failed=1
	done
	done
done

echo "1..$n"
exit $failed
