#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The harness itself: a command's status comes back from the VM, and a kernel
# WARNING (provoked with LKDTM) fails the run even though the command passed.
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/lib.sh"

"$here/vm.sh" --mem 1G --timeout 300 -- true
tap_ok "a passing command passes" test $? -eq 0

"$here/vm.sh" --mem 1G --timeout 300 -- sh -c 'exit 3'
tap_ok "a failing command's status comes back" test $? -eq 3

"$here/vm.sh" --mem 1G --timeout 300 -- sh -c \
	'echo WARNING > /sys/kernel/debug/provoke-crash/DIRECT; exit 0'
tap_ok "an LKDTM WARNING fails the run" test $? -eq 99

"$here/vm.sh" --mem 1G --timeout 300 -- sh -c 'echo "WARNING: BUG: KASAN Oops"; exit 0'
tap_ok "splat words in test output are not kernel splats" test $? -eq 0
tap_done
