#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# nvmet-mdev loads and unloads cleanly, also next to nvmet-pci-epf.
. "$(dirname "$0")/../lib.sh"

loaded() { grep -q "^$1 " /proc/modules; }

tap_ok "modprobe nvmet-mdev" modprobe nvmet-mdev
tap_ok "nvmet-mdev is loaded" loaded nvmet_mdev
tap_ok "it pulled in nvmet" loaded nvmet
tap_ok "rmmod nvmet-mdev" rmmod nvmet-mdev
tap_ok "nvmet-mdev is gone" eval '! loaded nvmet_mdev'
tap_ok "load again" modprobe nvmet-mdev
tap_ok "nvmet-pci-epf loads next to it" modprobe nvmet-pci-epf
tap_ok "both are loaded" eval 'loaded nvmet_mdev && loaded nvmet_pci_epf'
tap_ok "unload both" modprobe -r nvmet-pci-epf nvmet-mdev
tap_ok "nvmet unloads" modprobe -r nvmet
tap_done
