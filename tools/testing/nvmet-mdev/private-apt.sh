#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Make DIR a private apt configuration whose one source is this machine's
# Debian mirror (debian-mirror.sh) for SUITE's main component, as TYPE
# ("deb" for binary packages, "deb-src" for source packages), fetch its
# package lists, and print the file to point APT_CONFIG at.  The system's
# own apt configuration is only read, never changed.  With "any-age", a
# Release file past its Valid-Until date is taken (a mirror's copy of a
# suite it no longer refreshes); its signature is checked all the same.
#
# Usage: private-apt.sh DIR TYPE SUITE [any-age]
set -euo pipefail

dir=$1 type=$2 suite=$3 age=${4-}
uri=$("$(dirname "$0")"/debian-mirror.sh)
mkdir -p "$dir"/etc/apt.conf.d "$dir"/etc/preferences.d "$dir"/lists/partial \
	"$dir"/cache/archives/partial "$dir"/state
echo "$type [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri $suite main" \
	> "$dir"/etc/sources.list
cat > "$dir"/apt.conf <<-EOF
	Dir::Etc "$dir/etc";
	Dir::Etc::sourcelist "$dir/etc/sources.list";
	Dir::Etc::sourceparts "-";
	Dir::State "$dir/state";
	Dir::State::lists "$dir/lists";
	Dir::State::status "/dev/null";
	Dir::Cache "$dir/cache";
	Acquire::Languages "none";
	APT::Sandbox::User "root";
	EOF
[ "$age" != any-age ] ||
	echo 'Acquire::Check-Valid-Until "false";' >> "$dir"/apt.conf
APT_CONFIG=$dir/apt.conf apt-get -q update >&2
echo "$dir/apt.conf"
