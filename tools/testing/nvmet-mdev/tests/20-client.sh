#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The userspace VFIO NVMe client (tools/testing/nvmet-mdev/client): the
# conformance, hostile-input and fuzz cases, through one VFIO binding (the
# container; 20-client-iommufd.sh runs this with iommufd), against a
# file-backed namespace whose backing file the tests read to check the
# data.  Each case is one TAP result, in one stream with one plan (the
# client's runs are folded in by tap_run).
# timeout: 2400
. "$(dirname "$0")/../lib.sh"
b=${NVMET_MDEV_CLIENT_BINDING:-container}
nqn=nqn.2026-11.org.example:client
setup_default 1 $nqn /tmp/client.img 64M || die "nvmet setup"
modprobe nvmet-mdev || die "modprobe nvmet-mdev"
uuid=$(create_mdev 1) || die "create mdev"
# The largest MDTS (4 MiB), so that PRP lists chain over several pages.
echo 10 > "/sys/bus/mdev/devices/$uuid/mdts" || die "set mdts"
# A mappable doorbell page whatever the CPUs (auto maps it only with two
# or more); the trapped-only case comes last.
echo on > "/sys/bus/mdev/devices/$uuid/doorbell_mmap" || die "set doorbell_mmap"
# migration_test moves the controller to a second mdev of the same port
# and subsystem, tuned alike (a migration needs what the guest saw) and
# with the first one's host identity: one the administrator gave, shorter
# than the UUID-derived one it replaces (the state carries it NUL padded).
hostnqn=nqn.2026-12.org.example:client-host
echo $hostnqn > "/sys/bus/mdev/devices/$uuid/hostnqn" || die "set the host NQN"
peer=$(create_mdev 1) || die "create the peer mdev"
echo 10 > "/sys/bus/mdev/devices/$peer/mdts" || die "set the peer's mdts"
echo on > "/sys/bus/mdev/devices/$peer/doorbell_mmap" ||
	die "set the peer's doorbell_mmap"
same_host "$uuid" "$peer" || die "give the peer the same host identity"
export NVMET_MDEV_PEER=$peer

# Conformance and hostile cases with doorbells written through the mmap'ed
# page, as a KVM guest does; then the seeded fuzzer per doorbell mode
# (mmap'ed page and trapped writes): 2 runs of 20k commands and 2k random
# register/doorbell/config writes each (20-client-iommufd.sh: 2 runs of
# 10k and 1k, 60k commands and 6k writes in all).  A run that ends on
# its time budget (NVMET_MDEV_FUZZ_SECS) before its budgets fails; so do
# the totals below when a run is missing.  Each run also reports its host
# budgets (memory, idle CPU, pinned pages, kernel log).
c=$NVMET_MDEV_HARNESS/client/run.sh
tap_run "$c" -b "$b" -t regs_test -t admin_test -t io_test -t irq_test \
	-t migration_test \
	-t hostile_test "$uuid" /tmp/client.img
tap_ok "client $b: remove the peer mdev after migration_test" remove_mdev "$peer"
unset NVMET_MDEV_PEER
export NVMET_MDEV_FUZZ_CMDS=${NVMET_MDEV_FUZZ_CMDS:-20000}
export NVMET_MDEV_FUZZ_WRITES=${NVMET_MDEV_FUZZ_WRITES:-2000}
export NVMET_MDEV_FUZZ_SECS=${NVMET_MDEV_FUZZ_SECS:-900}
runs=2
fuzz_start=$SECONDS
tap_run -o /tmp/fuzz.tap "$c" -b "$b" -d both -t fuzz_test "$uuid" \
	/tmp/client.img
fuzz_secs=$((SECONDS - fuzz_start))
# "totals: N commands, N writes, N ms", one line per run.
totals=$(sed -n \
	's/.*totals: \([0-9]*\) commands, \([0-9]*\) writes, \([0-9]*\) ms.*/\1 \2 \3/p' \
	/tmp/fuzz.tap)
n=$(grep -c . <<<"$totals")
cmds=$(awk '{ s += $1 } END { print s + 0 }' <<<"$totals")
writes=$(awk '{ s += $2 } END { print s + 0 }' <<<"$totals")
ms=$(awk '{ s += $3 } END { print s + 0 }' <<<"$totals")
echo "# fuzz: $n runs, $cmds commands, $writes register/doorbell/config writes," \
	"${ms} ms fuzzing, ${fuzz_secs} s with setup and host checks"
[ "$ms" -gt 0 ] && echo "# fuzz rate: $((cmds * 1000 / ms)) commands/s," \
	"$((writes * 1000 / ms)) writes/s"
t="$cmds commands in $n runs (at least $((runs * NVMET_MDEV_FUZZ_CMDS)))"
tap_ok "client $b: fuzz totals: $t" \
	test "$n" -eq $runs -a "$cmds" -ge $((runs * NVMET_MDEV_FUZZ_CMDS))
t="$writes register/doorbell/config writes"
t+=" (at least $((runs * NVMET_MDEV_FUZZ_WRITES)))"
tap_ok "client $b: fuzz totals: $t" \
	test "$n" -eq $runs -a "$writes" -ge $((runs * NVMET_MDEV_FUZZ_WRITES))

# doorbell_mmap=off: the page is not offered, every doorbell write traps
# and the writer fetches the commands (I/O data checked against the file).
echo off > "/sys/bus/mdev/devices/$uuid/doorbell_mmap" || die "set doorbell_mmap"
tap_run -p "trapped-only: " "$c" -b "$b" -d pwrite -t regs_test -t io_test \
	"$uuid" /tmp/client.img

# Last: module unload and mdev removal while the device is open (the
# mdev is re-created, with its default attributes).
tap_run "$c" -b "$b" -d pwrite -t lifecycle_test "$uuid" /tmp/client.img

# The hostile cases made the driver complain: its messages name the mdev
# (the UUID the administrator knows), not the vfio character device.
named=$(dmesg | grep -c "nvmet-mdev $uuid: ")
vfio=$(dmesg | grep -c 'vfio-dev vfio[0-9]*: ')
tap_ok "client $b: the driver's messages name the mdev ($named), none the vfio device ($vfio)" \
	test "$named" -gt 0 -a "$vfio" -eq 0
tap_ok "client $b: remove the mdev after the tests" remove_mdev "$uuid"
teardown_nvmet
tap_ok "client $b: nvmet-mdev unloads" modprobe -r nvmet-mdev
tap_done
