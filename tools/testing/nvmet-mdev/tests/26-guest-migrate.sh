#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Live migration (Documentation/nvme/mdev.rst, "Live migration"): a guest
# writing and verifying with fio moves between two mdevs of one
# subsystem: container -> iommufd -> container, a migration cancelled
# halfway (the source runs on), and a last one (migrate.py).  fio verifies
# every region it wrote across the moves, and the guest's nvme driver
# logs no timeout, abort or reset.  Each migration's downtime, total time,
# device data and the dirty pages the device reported are in the log.
# The guest boots from an initramfs with busybox and fio: the other
# guests' 9p root blocks migration.
# timeout: 2400
. "$(dirname "$0")/../lib.sh"
test_vm_only 26-guest-migrate || exit 1
nqn=nqn.2026-11.org.example:mig
setup_default 1 $nqn /tmp/mig.img 128M || die "nvmet setup"
modprobe nvmet-mdev || die "modprobe nvmet-mdev"
u1=$(create_mdev 1) || die "create mdev 1"
u2=$(create_mdev 1) || die "create mdev 2"

# The guest's initramfs.
root=/tmp/mig-initrd
rm -rf $root /tmp/mig-run
mkdir -p $root/bin $root/proc $root/sys $root/dev $root/tmp /tmp/mig-run
cp "$(command -v busybox)" $root/bin/busybox || die "no busybox"
cp "$NVMET_MDEV_TOP/build/fio/fio" $root/fio || die "no static fio (make fio)"
cp "$NVMET_MDEV_HARNESS/tests/guest/migrate-init.sh" $root/init
(cd $root && find . | cpio -o -H newc --quiet) > /tmp/mig-initrd.cpio ||
	die "initramfs"

out=$("$NVMET_MDEV_HARNESS/migrate.py" /tmp/mig-run \
	"$NVMET_MDEV_TOP/build/guest-bzImage" /tmp/mig-initrd.cpio \
	"$u1" "$u2" /tmp/mig.img)
rc=$?
grep -v '^check: ' <<<"$out"
tap_ok "migrate.py ran (status $rc)" test $rc -eq 0
guest_checks "migration" "$out"

# The stopped sources kept their hands off the guest: nothing logged.
n=$(dmesg | grep -c "nvmet-mdev.*migration:")
tap_ok "no migration state was refused ($n messages)" test "$n" -eq 0
tap_ok "remove mdev 1" remove_mdev "$u1"
tap_ok "remove mdev 2" remove_mdev "$u2"
teardown_nvmet
tap_done
