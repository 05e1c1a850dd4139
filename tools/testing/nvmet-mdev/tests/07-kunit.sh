#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The KUnit suite of the nvmet core's PCI transport helpers (PRP and SGL
# walks, drivers/nvme/target/tests/pci_common_kunit.c), run in the host
# VM's kernel (KASAN, lockdep) by loading its module.  Each KUnit case is
# one result here, with KUnit's own name.
. "$(dirname "$0")/../lib.sh"
suite=nvmet-pci-common
results=/sys/kernel/debug/kunit/$suite/results

modprobe pci_common_kunit || die "modprobe pci_common_kunit"
[ -r "$results" ] || die "no KUnit results at $results"
sed 's/^/# /' "$results"

# The suite's KTAP: its plan "1..N", a line "    ok|not ok N name" per
# case, and "ok|not ok 1 nvmet-pci-common" for the whole suite.
cases=0 plan=
while IFS= read -r line; do
	case $line in
	"    1.."*) plan=${line#    1..} ;;
	"    ok "*)
		cases=$((cases + 1))
		tap_ok "kunit: ${line#    ok [0-9]* }" true ;;
	"    not ok "*)
		cases=$((cases + 1))
		tap_ok "kunit: ${line#    not ok [0-9]* }" false ;;
	esac
done < "$results"
tap_ok "kunit: $suite ran the $plan cases it planned ($cases)" \
	test -n "$plan" -a "$cases" = "$plan" -a "$cases" -gt 0
tap_ok "kunit: the suite passed" grep -q "^ok 1 $suite\$" "$results"
tap_ok "rmmod pci_common_kunit" rmmod pci_common_kunit
tap_done
