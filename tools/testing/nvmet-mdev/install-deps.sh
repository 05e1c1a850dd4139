#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Install the Debian packages the build, the VM harness and the tests use.
# Does nothing (and needs no network) when they are all there already.
#
# QEMU and libvirt come from the release's backports suite on Debian 12
# (QEMU 10.0 and libvirt 11.3 there, 7.2 and 9.0 in bookworm itself), the
# way a Debian user gets them: the suite is added, with the mirror the
# system already uses, as one file in /etc/apt/sources.list.d unless a
# source for it is configured already; nothing else of apt's configuration
# is touched.  QEMU 7.2 has no iommufd backend and no VFIO migration v2.
#
# nvmetcli is packaged in Debian's unstable suite only (0.9, all
# architectures, Python): its package is fetched from there through a
# private apt configuration (private-apt.sh) and installed with dpkg, its
# one dependency from the release.
set -euo pipefail

pkgs=(
	# kernel build
	build-essential bc bison flex libelf-dev libssl-dev cpio kmod xz-utils
	ccache sparse dwarves python3 rsync perl
	# VM harness and tests inside it
	busybox-static e2fsprogs util-linux procps gdb
	nvme-cli fio mdevctl iproute2 pciutils udev python3-configshell-fb
)
# Package, lowest version: QEMU runs the TCG host VM and the nested KVM
# guests; 13-libvirt runs its own libvirtd in the host VM (no
# libvirt-daemon-system: no service on this machine), with its QEMU and
# node device drivers (packages of their own in libvirt 11.3's Debian
# packaging; bookworm's 9.0 had the latter in libvirt-daemon).  QEMU's
# common, data and firmware packages are named too: given only
# qemu-system-x86/bookworm-backports, apt (2.6, Debian 12.15) keeps
# bookworm's versions of them and refuses ("Depends: qemu-system-common
# (= 1:10.0.2...) but 1:7.2... is to be installed"), while libvirt's
# versioned dependencies do follow to backports.
virt=(
	qemu-system-x86:1:10.0 qemu-system-common:1:10.0
	qemu-system-data:1:10.0 seabios:1.16.3 qemu-utils:1:10.0
	libvirt-daemon:11.3 libvirt-daemon-driver-qemu:11.3
	libvirt-daemon-driver-nodedev:11.3 libvirt-clients:11.3
)

# The installed version of a package, or nothing.
installed() {
	{ dpkg-query -W -f='${Status} ${Version}\n' "$1" 2>/dev/null || true; } |
		awk '$1 == "install" && $3 == "installed" { print $4 }'
}

# new_enough PACKAGE:MIN_VERSION: it is installed, at MIN_VERSION or later.
new_enough() {
	local v
	v=$(installed "${1%%:*}")
	[ -n "$v" ] && dpkg --compare-versions "$v" ge "${1#*:}"
}

missing=() virt_missing=()
for p in "${pkgs[@]}"; do
	[ -n "$(installed "$p")" ] || missing+=("$p")
done
for pv in "${virt[@]}"; do
	new_enough "$pv" || virt_missing+=("${pv%%:*}")
done
nvmetcli=
[ -n "$(installed nvmetcli)" ] || nvmetcli=nvmetcli
[ ${#missing[@]} -eq 0 ] && [ ${#virt_missing[@]} -eq 0 ] && [ -z "$nvmetcli" ] &&
	exit 0

echo "install-deps: installing ${missing[*]} ${virt_missing[*]} $nvmetcli"
[ "$(id -u)" -eq 0 ] || { echo "install-deps: run as root (or sudo make deps)" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive

. /etc/os-release
suffix=
if [ ${#virt_missing[@]} -gt 0 ] && [ "${VERSION_CODENAME:-}" = bookworm ]; then
	suite=bookworm-backports
	# pkg/suite, not -t: the backports suite only for these packages
	# and what their versioned dependencies need (-t would also move
	# systemd to backports, for an unversioned dependency).
	suffix=/$suite
	# An apt source that names the suite, not in a comment.
	if ! grep -qsE -- "^[^#]*[[:space:]]$suite([[:space:]]|\$)" \
			/etc/apt/sources.list /etc/apt/sources.list.d/*.list \
			/etc/apt/sources.list.d/*.sources; then
		uri=$("$(dirname "$0")"/debian-mirror.sh)
		echo "install-deps: adding $suite to /etc/apt/sources.list.d/$suite.sources"
		cat > /etc/apt/sources.list.d/"$suite".sources <<-EOS
		Types: deb
		URIs: $uri
		Suites: $suite
		Components: main
		Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
		EOS
	fi
fi
apt-get -q update
[ ${#missing[@]} -eq 0 ] ||
	apt-get -q install -y --no-install-recommends "${missing[@]}"
[ ${#virt_missing[@]} -eq 0 ] ||
	apt-get -q install -y --no-install-recommends "${virt_missing[@]/%/$suffix}"

if [ -n "$nvmetcli" ]; then
	tmp=$(mktemp -d)
	conf=$("$(dirname "$0")"/private-apt.sh "$tmp" deb unstable any-age)
	(cd "$tmp" && APT_CONFIG=$conf apt-get -q download nvmetcli)
	dpkg -i "$tmp"/nvmetcli_*_all.deb
	rm -rf "$tmp"
fi

for pv in "${virt[@]}"; do
	new_enough "$pv" ||
		{ echo "install-deps: ${pv%%:*} too old or missing, need ${pv#*:}" >&2; exit 1; }
done
