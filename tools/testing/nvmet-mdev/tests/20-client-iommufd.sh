#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# 20-client.sh through iommufd (VFIO device cdev) instead of the VFIO
# container: the two run as separate tests, side by side when run-tests.sh
# runs two at a time.
# timeout: 2400
NVMET_MDEV_CLIENT_BINDING=iommufd exec "$(dirname "$0")/20-client.sh"
