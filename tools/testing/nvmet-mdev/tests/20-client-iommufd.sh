#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# 20-client.sh through iommufd (VFIO device cdev) instead of the VFIO
# container: the two run as separate tests, side by side when run-tests.sh
# runs two at a time.  The fuzzer's commands reach the device the same
# way through either binding (only the DMA mappings differ, and every run
# maps and unmaps thousands of chunks), so this one runs 2 x 10k commands
# and 2 x 1k writes, 20-client.sh 2 x 20k and 2 x 2k: the mmap'ed-doorbell
# run alone took 836 s of a 1697 s test at 50k (one CPU, beside another VM),
# and a machine whose TCG runs 2.5 times slower than that one's needs the
# time of both tests to fit CI's 90 minutes (2026-12-03).
# timeout: 2400
export NVMET_MDEV_FUZZ_CMDS=${NVMET_MDEV_FUZZ_CMDS:-10000}
export NVMET_MDEV_FUZZ_WRITES=${NVMET_MDEV_FUZZ_WRITES:-1000}
NVMET_MDEV_CLIENT_BINDING=iommufd exec "$(dirname "$0")/20-client.sh"
