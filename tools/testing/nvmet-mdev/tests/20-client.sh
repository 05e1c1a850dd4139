#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The userspace VFIO NVMe client (tools/testing/nvmet-mdev/client): the
# conformance, hostile-input and fuzz cases, through the VFIO container
# and through iommufd, against a file-backed namespace whose backing file
# the tests read to check the data.  Each case is one TAP result.
# timeout: 3000
. "$(dirname "$0")/../lib.sh"
nqn=nqn.2026-11.org.example:client
setup_default 1 $nqn /tmp/client.img 64M || die "nvmet setup"
modprobe nvmet-mdev || die "modprobe nvmet-mdev"
uuid=$(create_mdev 1) || die "create mdev"
# The largest MDTS (4 MiB), so that PRP lists chain over several pages.
echo 10 > "/sys/bus/mdev/devices/$uuid/mdts" || die "set mdts"

# Conformance and hostile cases with doorbells written through the mmap'ed
# page, as a KVM guest does; then the seeded fuzzer, 20k commands per
# binding and doorbell mode (mmap'ed page and trapped writes; the fuzzer's
# own budget in time is NVMET_MDEV_FUZZ_SECS).
c=$NVMET_MDEV_HARNESS/client/run.sh
"$c" -t regs_test -t admin_test -t io_test -t irq_test -t hostile_test \
	"$uuid" /tmp/client.img
rc=$?
NVMET_MDEV_FUZZ_CMDS=${NVMET_MDEV_FUZZ_CMDS:-20000} \
NVMET_MDEV_FUZZ_SECS=${NVMET_MDEV_FUZZ_SECS:-300} \
	"$c" -d both -t fuzz_test "$uuid" /tmp/client.img || rc=1

tap_ok "client: remove the mdev after the tests" remove_mdev "$uuid"
teardown_nvmet
tap_ok "client: nvmet-mdev unloads" modprobe -r nvmet-mdev
exit $rc
