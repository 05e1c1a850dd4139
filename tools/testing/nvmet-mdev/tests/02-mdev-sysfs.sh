#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# An mdev port registers an mdev parent with a type; mdevs are created and
# removed through sysfs; mdevctl sees them, starts and stops them, and
# starts a defined (persistent) one with its tunables set through
# --addattr; removing the port removes it all, and one defined with
# --auto comes back when the port is made again (udev and mdevctl's rule):
# the configuration saved with nvmetcli save, cleared with nvmetcli clear
# and brought back with nvmetcli restore, which round-trips it.
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

# The driver's attributes and their ABI document agree: every attribute
# documented exists, and every attribute of the device but the driver
# core's and the mdev core's is documented.
abi=$NVMET_MDEV_TOP/Documentation/ABI/testing/sysfs-bus-mdev-devices-nvmet-mdev
documented=$(sed -n 's|^What:.*/<uuid>/||p' "$abi" | sort)
present=$(for f in "/sys/bus/mdev/devices/$uuid"/*; do
	[ -f "$f" ] && [ ! -L "$f" ] && echo "${f##*/}"
done | grep -vxE 'uevent|remove' | sort)
tap_ok "the ABI document lists the mdev's attributes ($(echo $documented))" \
	test -n "$documented" -a "$documented" = "$present"
[ "$documented" = "$present" ] ||
	diff <(echo "$documented") <(echo "$present") | sed 's/^/# /'
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
	mdevctl start -u 5a1e8c7e-6f9b-4f7e-9a0c-7f1f3c2d9b01 \
		-p "$(basename "$parent")" -t "$(basename "$t")"
tap_ok "mdevctl stop removes it" mdevctl stop -u 5a1e8c7e-6f9b-4f7e-9a0c-7f1f3c2d9b01

# Persistent definitions live in /etc/mdevctl.d: a writable copy here.
u3=0c9d4e2a-3b5f-4d6e-8f70-91a2b3c4d5e6
cp -a /etc/mdevctl.d /tmp/mdevctl.d || die "copy /etc/mdevctl.d"
mount -t tmpfs none /etc/mdevctl.d || die "tmpfs on /etc/mdevctl.d"
cp -a /tmp/mdevctl.d/. /etc/mdevctl.d/ || die "fill /etc/mdevctl.d"
tap_ok "mdevctl define" \
	mdevctl define -u $u3 -p "$(basename "$parent")" -t "$(basename "$t")"
tap_ok "mdevctl modify --addattr shadow_doorbells" \
	mdevctl modify -u $u3 --addattr=shadow_doorbells --value=0
tap_ok "mdevctl modify --addattr poll_idle_us" \
	mdevctl modify -u $u3 --addattr=poll_idle_us --value=250
tap_ok "mdevctl modify --addattr subsysnqn" \
	mdevctl modify -u $u3 --addattr=subsysnqn --value=$nqn
tap_ok "mdevctl list --defined shows it" eval "mdevctl list --defined | grep -q $u3"
tap_ok "mdevctl start of the defined mdev" mdevctl start -u $u3
a=/sys/bus/mdev/devices/$u3
tap_ok "its shadow_doorbells is 0" grep -qx 0 $a/shadow_doorbells
tap_ok "its poll_idle_us is 250" grep -qx 250 $a/poll_idle_us
tap_ok "its subsysnqn is set" grep -qx $nqn $a/subsysnqn
tap_ok "mdevctl stop, undefine" eval "mdevctl stop -u $u3 && mdevctl undefine -u $u3"
tap_ok "it is gone" test ! -e $a
# One defined with --auto comes back with its port (below).
u4=7e1f0b2c-8d3a-4c5b-9e6f-a0b1c2d3e4f5
tap_ok "mdevctl define --auto" mdevctl define -u $u4 --auto \
	-p "$(basename "$parent")" -t "$(basename "$t")"
tap_ok "mdevctl modify --addattr poll_idle_us of it" \
	mdevctl modify -u $u4 --addattr=poll_idle_us --value=300

# The port reads back "mdev"; a referral (an address on the wire) refuses
# it and takes a wire transport.
r=$NVMET_CFS/ports/1/referrals/r1
tap_ok "the port's addr_trtype reads back mdev" \
	grep -qx mdev "$NVMET_CFS/ports/1/addr_trtype"
tap_ok "a referral can be made" mkdir "$r"
tap_ok "a referral refuses addr_trtype mdev" \
	eval "! echo mdev > $r/addr_trtype"
tap_ok "a referral takes addr_trtype tcp" \
	eval "echo tcp > $r/addr_trtype && grep -qx tcp $r/addr_trtype"
rmdir "$r"

# The configuration saved, and all of nvmet's cleared.
cfg=/tmp/nvmet.json
tap_ok "nvmetcli save" nvmetcli save $cfg
tap_ok "it saved the mdev port with its subsystem" python3 -c '
import json, sys
c = json.load(open(sys.argv[1]))
p = [p for p in c["ports"] if p["portid"] == 1][0]
assert p["addr"]["trtype"] == "mdev" and p["subsystems"] == [sys.argv[2]]
' $cfg $nqn
tap_ok "nvmetcli clear" nvmetcli clear
# The parent goes away asynchronously (its mdevs could still be open).
for _ in $(seq 50); do [ -e "$parent" ] || break; sleep 0.2; done
tap_ok "removing the port removes the parent" test ! -e "$parent"
tap_ok "... and its mdevs" test ! -e "/sys/bus/mdev/devices/$uuid"
tap_ok "... and nvmetcli clear removed the subsystem" test ! -e "$NVMET_CFS/subsystems/$nqn"

# The port made again: its parent's registration ("change" uevent,
# MDEV_STATE=registered) makes udev run mdevctl's rule, which starts the
# mdevs defined with --auto (a host's udevd; here one for this part only).
# Debian's mdevctl (1.2.0 in 12, 1.4.0 in 13) installs mdevctl in /usr/bin
# and a rule that runs /usr/sbin/mdevctl: the rule with the right path
# goes in /run/udev/rules.d (/etc/udev/rules.d on a host), under the same
# name, which overrides the package's.
rules=/lib/udev/rules.d/60-mdevctl.rules
if [ ! -x /usr/sbin/mdevctl ] && grep -q /usr/sbin/mdevctl $rules; then
	echo "# $rules runs /usr/sbin/mdevctl, which is missing: overridden"
	mkdir -p /run/udev/rules.d
	sed "s|/usr/sbin/mdevctl|$(command -v mdevctl)|g" $rules \
		> /run/udev/rules.d/60-mdevctl.rules
fi
/lib/systemd/systemd-udevd --daemon --resolve-names=never || die "udevd"
tap_ok "nvmetcli restore" nvmetcli restore $cfg
a=/sys/bus/mdev/devices/$u4
for ((i = 0; i < 100; i++)); do [ -e $a ] && break; pause 0.2; done
tap_ok "the --auto mdev is started when its port comes back ($((i / 5)) s)" \
	test -e $a
tap_ok "with its poll_idle_us" grep -qx 300 $a/poll_idle_us
tap_ok "the restored namespace is enabled on its file" eval \
	"grep -qx /tmp/ns1.img $NVMET_CFS/subsystems/$nqn/namespaces/1/device_path &&
	grep -qx 1 $NVMET_CFS/subsystems/$nqn/namespaces/1/enable"
nvmetcli save $cfg.2
tap_ok "nvmetcli save again: the same configuration" cmp -s $cfg $cfg.2
cmp -s $cfg $cfg.2 || diff $cfg $cfg.2 | sed 's/^/# /'
udevadm control --exit
tap_ok "mdevctl stop, undefine it" \
	eval "mdevctl stop -u $u4 && mdevctl undefine -u $u4"
umount /etc/mdevctl.d
unlink_subsys 1 $nqn
rmdir "$NVMET_CFS/ports/1"
for _ in $(seq 50); do [ -e "$parent" ] || break; sleep 0.2; done
teardown_nvmet
tap_ok "nvmet-mdev unloads" modprobe -r nvmet-mdev
tap_done
