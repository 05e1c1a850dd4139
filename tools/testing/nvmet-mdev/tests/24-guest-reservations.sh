#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A shared disk: two guests on two mdevs of one subsystem, whose namespace
# has reservations enabled (nvmet's resv_enable), coordinate with NVMe
# reservations through nvme-cli.  Guest A registers a key and takes a
# Write Exclusive reservation and writes; guest B registers, its report
# shows A as the holder (A's host identifier: its mdev's UUID), its write
# is refused with Reservation Conflict and its read works; A releases and
# B's write works.  The host passes the word between the two guests'
# run directories.  B boots once A holds the reservation (one nested
# guest booting at a time, see 12-two-guests).
# timeout: 3000
. "$(dirname "$0")/../lib.sh"
g=$NVMET_MDEV_HARNESS/tests/guest/check.sh
nqn=nqn.2026-11.org.example:shared
make_subsys $nqn /tmp/shared.img 64M || die "nvmet setup"
ns=$NVMET_CFS/subsystems/$nqn/namespaces/1
echo 0 > $ns/enable && echo 1 > $ns/resv_enable && echo 1 > $ns/enable ||
	die "resv_enable"
make_port 1 && link_subsys 1 $nqn || die "port"
modprobe nvmet-mdev || die "modprobe"
ua=$(create_mdev 1) || die "create mdev a"
ub=$(create_mdev 1) || die "create mdev b"
pins0=$(foll_pins)

rm -rf /tmp/ga /tmp/gb
mkdir -p /tmp/ga /tmp/gb
export NVMET_MDEV_GUEST_TIMEOUT=2400
TMPDIR=/tmp/ga run_guest --mdev "$ua" --mem 768M -- \
	$g resv_holder 0xa > /tmp/ga.out 2>/tmp/ga.err &
pa=$!
# B boots once A has its reservation (one guest boots at a time).
if guest_said /tmp/ga $pa held 1500; then
	TMPDIR=/tmp/gb run_guest --mdev "$ub" --mem 768M -- \
		$g resv_other 0xb "$ua" > /tmp/gb.out 2>/tmp/gb.err &
	pb=$!
	# On, whatever a guest said: one that failed a step still ends.  A
	# waits longer than this for "release" (resv_holder).
	guest_said /tmp/gb $pb refused 1500
	guest_tell /tmp/ga release
	guest_said /tmp/ga $pa released 600
	guest_tell /tmp/gb released
	guest_tell /tmp/ga bye
fi
for x in a b; do
	p=$pa
	[ $x = b ] && p=${pb-}
	if [ -z "$p" ]; then
		tap_ok "guest b started" false
		continue
	fi
	wait "$p"
	rc=$?
	out=$(cat /tmp/g$x.out)
	tap_ok "guest $x powered off clean (status $rc)" test $rc -eq 0
	[ $rc -eq 0 ] || tail -n 40 /tmp/g$x.out | sed "s/^/guest $x console| /" >&2
	guest_checks "guest $x" "$out"
done
released "shared" $nqn "$pins0"
for u in "$ua" "$ub"; do remove_mdev "$u"; done
teardown_nvmet
tap_ok "nvmet-mdev unloads" modprobe -r nvmet-mdev
tap_done
