#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A nested KVM guest boots our kernel inside the TCG host VM, with an mdev
# that QEMU opens through -device vfio-pci,sysfsdev=... (the VFIO container
# binding; 04-qemu-open.sh does the same with iommufd), and sees an NVMe
# controller (class 010802) on its PCI bus.  Through SeaBIOS, whose NVMe
# driver brings the controller up (and sends an Identify Namespace for
# every namespace ID up to NN) before Linux does.
. "$(dirname "$0")/../lib.sh"
nqn=nqn.2026-11.org.example:open
setup_default 1 $nqn /tmp/ns1.img || die "nvmet setup"
modprobe nvmet-mdev || die "modprobe"
uuid=$(create_mdev 1) || die "create mdev"

tap_ok "/dev/kvm exists in the host VM" test -c /dev/kvm
out=$(run_guest --seabios --mdev "$uuid" -- bash -c "$pci_list_cmd"'
	read -r r < /proc/sys/kernel/osrelease; echo "guest-kernel=$r"')
rc=$?
echo "$out" | grep -a '^pci \|^guest-kernel=' | sed 's/^/# /'
tap_ok "the guest, with the mdev, ran a command and exited cleanly" test $rc -eq 0
tap_ok "the guest runs our guest kernel" eval 'grep -q "guest-kernel=$(uname -r)-guest" <<<"$out"'
tap_ok "container: the guest sees an NVMe controller" \
	eval 'grep -aq "^pci 0x1b36 0x0021 0x010802" <<<"$out"'
remove_mdev "$uuid"
teardown_nvmet
tap_done
