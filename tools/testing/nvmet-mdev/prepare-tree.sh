#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Make $SRC the pristine kernel plus our patch series plus our own files.
#
# Patches: the series that is applied is remembered in $SRC/.nvmet-mdev-patches/.
# When patches/ changes, the old series is reversed and the new one applied,
# so only the files the patches touch get new timestamps and kbuild rebuilds
# only what depends on them.
#
# Our own files (the driver directory, the nvmet core's PCI transport
# helpers and their KUnit tests, the documentation) are symlinked into the
# tree, so editing them needs no copy step at all.
#
# Usage: prepare-tree.sh REPO_DIR SRC_DIR
set -euo pipefail

repo=$1 src=$2
applied=$src/.nvmet-mdev-patches

same_series() {
	[ -f "$applied/series" ] || return 1
	cmp -s "$applied/series" "$repo/patches/series" || return 1
	local p
	while read -r p; do
		[ -n "$p" ] || continue
		cmp -s "$applied/$p" "$repo/patches/$p" || return 1
	done < <(grep -v '^#' "$repo/patches/series")
}

if ! same_series; then
	if [ -f "$applied/series" ]; then
		tac "$applied/series" | grep -v '^#' | while read -r p; do
			[ -n "$p" ] || continue
			echo "  UNPATCH $p"
			patch -s -R -p1 -d "$src" < "$applied/$p"
		done
	fi
	rm -rf "$applied"
	mkdir -p "$applied.new"
	grep -v '^#' "$repo/patches/series" | while read -r p; do
		[ -n "$p" ] || continue
		echo "  PATCH   $p"
		if ! patch -s -N -p1 --no-backup-if-mismatch -d "$src" < "$repo/patches/$p"; then
			echo "prepare-tree: $p does not apply; remove $src to start over" >&2
			exit 1
		fi
		cp "$repo/patches/$p" "$applied.new/$p"
	done
	cp "$repo/patches/series" "$applied.new/series"
	mv "$applied.new" "$applied"
fi

link() {
	local target=$repo/$1 name=$src/$1
	if [ "$(readlink "$name" 2>/dev/null)" != "$target" ]; then
		rm -rf "$name"
		mkdir -p "$(dirname "$name")"
		ln -s "$target" "$name"
	fi
}
# A link to a file the repository no longer has goes (make-patches.sh
# takes the driver's files from these links).
find "$src" -xtype l -lname "$repo/*" -delete
link drivers/nvme/target/mdev
link drivers/nvme/target/pci-common.c
link drivers/nvme/target/pci-common.h
link drivers/nvme/target/tests/pci_common_kunit.c
link Documentation/nvme/mdev.rst
link Documentation/ABI/testing/sysfs-bus-mdev-devices-nvmet-mdev
