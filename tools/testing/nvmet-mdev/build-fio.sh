#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The test VMs' fio: the source of the fio this machine has installed
# (Debian's source package, fetched through a private apt configuration
# as fetch-kernel.sh does; Debian's own patches only touch its packaging
# build), built static, for any x86-64 CPU (the nested guests' is qemu64),
# and without the engines that need other libraries, into BUILD/fio/fio.
#
# Debian's fio links 64 shared libraries (Ceph, GlusterFS, RDMA, PMDK,
# ICU, ...; 84 MB), and a nested guest pays for each one at every start:
# measured in a 1-vCPU guest with nothing else running, "fio --version"
# took 68 s on a fresh boot and a 4 MiB job 15 to 21 s afterwards; this
# fio 2.2 s and 0.8 to 1.2 s.  The tests only use io_uring.
#
# Usage: build-fio.sh BUILD_DIR
set -euo pipefail

build=$1
here=$(cd "$(dirname "$0")" && pwd)
ver=$(dpkg-query -W -f='${Version}' fio)
upstream=${ver%-*}
upstream=${upstream#*:}
out=$build/fio

if [ -x "$out/fio" ] && [ "$(cat "$out/version" 2>/dev/null)" = "$ver" ]; then
	exit 0
fi

dl=$build/apt-src/download
# orig_tarball: the upstream source apt-get source fetched, if it has.
orig_tarball() {
	local f

	for f in "$dl"/fio_"$upstream".orig.tar.*; do
		case $f in *.asc) ;; *) [ -f "$f" ] && echo "$f" ;; esac
	done
}
orig=$(orig_tarball || true)
if [ -z "$orig" ]; then
	suite=$(. /etc/os-release && echo "$VERSION_CODENAME")
	APT_CONFIG=$("$here"/private-apt.sh "$build"/apt-src deb-src "$suite")
	export APT_CONFIG
	mkdir -p "$dl"
	(cd "$dl" && apt-get -q source --download-only "fio=$ver")
	orig=$(orig_tarball)
fi

echo "  FIO     $ver (static, io_uring and the built-in engines)"
src=$build/fio-src
rm -rf "$src" "$out.tmp"
mkdir -p "$src" "$out.tmp"
tar -xf "$orig" -C "$src" --strip-components=1
if ! (cd "$src" &&
      ./configure --build-static --disable-native --cc="ccache gcc" \
		--disable-numa --disable-rdma --disable-rados --disable-rbd \
		--disable-http --disable-gfapi --disable-pmem --disable-xnvme \
		--disable-libzbc --disable-tcmalloc --disable-dfs --disable-lex &&
      make -j"$(nproc)" fio) > "$src"/build.log 2>&1; then
	tail -30 "$src"/build.log >&2
	echo "build-fio.sh: building fio failed (log: $src/build.log)" >&2
	exit 1
fi
install -s "$src"/fio "$out.tmp"/fio
echo "$ver" > "$out.tmp"/version
rm -rf "$out"
mv "$out.tmp" "$out"
