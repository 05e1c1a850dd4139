#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Each mdev presents the host NQN nqn.2014-08.org.nvmexpress:uuid:<uuid> to
# nvmet, so a subsystem's allowed_hosts decides per mdev (per VM) which
# controllers may be enabled.  The user space client (its perf tool)
# brings a controller up and does I/O.
. "$(dirname "$0")/../lib.sh"
nqn=nqn.2026-11.org.example:acl
perf=$NVMET_MDEV_HARNESS/client/out/perf
setup_default 1 $nqn /tmp/acl.img 64M || die "nvmet setup"
modprobe nvmet-mdev || die "modprobe nvmet-mdev"
ua=$(create_mdev 1) || die "create mdev a"
ub=$(create_mdev 1) || die "create mdev b"
hosta=nqn.2014-08.org.nvmexpress:uuid:$ua

tap_ok "mdev a's hostnqn is derived from its uuid" \
	grep -qx "$hosta" "/sys/bus/mdev/devices/$ua/hostnqn"
tap_ok "both mdevs can do I/O while any host is allowed" \
	eval "$perf -t 1 $ua >/dev/null && $perf -t 1 $ub >/dev/null"

# Only mdev a's host NQN is allowed.
mkdir "$NVMET_CFS/hosts/$hosta" || die "make host"
echo 0 > "$NVMET_CFS/subsystems/$nqn/attr_allow_any_host" || die "allow_any_host=0"
ln -s "$NVMET_CFS/hosts/$hosta" "$NVMET_CFS/subsystems/$nqn/allowed_hosts/$hosta" ||
	die "allow host"
tap_ok "the allowed mdev still does I/O" eval "$perf -t 1 $ua"
out=$($perf -t 1 "$ub" 2>&1)
rc=$?
echo "$out" | sed 's/^/# /'
tap_ok "the other one cannot bring its controller up" test $rc -ne 0
tap_ok "... because nvmet refused its host NQN" \
	eval "dmesg | grep -q 'nvmet: .*host.*uuid:$ub.*not allowed'"

rm "$NVMET_CFS/subsystems/$nqn/allowed_hosts/$hosta"
rmdir "$NVMET_CFS/hosts/$hosta"
teardown_nvmet
tap_ok "nvmet-mdev unloads" modprobe -r nvmet-mdev
tap_done
