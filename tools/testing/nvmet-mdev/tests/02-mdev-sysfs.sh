#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# An mdev port registers an mdev parent with a type; mdevs are created and
# removed through sysfs; mdevctl sees them; removing the port removes it all.
. "$(dirname "$0")/../lib.sh"
nqn=nqn.2026-11.org.example:sysfs
setup_default 1 $nqn /tmp/ns1.img || die "nvmet setup"
modprobe nvmet-mdev

parent=$(port_parent 1)
tap_ok "port 1 has an mdev parent" test -d "$parent"
t=$(port_type_dir 1)
tap_ok "the parent has an mdev type" test -n "$t"
tap_ok "type device_api is vfio-pci" grep -qx vfio-pci "$t/device_api"
tap_ok "type has a name" test -s "$t/name"
tap_ok "type has a description" test -s "$t/description"
avail=$(cat "$t/available_instances" 2>/dev/null)
tap_ok "available_instances is a positive number ($avail)" test "${avail:-0}" -gt 0

uuid=$(create_mdev 1)
tap_ok "create an mdev" test -n "$uuid"
tap_ok "it is on the mdev bus" test -d "/sys/bus/mdev/devices/$uuid"
tap_ok "it has an iommu group" test -e "/sys/bus/mdev/devices/$uuid/iommu_group"
tap_ok "available_instances went down" \
	test "$(cat "$t/available_instances")" -eq $((avail - 1))
tap_ok "mdevctl lists it" eval "mdevctl list | grep -q $uuid"
tap_ok "mdevctl types lists the type" eval "mdevctl types | grep -q $(basename "$t")"
tap_ok "remove it" remove_mdev "$uuid"
tap_ok "it is gone" test ! -e "/sys/bus/mdev/devices/$uuid"
tap_ok "create it again with the same uuid" test "$(create_mdev 1 "$uuid")" = "$uuid"
u2=$(create_mdev 1)
tap_ok "a second mdev on the same port" test -d "/sys/bus/mdev/devices/$u2"
tap_ok "mdevctl start makes a third" \
	mdevctl start -u 5a1e8c7e-6f9b-4f7e-9a0c-7f1f3c2d9b01 -p "$(basename "$parent")" -t "$(basename "$t")"
tap_ok "mdevctl stop removes it" mdevctl stop -u 5a1e8c7e-6f9b-4f7e-9a0c-7f1f3c2d9b01

unlink_subsys 1 $nqn
rmdir "$NVMET_CFS/ports/1"
# The parent goes away asynchronously (its mdevs could still be open).
for i in $(seq 50); do [ -e "$parent" ] || break; sleep 0.2; done
tap_ok "removing the port removes the parent" test ! -e "$parent"
tap_ok "... and its mdevs" test ! -e "/sys/bus/mdev/devices/$uuid"
teardown_nvmet
tap_ok "nvmet-mdev unloads" modprobe -r nvmet-mdev
tap_done
