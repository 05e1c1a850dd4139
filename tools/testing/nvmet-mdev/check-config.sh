#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Fail if the resolved .config lost an option the fragment asks for
# (a missing dependency makes Kconfig drop it silently).
# Usage: check-config.sh FRAGMENT DOTCONFIG
set -euo pipefail
bad=0
while IFS= read -r line; do
	case "$line" in CONFIG_*=*) ;; *) continue ;; esac
	opt=${line%%=*} want=${line#*=}
	got=$(grep -E "^$opt=|^# $opt is not set" "$2" || true)
	case "$want" in
	n) [[ -z "$got" || "$got" == "# $opt is not set" ]] && continue ;;
	*) [[ "$got" == "$opt=$want" ]] && continue ;;
	esac
	echo "check-config: $opt wanted $want, got '${got:-absent}'" >&2
	bad=1
done < "$1"
exit $bad
