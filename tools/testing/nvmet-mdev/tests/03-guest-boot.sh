#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A nested KVM guest boots our kernel inside the TCG host VM.
. "$(dirname "$0")/../lib.sh"

tap_ok "/dev/kvm exists in the host VM" test -c /dev/kvm
out=$(run_guest -- sh -c 'echo guest-kernel=$(uname -r); grep -c ^processor /proc/cpuinfo')
rc=$?
echo "$out" | tail -n 5 | sed 's/^/# /'
tap_ok "the guest ran a command and exited cleanly" test $rc -eq 0
tap_ok "the guest runs our guest kernel" eval 'grep -q "guest-kernel=$(uname -r)-guest" <<<"$out"'
tap_done
