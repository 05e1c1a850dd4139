# SPDX-License-Identifier: GPL-2.0
#
# Helpers for the nvmet-mdev tests and the demo, sourced by bash scripts
# that run inside the host VM.

NVMET_MDEV_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
NVMET_MDEV_HARNESS=$NVMET_MDEV_TOP/tools/testing/nvmet-mdev
NVMET_CFS=/sys/kernel/config/nvmet

# --- TAP ------------------------------------------------------------------
_tap_n=0
_tap_failed=0

# tap_ok DESCRIPTION COMMAND [ARGS...]: one TAP result, ok if COMMAND succeeds.
tap_ok() {
	local desc=$1; shift
	_tap_n=$((_tap_n + 1))
	if "$@"; then
		echo "ok $_tap_n $desc"
	else
		echo "not ok $_tap_n $desc"
		_tap_failed=$((_tap_failed + 1))
	fi
}

tap_skip() {
	_tap_n=$((_tap_n + 1))
	echo "ok $_tap_n $1 # SKIP $2"
}

tap_done() {
	echo "1..$_tap_n"
	[ $_tap_failed -eq 0 ]
}

# tap_run [-p PREFIX] [-o FILE] COMMAND [ARGS...]: run a command that
# reports TAP of its own (client/run.sh) as part of this test's one stream:
# its results are numbered on from ours (their descriptions prefixed with
# PREFIX), its version and plan lines dropped, the rest passed through as it
# comes (and written to FILE too).  A command that fails without a failing
# result of its own adds one.  Not in a pipeline: it counts for tap_done.
# The output comes through a FIFO: the test VM has no /dev/fd for a
# process substitution.
tap_run() {
	local prefix='' file=/dev/null line rc fifo pid bad=0

	while [ $# -gt 0 ]; do
		case $1 in
		-p) prefix=$2; shift 2 ;;
		-o) file=$2; : > "$file"; shift 2 ;;
		*) break ;;
		esac
	done
	fifo=$(mktemp -u /tmp/.tap_run.XXXXXX)
	if ! mkfifo "$fifo"; then
		tap_ok "${prefix}$1: a FIFO for its output" false
		return 1
	fi
	"$@" > "$fifo" &
	pid=$!
	while IFS= read -r line; do
		case $line in
		"TAP version "* | 1..[0-9]*) continue ;;
		"ok "[0-9]* | "not ok "[0-9]*)
			_tap_n=$((_tap_n + 1))
			if [[ $line == "not ok "* ]]; then
				line=${line#not ok }
				line="not ok $_tap_n $prefix${line#* }"
				if [[ $line != *"# "@(SKIP|TODO|XFAIL)* ]]; then
					_tap_failed=$((_tap_failed + 1))
					bad=1
				fi
			else
				line=${line#ok }
				line="ok $_tap_n $prefix${line#* }"
			fi
			;;
		esac
		echo "$line"
		echo "$line" >> "$file"
	done < "$fifo"
	wait "$pid"
	rc=$?
	rm -f "$fifo"
	if [ "$rc" -ne 0 ] && [ $bad -eq 0 ]; then
		tap_ok "${prefix}$1 exited with status $rc" false
		bad=1
	fi
	return $bad
}

die() {
	echo "# FATAL: $*"
	_tap_n=$((_tap_n + 1))
	echo "not ok $_tap_n $*"
	echo "1..$_tap_n"
	exit 1
}

# pause SECONDS: wait, without an exec.  In the host VM an exec (sleep's
# too) costs about a quarter of a second of its one vCPU, which the nested
# guests share: a loop that sleeps each second while a guest runs would
# take that much of the guest's time.  A read with a timeout from a FIFO
# that nobody writes waits instead.
pause() {
	if [ -z "${_pause_fd-}" ]; then
		mkfifo "/tmp/.pause.$BASHPID" &&
			exec {_pause_fd}<>"/tmp/.pause.$BASHPID"
		rm -f "/tmp/.pause.$BASHPID"
	fi
	read -r -t "$1" -u "$_pause_fd"
	return 0
}

# --- the machine's state, in the test VM only ------------------------------
# The helpers below add and remove nvmet subsystems, ports and mdevs
# (teardown_nvmet removes every one there is) and start a libvirtd of their
# own, as if the machine were theirs: the host VM that vm.sh boots is, its
# PID 1 being this harness's init.sh.  Anywhere else they refuse (status 1,
# a message on stderr) and touch nothing.

# in_test_vm: whether this runs in a VM that vm.sh booted.
in_test_vm() {
	local argv=()

	mapfile -d '' argv 2>/dev/null < /proc/1/cmdline || return 1
	[[ ${argv[1]-} == */tools/testing/nvmet-mdev/init.sh ]]
}

# test_vm_only WHAT: succeed in the test VM; elsewhere say that WHAT was
# refused, and fail.
test_vm_only() {
	in_test_vm && return 0
	echo "lib.sh: $1 refused: not in a test VM (vm.sh); the machine's" \
		"nvmet, mdev and libvirt state are not the tests' to change" >&2
	return 1
}

# --- nvmet configfs -------------------------------------------------------

# make_subsys NQN BACKING [SIZE]: a subsystem with one namespace on BACKING,
# a file created with SIZE (default 256M) unless it exists, or a block device.
make_subsys() {
	local nqn=$1 backing=$2 size=${3:-256M}
	test_vm_only make_subsys || return 1
	modprobe nvmet || return 1
	[ -e "$backing" ] || truncate -s "$size" "$backing" || return 1
	mkdir -p "$NVMET_CFS/subsystems/$nqn/namespaces/1" || return 1
	echo 1 > "$NVMET_CFS/subsystems/$nqn/attr_allow_any_host" || return 1
	echo -n "$backing" > "$NVMET_CFS/subsystems/$nqn/namespaces/1/device_path" || return 1
	echo 1 > "$NVMET_CFS/subsystems/$nqn/namespaces/1/enable"
}

# make_port ID: an mdev port; link_subsys ID NQN: link a subsystem to it.
make_port() {
	test_vm_only make_port || return 1
	mkdir -p "$NVMET_CFS/ports/$1" || return 1
	echo mdev > "$NVMET_CFS/ports/$1/addr_trtype"
}

link_subsys() {
	test_vm_only link_subsys || return 1
	ln -s "$NVMET_CFS/subsystems/$2" "$NVMET_CFS/ports/$1/subsystems/$2"
}

unlink_subsys() {
	test_vm_only unlink_subsys || return 1
	rm -f "$NVMET_CFS/ports/$1/subsystems/$2"
}

# The mdev parent of port ID and its (only) mdev type directory.
port_parent() {
	echo "/sys/class/mdev_bus/nvmet-mdev-port$1"
}

port_type_dir() {
	local d
	for d in "$(port_parent "$1")"/mdev_supported_types/*; do
		[ -d "$d" ] && { echo "$d"; return 0; }
	done
	return 1
}

# create_mdev PORT [UUID]: prints the UUID of a new mdev.
create_mdev() {
	local uuid=${2:-$(cat /proc/sys/kernel/random/uuid)} t
	test_vm_only create_mdev || return 1
	t=$(port_type_dir "$1") || return 1
	echo "$uuid" > "$t/create" || return 1
	echo "$uuid"
}

# same_host FROM TO: give mdev TO the host NQN and host ID of mdev FROM,
# as a migration's destination must have (Documentation/nvme/mdev.rst).
same_host() {
	local d=/sys/bus/mdev/devices nqn id
	read -r nqn < "$d/$1/hostnqn" && read -r id < "$d/$1/hostid" &&
		echo "$nqn" > "$d/$2/hostnqn" && echo "$id" > "$d/$2/hostid"
}

remove_mdev() {
	test_vm_only remove_mdev || return 1
	echo 1 > "/sys/bus/mdev/devices/$1/remove"
}

# setup_default PORT NQN BACKING [SIZE]: subsystem, port, link; the common
# case.
setup_default() {
	test_vm_only setup_default || return 1
	make_subsys "$2" "$3" "${4:-}" || return 1
	make_port "$1" || return 1
	link_subsys "$1" "$2"
}

# teardown: remove every mdev, port and subsystem we made.
teardown_nvmet() {
	local d
	test_vm_only teardown_nvmet || return 1
	for d in /sys/bus/mdev/devices/*; do
		[ -e "$d/remove" ] && echo 1 > "$d/remove"
	done
	for d in "$NVMET_CFS"/ports/*/subsystems/*; do
		[ -L "$d" ] && rm -f "$d"
	done
	for d in "$NVMET_CFS"/ports/*; do
		[ -d "$d" ] && rmdir "$d"
	done
	for d in "$NVMET_CFS"/subsystems/*; do
		[ -d "$d" ] || continue
		[ -d "$d/namespaces/1" ] && echo 0 > "$d/namespaces/1/enable" &&
			rmdir "$d/namespaces/1"
		rmdir "$d"
	done
	return 0
}

# foll_pins: pages pinned with FOLL_PIN and not yet unpinned, system-wide
# (/proc/vmstat): vfio's type1 and iommufd pin guest pages that way for
# vfio_pin_pages().
foll_pins() {
	awk '/^nr_foll_pin_acquired / { a = $2 } /^nr_foll_pin_released / { r = $2 }
		END { print a - r }' /proc/vmstat
}

# nvmet_ctrls NQN: how many nvmet controllers the subsystem has (nvmet's
# debugfs, CONFIG_NVME_TARGET_DEBUGFS).
nvmet_ctrls() {
	local n=0 d
	[ -d /sys/kernel/debug/nvmet ] || { echo "no-nvmet-debugfs"; return 1; }
	for d in "/sys/kernel/debug/nvmet/$1"/ctrl*; do
		[ -d "$d" ] && n=$((n + 1))
	done
	echo $n
}

# settle CMD...: CMD succeeds within 20 s (a release may finish in a work
# item after QEMU is reaped).
settle() {
	local i
	for ((i = 0; i < 100; i++)); do
		"$@" && return 0
		pause 0.2
	done
	return 1
}

# released_now NQN PINS0: the subsystem has no nvmet controller and the
# pinned pages are back to PINS0.
released_now() {
	[ "$(nvmet_ctrls "$1")" -eq 0 ] && [ "$(foll_pins)" -le "$2" ]
}

# released PREFIX NQN PINS0: once a guest's QEMU has gone, the subsystem has
# no nvmet controller left and the pages pinned for the guest are unpinned
# (foll_pins back to PINS0, its value before QEMU started), within 20 s.
released() {
	settle released_now "$2" "$3"
	tap_ok "$1: no nvmet controller is left ($(nvmet_ctrls "$2"))" \
		test "$(nvmet_ctrls "$2")" -eq 0
	tap_ok "$1: the pinned pages are unpinned ($(($(foll_pins) - $3)) left)" \
		test "$(foll_pins)" -le "$3"
}

# --- nested guests ----------------------------------------------------------

# start_libvirtd: a system libvirtd for "vm.sh --libvirt".  The VM's root is
# read-only, so libvirtd runs in its own mount namespace with tmpfs over
# /var/lib and /var/cache and a writable copy of /etc/libvirt whose qemu.conf
# runs QEMU as root without a security driver, cgroups, a private /dev or
# virtlogd (none of which this VM's init sets up).  libvirtd looks up the
# QEMU user it was built with (Debian: libvirt-qemu, group kvm) before it
# reads qemu.conf, so the namespace also gets a passwd and group file that
# have them.  Logs go to /run/libvirtd.log.
start_libvirtd() {
	local etc=/run/nvmet-mdev-libvirt-etc
	test_vm_only start_libvirtd || return 1
	command -v libvirtd >/dev/null || { echo "no libvirtd (make deps)" >&2; return 1; }
	mkdir -p $etc/libvirt /var/log/libvirt
	cp -a /etc/libvirt/. $etc/libvirt/
	cp /etc/passwd /etc/group $etc/
	grep -q '^libvirt-qemu:' $etc/passwd ||
		echo 'libvirt-qemu:x:64055:64055::/nonexistent:/usr/sbin/nologin' >> $etc/passwd
	grep -q '^libvirt-qemu:' $etc/group || echo 'libvirt-qemu:x:64055:' >> $etc/group
	grep -q '^kvm:' $etc/group || echo 'kvm:x:64056:' >> $etc/group
	cat > $etc/libvirt/qemu.conf <<-EOF
	user = "root"
	group = "root"
	security_driver = "none"
	namespaces = [ ]
	cgroup_controllers = [ ]
	stdio_handler = "file"
	EOF
	unshare -m --propagation private sh -c "mount --bind $etc/libvirt /etc/libvirt &&
		mount --bind $etc/passwd /etc/passwd && mount --bind $etc/group /etc/group &&
		mount -t tmpfs none /var/lib && mount -t tmpfs none /var/cache &&
		exec libvirtd" > /run/libvirtd.log 2>&1 &
	for _ in $(seq 100); do
		virsh -q -c qemu:///system version >/dev/null 2>&1 && return 0
		sleep 0.2
	done
	echo "libvirtd did not start:" >&2
	tail -20 /run/libvirtd.log >&2
	return 1
}

# run_guest [vm.sh options] -- command: a nested KVM guest with our kernel.
# Its console goes to stdout (for the caller to capture) and, prefixed, to
# stderr, so that the test log shows the guest as it runs.  In the 1-vCPU
# host VM a guest's firmware, kernel and init all run TCG-emulated and each
# exec costs it seconds: with qboot and init.sh's vminit its command starts
# about a minute after QEMU does on a quiet machine, two to four on a
# loaded one; its I/O on a loaded machine is what the 15 minutes leave
# room for.  The guest's nvme driver does not retry failed commands
# (nvme_core.max_retries=0): a device error fails the I/O that met it
# instead of passing unseen; a test that wants retries appends its own
# value.
run_guest() {
	"$NVMET_MDEV_HARNESS/vm.sh" --guest --timeout "${NVMET_MDEV_GUEST_TIMEOUT:-900}" \
		--echo-prefix 'guest| ' --append nvme_core.max_retries=0 "$@"
}

# guest_stuck DIR WHAT: the nested guests whose vm.sh run directories are
# in DIR (their TMPDIR) have not done what they should have by now: say
# what each mdev fetched and completed (a guest that waits for a command
# the device never completed, or for something else), where their vCPUs
# are and what their consoles last said, and stop them.
guest_stuck() {
	local d s
	for s in /sys/kernel/debug/nvmet-mdev/*/stats; do
		[ -e "$s" ] || continue
		d=${s%/stats}
		echo "# $2: mdev ${d##*/}:" \
			"$(grep -E '^(commands|completions|interrupts) ' "$s" | tr '\n' ' ')"
	done
	for d in "$1"/nvmet-mdev-vm.*; do
		[ -d "$d" ] || continue
		echo "# $2: the guest's vCPUs and the end of its console:"
		"$NVMET_MDEV_HARNESS/vm-state.py" "$d/qmp.sock" \
			"$NVMET_MDEV_TOP/build/obj-guest/System.map" "# $2: "
		tail -n 40 "$d/console" | sed "s/^/# $2 console: /"
		pkill -f -- "path=$d,security_model"
	done
}

# guest_tell RUN NAME: tell the guests whose TMPDIR is RUN NAME (check.sh
# waits for /run/nvmet-mdev/NAME, which is NAME in the guest's run
# directory).
guest_tell() {
	local d
	for d in "$1"/nvmet-mdev-vm.*; do
		[ -d "$d" ] && touch "$d/$2"
	done
	return 0
}

# guest_said RUN PID NAME SECONDS: within SECONDS, while the guest's vm.sh
# (PID) runs, the guest said NAME in its run directory (under RUN, its
# TMPDIR; check.sh writes /run/nvmet-mdev/NAME).
guest_said() {
	local end=$((SECONDS + $4))
	while [ $SECONDS -lt $end ] && kill -0 "$2" 2>/dev/null; do
		compgen -G "$1/*/$3" >/dev/null && return 0
		pause 1
	done
	compgen -G "$1/*/$3" >/dev/null
}

# A guest command (for bash -c) printing "pci VENDOR DEVICE CLASS" per PCI
# function, with builtins only: each exec costs a nested guest seconds.
# shellcheck disable=SC2016
pci_list_cmd='for d in /sys/bus/pci/devices/*; do
	read -r v < "$d/vendor"; read -r i < "$d/device"; read -r c < "$d/class"
	echo "pci $v $i $c"
done'

# mdev_stat UUID NAME: an event counter of the mdev (since it was last
# opened; debugfs, see Documentation/nvme/mdev.rst).
mdev_stat() {
	local name val
	while read -r name val; do
		[ "$name" = "$2" ] && echo "$val" && return 0
	done < "/sys/kernel/debug/nvmet-mdev/$1/stats"
	return 1
}

# io_stat GROUP DEV KEY: a counter of cgroup GROUP's io.stat for the block
# device DEV (MAJ:MIN), e.g. rios or wios; 0 before the group's first I/O.
io_stat() {
	local line f
	while read -r line; do
		[ "${line%% *}" = "$2" ] || continue
		for f in $line; do
			[ "${f%%=*}" = "$3" ] && echo "${f#*=}" && return
		done
	done < "$1/io.stat"
	echo 0
}

# guest_shutdown PREFIX UUID OUTPUT [N]: after a guest's power-off, the mdev
# counted one completed shutdown (CC.SHN) and the guest's console shows no
# aborted one (the nvme driver shuts down after the guest's dmesg dump).
# N: the count, when the mdev is gone (its last look at the counters).
guest_shutdown() {
	local n aborted=0
	n=${4-$(mdev_stat "$2" shutdowns)}
	tap_ok "$1: the guest shut the controller down at power-off ($n)" \
		test "$n" = 1
	[[ $3 == *"Device not ready; aborting shutdown"* ]] && aborted=1
	tap_ok "$1: no aborted shutdown on the guest's console" \
		test $aborted -eq 0
}

# guest_checks PREFIX OUTPUT: TAP results from a guest's "check:" lines.
guest_checks() {
	local prefix=$1 line n=0
	while IFS= read -r line; do
		line=${line%$'\r'}
		case "$line" in
		"check: ok: "*) tap_ok "$prefix: ${line#check: ok: }" true; n=$((n + 1)) ;;
		"check: fail: "*) tap_ok "$prefix: ${line#check: fail: }" false; n=$((n + 1)) ;;
		esac
	done <<<"$2"
	[ $n -gt 0 ] || tap_ok "$prefix: the guest reported its checks" false
}

# acked_in IMAGE RUNS OUTPUT: the guest's ack_end lines in OUTPUT ("acked:
# ID FIRST COUNT") are RUNS, and the blocks each says were acknowledged
# hold their stamps in the namespace's backing file IMAGE (read once QEMU
# has gone).
acked_in() {
	local aw=$NVMET_MDEV_HARNESS/client/out/ackwrite acked runs i first n
	acked=$(sed -n 's/^acked: \([0-9]* [0-9]* [0-9]*\)\r\{0,1\}$/\1/p' <<<"$3")
	runs=$(grep -c . <<<"$acked")
	tap_ok "the guest stamped blocks in $2 runs ($runs)" test "$runs" -eq "$2"
	while read -r i first n; do
		[ -n "$i" ] || continue
		tap_ok "the $n blocks acknowledged from block $first (id $i) are in $1" \
			"$aw" check "$1" "$i" "$n" "$first"
	done <<<"$acked"
}
