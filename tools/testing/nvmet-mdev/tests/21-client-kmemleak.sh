#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kmemleak over the userspace VFIO client: the hostile cases through the
# VFIO container and a short fuzz run (3000 commands) through iommufd,
# then the mdev is removed and nvmet-mdev unloaded, and a kmemleak scan
# must find no new leak.  The host kernel has kmemleak built in but off unless booted with
# kmemleak=on (CONFIG_DEBUG_KMEMLEAK_DEFAULT_OFF), hence the append line.
# It takes 15 minutes or more (the other 1200 s tests take one to six), and
# run-tests.sh starts the tests that ask for the most time first.
# timeout: 1500
# append: kmemleak=on
. "$(dirname "$0")/../lib.sh"
kl=/sys/kernel/debug/kmemleak
[ -w $kl ] || die "no $kl: kmemleak is off (kernel booted without kmemleak=on?)"

nqn=nqn.2026-11.org.example:kmemleak
setup_default 1 $nqn /tmp/client.img 64M || die "nvmet setup"
modprobe nvmet-mdev || die "modprobe nvmet-mdev"
uuid=$(create_mdev 1) || die "create mdev"
echo on > "/sys/bus/mdev/devices/$uuid/doorbell_mmap" || die "set doorbell_mmap"

# kmemleak_scan SECONDS_LABEL: one scan, timed.
kmemleak_scan() {
	local t=$SECONDS
	echo scan > $kl || return 1
	echo "# kmemleak: scan ($1) took $((SECONDS - t)) s"
}

# Whatever boot and the setup left unreferenced is not the client's: scan,
# then forget what was found.
kmemleak_scan "baseline" || die "kmemleak scan"
echo clear > $kl || die "kmemleak clear"

# The client's own results are 20-client's: here they are comments (some
# of its timing checks are not meant for a kernel slowed down by kmemleak),
# and the result is that both programs ran to their end.
c=$NVMET_MDEV_HARNESS/client/run.sh
client() {
	"$c" "$@" "$uuid" /tmp/client.img > /tmp/client.tap 2>&1
	sed 's/^/# /' /tmp/client.tap
	grep '^not ok' /tmp/client.tap | sed 's/^/# client failure under kmemleak: /'
	tap_ok "kmemleak: $* ran to its end" grep -q '^1\.\.[0-9]' /tmp/client.tap
}
client -b container -t hostile_test
NVMET_MDEV_FUZZ_CMDS=${NVMET_MDEV_KMEMLEAK_FUZZ_CMDS:-3000} \
NVMET_MDEV_FUZZ_WRITES=${NVMET_MDEV_KMEMLEAK_FUZZ_WRITES:-500} \
NVMET_MDEV_FUZZ_SECS=300 \
	client -b iommufd -t fuzz_test

tap_ok "kmemleak: remove the mdev" remove_mdev "$uuid"
teardown_nvmet
tap_ok "kmemleak: nvmet-mdev unloads" modprobe -r nvmet-mdev

# An object is reported once it is older than 5 s and was unreferenced in
# a scan; the second scan reports what the first one saw.
sleep 6
kmemleak_scan "1st" && sleep 1 && kmemleak_scan "2nd"
leaks=$(cat $kl)
n=$(grep -c '^unreferenced object' <<<"$leaks")
if [ -n "$leaks" ]; then
	echo "# kmemleak reports $n objects:"
	head -300 <<<"$leaks" | sed 's/^/#   /'
fi
tap_ok "kmemleak: no new leak after the client ($n reported)" test -z "$leaks"
tap_done
