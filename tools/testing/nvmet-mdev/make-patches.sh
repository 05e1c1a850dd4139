#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Write the whole work as a "git format-patch" series against the pristine
# kernel source, in the order upstream would take it:
#  - patches/series in its order: the stand-alone fixes first, then the
#    core changes the driver needs;
#  - our files in the nvmet core (the PCI transports' helpers and their
#    KUnit tests) folded into the series patch whose Makefile names them,
#    and the driver (drivers/nvme/target/mdev/, its documentation and ABI
#    entry) into the one that hooks it into Kconfig and the Makefile, so
#    that the tree builds at every step;
#  - the selftests (tools/testing/nvmet-mdev/) as a patch of their own,
#    right before the MAINTAINERS entry that names them.
#
# The pristine files are the ones the series touches, taken from SRC_DIR
# with the series that prepare-tree.sh applied there reversed.  Every patch
# goes in with "git am", which shows that it applies in order; the tree
# at the end is compared with SRC_DIR, the tree "make kernel" builds (no
# step before the last is built here).  checkpatch.pl --strict runs on
# every patch of the series; the kernel patches must be clean.
#
# Usage: make-patches.sh REPO_DIR SRC_DIR OUT_DIR
set -euo pipefail

repo=$(realpath "$1") src=$(realpath "$2") out=$(realpath -m "$3")
applied=$src/.nvmet-mdev-patches
work=$out.git
# The driver's own files: what prepare-tree.sh links into the tree.
mapfile -t driver < <(cd "$src" && find . -type l -lname "$repo/*" -printf '%P\n' |
		      sort)
marker=drivers/nvme/target/mdev
selftests=tools/testing/nvmet-mdev

die() { echo "make-patches: $*" >&2; exit 1; }
series() { grep -v '^#' "$1/series" | grep .; }

[ -f "$applied/series" ] || die "$src has no series applied (run make source)"
[ ${#driver[@]} -gt 0 ] || die "$src has no driver links (run make source)"
cmp -s "$applied/series" "$repo/patches/series" ||
	die "$src has another series applied (run make source)"

rm -rf "$work" "$out"
mkdir -p "$work"
git() { command git -C "$work" -c user.name=make-patches \
	-c user.email=make-patches@localhost -c core.abbrev=12 "$@"; }
git init -q

# The pristine files: what the series touches, with the series reversed.
while read -r f; do
	[ -e "$src/$f" ] || continue
	mkdir -p "$work/$(dirname "$f")"
	cp "$src/$f" "$work/$f"
done < <(series "$applied" | sed "s|^|$applied/|" | xargs grep -h '^+++ b/' |
	 sed 's|^+++ b/||; s|\t.*||' | sort -u)
series "$applied" | tac | while read -r p; do
	patch -s -R -p1 -d "$work" < "$applied/$p" || die "$p does not reverse"
done
git add -A
git commit -q -m "linux-source-7.3 (the files the series touches)"
base=$(git rev-parse HEAD)

# add_selftests: the test harness as one commit, by the author of HEAD.
add_selftests() {
	local name email
	name=$(git log -1 --format=%an) email=$(git log -1 --format=%ae)
	command git -C "$repo" ls-files -z "$selftests" |
		(cd "$repo" && xargs -0 cp --parents -t "$work")
	git add -A
	git -c user.name="$name" -c user.email="$email" commit -q -s -F - <<-EOF
	selftests: nvmet-mdev: add the VM test harness

	nvmet-mdev's tests need what kselftest cannot give them in place: a
	host kernel with the driver, nested KVM guests whose stock nvme driver
	binds to an mdev, and QEMU, libvirt and mdevctl around them.  The
	harness boots the kernel under test in a QEMU "host VM" (TCG is
	enough: with -cpu max it sees SVM and runs KVM guests inside), shares
	the host's root file system read-only over 9p, and runs each test in a
	VM of its own, reporting TAP.

	It holds the VM runner and its watchdogs, the tests (module load and
	sysfs, guests doing I/O, resets, kills, memory and cgroup accounting,
	libvirt), a user space VFIO NVMe client that drives the mdev the way a
	hostile guest would (bad registers, doorbells, PRPs, SGLs and queue
	ids, through both the legacy container and iommufd), and a benchmark
	against QEMU's own NVMe and virtio-blk devices.  README.md says how to
	run it.
	EOF
}

while read -r p; do
	if grep -q '^+++ b/MAINTAINERS' "$repo/patches/$p" &&
	   [ ! -e "$work/$selftests" ]; then
		add_selftests
	fi
	git am -q --committer-date-is-author-date "$repo/patches/$p" ||
		die "$p does not apply in order"
	# The patch that names a file's object in a Makefile brings the file
	# (the nvmet core's PCI helpers, their KUnit tests), with its header.
	fold=()
	for f in "${driver[@]}"; do
		case $f in "$marker"/*) continue ;; esac
		[ -e "$work/$f" ] && continue
		o=$(basename "${f%.*}").o d=$(dirname "$f")
		grep -qsw -- "$o" "$work/$d/Makefile" "$work/$(dirname "$d")/Makefile" &&
			fold+=("$f")
	done
	if [ ${#fold[@]} -gt 0 ]; then
		(cd "$repo" && cp --parents -t "$work" "${fold[@]}")
		git add -A
		git commit -q --amend --no-edit
	fi
	# The patch that hooks the driver into the build brings the driver.
	if grep -qs 'mdev/Kconfig' "$work/drivers/nvme/target/Kconfig" &&
	   [ ! -e "$work/$marker" ]; then
		command git -C "$repo" ls-files -z "${driver[@]}" |
			(cd "$repo" && xargs -0 cp --parents -t "$work")
		git add -A
		git commit -q --amend --no-edit
	fi
done < <(series "$repo/patches")
[ -e "$work/$marker" ] || die "no patch hooks the driver into Kconfig"
[ -e "$work/$selftests" ] || add_selftests

# The tree at the end is the one "make kernel" builds.
while read -r f; do
	case $f in "$marker"/* | "$selftests"/*) continue ;; esac
	cmp -s "$work/$f" "$src/$f" || die "$f differs from $src/$f"
done < <(git diff --name-only "$base" HEAD)

# The cover letter's subject and text: patches/cover-letter.
git config "branch.$(git symbolic-ref --short HEAD).description" \
	"$(cat "$repo/patches/cover-letter")"
git -c user.name="$(git log -1 --format=%an)" \
	-c user.email="$(git log -1 --format=%ae)" \
	format-patch -q --cover-letter --cover-from-description=subject \
	--filename-max-length=100 -o "$out" "$base..HEAD"
rm -rf "$work"

# The selftests' shell, C and Python are not checkpatch clean yet: their
# counts are printed, the kernel patches must be clean.  There is no git
# history to check Fixes: ids against, and nvmet.h writes the transport
# flags as (1 << n), which a patch that adds one follows.
bad=0
for p in "$out"/0*.patch; do
	case $p in */0000-cover-letter.patch) continue ;; esac
	msg=$(cd "$src" && ./scripts/checkpatch.pl --strict --no-tree -q \
		--ignore FILE_PATH_CHANGES,UNKNOWN_COMMIT_ID,BIT_MACRO \
		- < "$p" 2>/dev/null) && continue
	case $p in
	*-selftests-nvmet-mdev-*)
		echo "make-patches: ${p##*/}: $(grep '^total:' <<<"$msg")" ;;
	*)
		echo "${p##*/}:"
		echo "$msg"
		bad=1 ;;
	esac
done
[ $bad = 0 ] || die "checkpatch --strict complains (above)"
echo "make-patches: $out: $(find "$out" -name '0*.patch' | wc -l) files" \
	"(a cover letter and the series), applied in order with git am"
