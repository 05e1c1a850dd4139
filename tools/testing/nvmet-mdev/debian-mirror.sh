#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Print the first Debian mirror this machine's apt is configured with
# (deb822 or one-line format).  Only reads /etc/apt; fetch-kernel.sh and
# install-deps.sh use it so that no mirror name is ever written down here.
set -euo pipefail

for f in /etc/apt/sources.list.d/*.sources; do
	[ -r "$f" ] || continue
	uri=$(awk '
		/^Types:/ { deb = ($0 ~ /[[:space:]]deb([[:space:]]|$)/) }
		/^URIs:/ && deb && $2 ~ /\/debian\/?$/ { print $2; exit }
		/^$/ { deb = 0 }' "$f")
	[ -n "$uri" ] && { echo "$uri"; exit 0; }
done
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
	[ -r "$f" ] || continue
	uri=$(awk '$1 == "deb" {
			for (i = 2; i <= NF; i++) if ($i !~ /^\[/ && $i !~ /\]$/) break
			if ($i ~ /\/debian\/?$/) { print $i; exit }
		}' "$f")
	[ -n "$uri" ] && { echo "$uri"; exit 0; }
done
echo "debian-mirror: no Debian mirror in /etc/apt" >&2
exit 1
