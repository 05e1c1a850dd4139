#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Fetch Debian's linux-source package with "apt-get download" through a
# private apt configuration under $BUILD/apt, and unpack it into $SRC.
# The system's apt configuration is only read (debian-mirror.sh learns the
# Debian mirror from it), never modified.  Nothing is fetched or unpacked
# again if already present.
#
# Usage: fetch-kernel.sh BUILD_DIR SRC_DIR PACKAGE VERSION SUITE
set -euo pipefail

build=$1 src=$2 pkg=$3 ver=$4 suite=$5
apt=$build/apt
stamp=$src/.nvmet-mdev-unpacked

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$pkg=$ver" ]; then
	exit 0
fi

deb=$(ls "$apt"/download/"${pkg}"_"${ver}"_all.deb 2>/dev/null || true)
if [ -z "$deb" ]; then
	APT_CONFIG=$("$(dirname "$0")"/private-apt.sh "$apt" deb "$suite")
	export APT_CONFIG
	mkdir -p "$apt"/download
	(cd "$apt"/download && apt-get -q download "$pkg=$ver")
	deb=$(ls "$apt"/download/"${pkg}"_"${ver}"_all.deb)
fi

echo "  UNPACK  $pkg $ver"
rm -rf "$src" "$src.tmp"
mkdir -p "$src.tmp"
dpkg-deb --fsys-tarfile "$deb" |
	tar -xO --wildcards './usr/src/linux-source-*.tar.xz' |
	xz -dc -T0 | tar -x -C "$src.tmp" --strip-components=1
echo "$pkg=$ver" > "$src.tmp"/.nvmet-mdev-unpacked
mv "$src.tmp" "$src"
