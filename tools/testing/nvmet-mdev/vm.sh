#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Boot build/bzImage in QEMU and run one command inside as root.
#
#   vm.sh [options] -- command [args...]
#   vm.sh --interactive
#
# Outside a VM this starts the TCG "host VM" (-cpu max: it sees AMD SVM, so
# KVM works inside it).  Inside the host VM, "vm.sh --guest" starts a nested
# KVM guest (-cpu qemu64) with the same kernel.  Either way the root file
# system is the current "/" shared read-only over 9p, so the repository and
# every installed tool are visible at the same paths.
#
# The console is streamed to stdout, QEMU's own messages to stderr
# (prefixed "vm.sh: qemu: ").  The exit status is the command's, but
# a kernel splat (BUG, WARNING, Oops, KASAN, UBSAN, lockdep, RCU stall,
# hung task, soft lockup, ...) in the VM's log fails the run (status 99),
# and a VM that died before reporting a status gives 98, one that reported
# its status but did not power off within the timeout 97.
#
# Options:
#   --smp N          vCPUs (default 1; see the README on TCG and 2 vCPUs)
#   --mem SIZE       memory (default 3G for the host VM, 1G for a guest)
#   --timeout SEC    kill the VM after SEC seconds (default 900)
#   --guest          nested KVM guest (run inside the host VM)
#   --seabios        boot a guest through SeaBIOS, QEMU's default firmware
#                    (guests boot through qboot otherwise; see below)
#   --mdev UUID      attach an mdev with vfio-pci (guest only; repeatable)
#   --nvme SIZE      attach a QEMU-emulated NVMe controller (model "QEMU NVMe
#                    Ctrl", serial nvmet-mdev-nvme) with one namespace of
#                    SIZE on a sparse file in the run directory (host VM:
#                    the controller of 22-guest-deploy's passthru subsystem)
#   --iommufd        attach mdevs through iommufd instead of the container
#   --user UID       run a guest's QEMU as UID (group UID, no supplementary
#                    groups, no capabilities), as libvirt runs it; the
#                    caller gives UID the devices (/dev/kvm, /dev/vfio/...)
#   --memlock BYTES  a guest's QEMU's locked memory limit (RLIMIT_MEMLOCK),
#                    in bytes
#   --libvirt        start the guest through libvirt (a transient domain
#                    with <hostdev type='mdev'> per --mdev) instead of
#                    running QEMU directly; needs a running libvirtd
#                    (lib.sh: start_libvirtd) and no --qemu-args/--iommufd
#   --append ARGS    extra kernel command line
#   --qemu-args ARGS extra QEMU arguments, split at white space (repeatable;
#                    e.g. "-drive file=/tmp/a.img,if=none,id=d0,format=raw
#                    -device nvme,drive=d0,serial=d0").  In a guest, add
#                    ",disable-modern=on,disable-legacy=off" to virtio
#                    devices, as for the harness's own ones (see below).
#   --log FILE       also write the console to FILE
#   --echo-prefix P  also copy the console to stderr, each line prefixed P
#   --keep-going     report splats but keep the command's status
#   --reboot         a reboot of the VM restarts it in the same QEMU (its
#                    init runs the command again) instead of ending it
#   --interactive    a shell on the console instead of a command
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../../.." && pwd)

role_cmdline= bios= smp=1 mem= qemu_args= echo_prefix= timeout=900 append= log=
nvme_size= user= memlock=
guest=0 interactive=0 iommufd=0 keep_going=0 libvirt=0 reboot=0 seabios=0
kernel=${NVMET_MDEV_KERNEL:-$top/build/bzImage}
mdevs=()
while [ $# -gt 0 ]; do
	case "$1" in
	--smp) smp=$2; shift 2 ;;
	--mem) mem=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--guest) guest=1; shift ;;
	--seabios) seabios=1; shift ;;
	--mdev) mdevs+=("$2"); shift 2 ;;
	--nvme) nvme_size=$2; shift 2 ;;
	--user) user=$2; shift 2 ;;
	--memlock) memlock=$2; shift 2 ;;
	--iommufd) iommufd=1; shift ;;
	--libvirt) libvirt=1; shift ;;
	--append) append="$append $2"; shift 2 ;;
	--qemu-args) qemu_args="$qemu_args $2"; shift 2 ;;
	--log) log=$2; shift 2 ;;
	--echo-prefix) echo_prefix=$2; shift 2 ;;
	--keep-going) keep_going=1; shift ;;
	--reboot) reboot=1; shift ;;
	--interactive) interactive=1; shift ;;
	--) shift; break ;;
	*) echo "vm.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
if [ $libvirt -eq 1 ] && { [ $guest -eq 0 ] || [ $iommufd -eq 1 ] ||
			   [ -n "$qemu_args" ] || [ $interactive -eq 1 ]; }; then
	echo "vm.sh: --libvirt is for a --guest," \
		"without --iommufd, --qemu-args or --interactive" >&2
	exit 2
fi
if [ $interactive -eq 0 ] && [ $# -eq 0 ]; then
	echo "usage: vm.sh [options] -- command [args...] | vm.sh --interactive" >&2
	exit 2
fi

# init.sh puts tmpfs over these in the VMs: a repository there is not seen.
case "$top/" in
/tmp/*|/run/*|/var/tmp/*|/var/log/*|/root/*|/dev/*)
	echo "vm.sh: $top is hidden in the VMs (tmpfs there); use a checkout elsewhere" >&2
	exit 2 ;;
esac

run=$(mktemp -d "${TMPDIR:-/tmp}/nvmet-mdev-vm.XXXXXX")
cleanup() { rm -rf "$run"; }
trap cleanup EXIT

# The command, with the caller's working directory and test environment.
{
	echo "cd $(printf %q "$PWD") 2>/dev/null || cd /"
	env | grep -E '^(NVMET_MDEV_[A-Z_]*|SEED|CI)=' | sed 's/^/export /; s/=\(.*\)/=\x27\1\x27/'
	printf '%q ' "$@"
	echo
} > "$run/cmd"

machine=q35
if [ $guest -eq 1 ]; then
	accel="-accel kvm -cpu qemu64"
	mem=${mem:-1G}
	# No HPET, as libvirt's tools give KVM guests: the guest's clock is
	# kvm-clock, and with an HPET its rtc-cmos starts the HPET's RTC
	# emulation, whose first tick, however late, catches up one 1/64 s
	# period at a time with interrupts off, two MMIO exits per period
	# (hpet_rtc_timer_reinit()).  Nested under TCG an exit takes
	# milliseconds: guests here lost seconds to it at every boot ("hpet:
	# Lost 1242 RTC interrupts"), and in a run beside four other VMs a
	# 2-vCPU guest spent 60 s in that loop, an RCU stall that failed
	# 12-two-guests ("hpet: Lost 3405 RTC interrupts").
	machine=q35,hpet=off
	# The code under test runs in the host VM, which keeps every debug
	# check.  Guests only run the stock nvme driver, on a kernel without
	# the debug options (build/guest-bzImage, see config.guest).
	kernel=${NVMET_MDEV_GUEST_KERNEL:-$top/build/guest-bzImage}
	echo nvmet-mdev-guest > "$run/hostname"
	# init.sh: set up only what a guest needs (see there).
	# pci=lastbus=0: the q35 machine has one PCI host bridge, whose
	# ECAM window spans buses 0-255, and x86 Linux takes that as the
	# last bus a peer host bridge could hide on: it read a vendor ID
	# from each slot of 255 more buses, 8160 config reads each an exit
	# to the nested hypervisor, 5.8 s of every guest boot here (from
	# "PCI: Using ACPI for IRQ routing" to "pci_cache_line_size";
	# pcibios_fixup_peer_bridges()).  Devices behind bridges on bus 0
	# (libvirt's PCIe root ports) are found through their bridges.
	role_cmdline="nvmet_mdev.guest=1 tsc=reliable pci=lastbus=0"
	# qboot, not SeaBIOS: SeaBIOS's NVMe driver sends an Identify
	# Namespace for each namespace ID up to Identify Controller's NN
	# (1024 with nvmet) before Linux starts, and in the TCG host VM that
	# made a guest with an mdev reach its kernel 117 s after QEMU's
	# start, against 50 s with qboot (38 s with SeaBIOS and no mdev).
	# Tests about booting ask for SeaBIOS (--seabios); libvirt's guests
	# use it too.
	[ $seabios -eq 0 ] && [ -r /usr/share/qemu/qboot.rom ] &&
		bios=/usr/share/qemu/qboot.rom
else
	# la57=off: with 5-level paging, identify_cpu() clears boot_cpu_data's
	# capabilities (LA57 among them) with interrupts on, and before the
	# alternatives are patched pgtable_l5_enabled() reads them, so an
	# interrupt in that window makes KASAN call a direct-map address
	# "wild" (seen here: "BUG: KASAN: wild-memory-access in
	# rcu_is_watching" from identify_cpu at boot, long before any of our
	# code loads).  An upstream early-boot race, not ours.
	accel="-accel tcg,thread=multi,tb-size=256 -cpu max,la57=off"
	mem=${mem:-3G}
	# Hung tasks are reported (and fail the run), not fatal.  The guest
	# kernel has no hung task detector.
	role_cmdline="hung_task_panic=0"
	# tsc=unstable: TCG hands the machine's own TSC to the VM (QEMU only
	# keeps it from going backwards), and the machines here restore from
	# snapshots: their kernels run with tsc=unstable on kvm-clock, and
	# the TSC reads days ahead of their clocks.  In a CI run of
	# 2026-12-04 a host VM's clock jumped by about 7.9 days 77 s after
	# its boot: "soft lockup - CPU#0 stuck for 632859s", a WARNING in
	# __enqueue_entity, a NULL dereference in pick_task_fair and
	# init.sh's timeouts expiring at once.  With the TSC unstable the VM
	# keeps time with the HPET (QEMU's clock) and filters sched_clock to
	# within a tick of it; run-tests.sh reports any jump of the
	# machine's TSC during a test.
	role_cmdline="$role_cmdline tsc=unstable"
	echo nvmet-mdev-host > "$run/hostname"
fi

[ -r "$kernel" ] || { echo "vm.sh: no kernel at $kernel (make kernel)" >&2; exit 2; }

cmdline="console=ttyS0 loglevel=6 root=root rootfstype=9p"
cmdline="$cmdline rootflags=trans=virtio,version=9p2000.L,msize=262144,cache=loose ro"
cmdline="$cmdline init=${NVMET_MDEV_INIT:-$here/init.sh} panic=-1 nokaslr"
cmdline="$cmdline mitigations=off${role_cmdline:+ $role_cmdline} $append"
[ $interactive -eq 1 ] && cmdline="$cmdline nvmet_mdev.interactive=1"

args=(
	$accel -smp "$smp" -m "$mem" -machine "$machine" -nodefaults
	-display none -monitor none
	-kernel "$kernel" -append "$cmdline"
	-fsdev "local,id=root,path=/,security_model=none,readonly=on,multidevs=remap"
	-fsdev "local,id=run,path=$run,security_model=none"
)
[ -n "$bios" ] && args+=(-bios "$bios")
[ $reboot -eq 1 ] || args+=(-no-reboot)
# In nested guests the virtio devices are legacy ones, notified through
# I/O ports: an MMIO notify write in a guest of the TCG-emulated SVM
# sometimes ended in "KVM internal error. Suberror: 3" (an NPF exit that
# reports an event being delivered) at the virtio BAR, early in the
# guest's init, whatever the mdev was doing.
virtio=
[ $guest -eq 1 ] && virtio=",disable-modern=on,disable-legacy=off"
args+=(
	-device "virtio-rng-pci$virtio"
	-device "virtio-9p-pci,fsdev=root,mount_tag=root$virtio"
	-device "virtio-9p-pci,fsdev=run,mount_tag=run$virtio"
)
if [ ${#mdevs[@]} -gt 0 ]; then
	[ $iommufd -eq 1 ] && args+=(-object iommufd,id=iommufd0)
	for u in "${mdevs[@]}"; do
		dev="vfio-pci,sysfsdev=/sys/bus/mdev/devices/$u"
		[ $iommufd -eq 1 ] && dev="$dev,iommufd=iommufd0"
		dev="$dev${NVMET_MDEV_VFIO_OPTS:+,$NVMET_MDEV_VFIO_OPTS}"
		args+=(-device "$dev")
	done
fi
if [ -n "$nvme_size" ]; then
	truncate -s "$nvme_size" "$run/nvme.img" || exit 2
	args+=(-drive "file=$run/nvme.img,if=none,id=nvme0,format=raw,cache=unsafe"
	       -device nvme,drive=nvme0,serial=nvmet-mdev-nvme)
fi
# Split at white space on purpose (no globbing: "set -f" around it).
if [ -n "$qemu_args" ]; then
	set -f
	# shellcheck disable=SC2206
	args+=($qemu_args)
	set +f
fi

if [ $interactive -eq 1 ]; then
	exec qemu-system-x86_64 "${args[@]}" -serial mon:stdio
fi

console=$run/console

echo_console() {
	if [ -n "$echo_prefix" ]; then
		awk -v p="$echo_prefix" '{
			print; print p $0 > "/dev/stderr"
			fflush(); fflush("/dev/stderr")
		}'
	else
		cat
	fi
}

xml_escape() {
	sed -e 's/&/\&amp;/g' -e 's/</\&lt;/g' -e 's/>/\&gt;/g' -e "s/'/\&apos;/g" <<<"$1"
}

# The same guest as below, as a transient libvirt domain: what a user's
# <hostdev mode='subsystem' type='mdev' model='vfio-pci'> gives QEMU.
# libvirt puts virtio devices on PCIe ports, where they are modern-only;
# virtio-transitional ones sit behind a PCI bridge and keep the legacy
# interface, which the guest is told to use (see the note on virtio above).
libvirt_guest() {
	local virsh=(virsh -q -c "${NVMET_MDEV_LIBVIRT_URI:-qemu:///system}")
	local name u m=$mem unit=MiB rc=0 end=$((SECONDS + timeout))
	name=nvmet-mdev-${run##*.}
	case $m in
	*G) m=${m%G}; unit=GiB ;;
	*M) m=${m%M} ;;
	esac
	{
		echo "<domain type='kvm'>"
		echo "  <name>$name</name>"
		echo "  <memory unit='$unit'>$m</memory>"
		echo "  <vcpu>$smp</vcpu>"
		echo "  <os>"
		echo "    <type arch='x86_64' machine='q35'>hvm</type>"
		echo "    <kernel>$(xml_escape "$kernel")</kernel>"
		echo "    <cmdline>$(xml_escape "$cmdline virtio_pci.force_legacy=1")</cmdline>"
		echo "  </os>"
		echo "  <features><acpi/></features>"
		echo "  <clock offset='utc'><timer name='hpet' present='no'/></clock>"
		echo "  <cpu mode='custom' match='exact' check='none'>"
		echo "    <model fallback='forbid'>qemu64</model>"
		echo "  </cpu>"
		echo "  <on_poweroff>destroy</on_poweroff>"
		echo "  <on_reboot>restart</on_reboot>"
		echo "  <on_crash>destroy</on_crash>"
		echo "  <devices>"
		echo "    <emulator>$(command -v qemu-system-x86_64)</emulator>"
		echo "    <controller type='usb' model='none'/>"
		echo "    <filesystem type='mount' accessmode='passthrough'" \
			"model='virtio-transitional' multidevs='remap'>"
		echo "      <source dir='/'/><target dir='root'/><readonly/>"
		echo "    </filesystem>"
		echo "    <filesystem type='mount' accessmode='passthrough'" \
			"model='virtio-transitional'>"
		echo "      <source dir='$(xml_escape "$run")'/><target dir='run'/>"
		echo "    </filesystem>"
		echo "    <serial type='file'>"
		echo "      <source path='$(xml_escape "$console")'/><target port='0'/>"
		echo "    </serial>"
		echo "    <rng model='virtio-transitional'>"
		echo "      <backend model='random'>/dev/urandom</backend>"
		echo "    </rng>"
		for u in "${mdevs[@]}"; do
			echo "    <hostdev mode='subsystem' type='mdev' model='vfio-pci'>"
			echo "      <source><address uuid='$u'/></source>"
			echo "    </hostdev>"
		done
		echo "    <memballoon model='none'/>"
		echo "  </devices>"
		echo "</domain>"
	} > "$run/domain.xml"
	"${virsh[@]}" create "$run/domain.xml" >/dev/null || return 1
	# A transient domain is gone once libvirt has seen QEMU exit.  Wait for
	# QEMU with builtins (kill -0, and a read with a timeout from a FIFO
	# nobody writes), not by asking libvirt every second: each virsh and
	# sleep is an exec, and in the host VM that costs the guest on the same
	# vCPU a large share of its time.
	local pid='' tick
	{ read -r pid < "/run/libvirt/qemu/$name.pid"; } 2>/dev/null
	mkfifo "$run/tick" && exec {tick}<>"$run/tick"
	while :; do
		if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
			read -r -t 1 -u "$tick"
		elif "${virsh[@]}" domstate "$name" >/dev/null 2>&1; then
			sleep 1
		else
			break
		fi
		if [ $rc -eq 0 ] && [ $SECONDS -ge $end ]; then
			echo "vm.sh: libvirt domain $name timed out after $timeout s" >&2
			"${virsh[@]}" destroy "$name" >/dev/null 2>&1
			rc=124
		elif [ $SECONDS -ge $((end + 60)) ]; then
			echo "vm.sh: libvirt domain $name still there" >&2
			break
		fi
	done
	exec {tick}<&-
	echo_console < "$console"
	return $rc
}

# The kernel's System.map, for wakeup-watch.py and vm-state.py.
case $kernel in
"$top/build/bzImage") sysmap=$top/build/obj/System.map ;;
"$top/build/guest-bzImage") sysmap=$top/build/obj-guest/System.map ;;
"$top/build/perf-bzImage") sysmap=$top/build/obj-perf/System.map ;;
*) sysmap=$(dirname "$kernel")/System.map ;;
esac
watch= state=
if [ $libvirt -eq 0 ]; then
	args+=(-qmp "unix:$run/qmp.sock,server=on,wait=off")
	# A VM still running shortly before its timeout: say where its vCPUs
	# are (vm-state.py), so that a hang leaves evidence in the log, not
	# only "the VM died".  In the host VM, python's start and the
	# monitor take tens of seconds beside a busy guest, and more than 90
	# with other VMs loading the machine.  Waiting with a
	# builtin read, not sleep: an exec there costs a nested guest time.
	echo "$timeout" > "$run/timeout"
	mkfifo "$run/state.fifo"
	(
		m=$((guest ? 180 : 20))
		exec {fd}<>"$run/state.fifo"
		read -r -t $((timeout > 3 * m ? timeout - m : timeout * 2 / 3)) -u "$fd"
		# A test keeps a guest's standard output for its checks, and
		# its log gets the console's echo on standard error: so does
		# this.
		[ -n "$echo_prefix" ] && exec >&2
		exec "$here/vm-state.py" "$run/qmp.sock" "$sysmap" "vm.sh: near the timeout: "
	) &
	state=$!
fi
# The TCG host VM: QEMU (7.2, 10.0.2) can lose the wake-up of a halted
# vCPU for a pending APIC interrupt; wakeup-watch.py recognises that state
# (impossible on hardware) and recovers from it, saying so in the log.  It
# reads the kernel's jiffies through the System.map built with the kernel.
if [ $guest -eq 0 ] && [ $interactive -eq 0 ]; then
	"$here/wakeup-watch.py" "$run/qmp.sock" "$sysmap" "$run/wakeups" &
	watch=$!
	# And QEMU, once the VM has powered off, should exit: see
	# exit-watch.sh for what it does when it does not (QEMU's threads
	# named, for its evidence).
	args+=(-pidfile "$run/qemu.pid" -name nvmet-mdev,debug-threads=on)
	"$here/exit-watch.sh" "$run/dmesg" "$run/qemu.pid" "$run/exit-hang" &
	watch="$watch $!"
fi

started=$SECONDS
if [ $libvirt -eq 1 ]; then
	libvirt_guest
	qemu_rc=$?
else
	# QEMU's own messages go to standard error, a line at a time, not
	# into the console: a warning there could cut a line of the guest's
	# that a test reads.  Through a FIFO: the host VM has no /dev/fd for
	# a process substitution.
	mkfifo "$run/qemu.err"
	sed -u 's/^/vm.sh: qemu: /' < "$run/qemu.err" >&2 &
	qemu_err=$!
	# QEMU unprivileged: it writes its socket and the guest's run
	# directory files as that user.
	wrap=()
	[ -n "$memlock" ] && wrap+=(prlimit --memlock="$memlock:$memlock")
	if [ -n "$user" ]; then
		chown "$user" "$run"
		wrap+=(setpriv --reuid="$user" --regid="$user" --clear-groups
		       --inh-caps=-all --bounding-set=-all)
	fi
	timeout --foreground -k 10 "$timeout" \
		"${wrap[@]}" qemu-system-x86_64 "${args[@]}" -serial stdio </dev/null \
		2> "$run/qemu.err" | tee "$console" | echo_console
	qemu_rc=${PIPESTATUS[0]}
	wait $qemu_err
fi
for p in $watch $state; do
	kill "$p" 2>/dev/null
	wait "$p" 2>/dev/null
done
[ -n "$log" ] && cp "$console" "$log"

splats=$("$here/splat-scan.sh" "$console" "$run/dmesg")
# A freeze from QEMU's lost wake-up (see wakeup-watch.py) leaves a soft
# lockup report behind once the watch has woken the CPU: the idle task,
# stuck in the halt instruction, for as long as the CPU sat halted with
# an interrupt pending, which hardware never does.  Such reports are the
# emulator's when every splat is one (a soft lockup of swapper, whose
# RIP is a halt in the idle loop) and the watch woke the VM at least as
# often; they are logged as that, and anything else fails the run.
idle_lockups() {
	local n w
	n=$(grep -cE 'soft lockup - CPU#[0-9]+ stuck for [0-9]+s! \[swapper/[0-9]+:0\]$' \
		<<<"$splats")
	[ "$n" -gt 0 ] && [ "$n" -eq "$(grep -c . <<<"$splats")" ] || return 1
	w=$(grep -c . "$run/wakeups" 2>/dev/null)
	[ "${w:-0}" -ge "$n" ] || return 1
	# The RIP after each soft lockup line of the console: a halt.
	awk '/^\[ *[0-9]+\.[0-9]+\].*soft lockup - CPU#/ { want = 1; next }
	     want && /RIP: [0-9a-f]+:/ { want = 0; if ($0 !~ /safe_halt|default_idle/) bad = 1 }
	     END { exit bad || want }' "$console" || return 1
	echo "$n"
}
if [ -n "$splats" ] && n=$(idle_lockups); then
	echo "vm.sh: QEMU's lost wake-up left $n soft lockup report(s) of the" \
		"idle task (an emulator fault, see wakeup-watch.py):" >&2
	echo "$splats" | sed 's/^/vm.sh:   /' >&2
	splats=
fi
rc= hang=
[ -f "$run/rc" ] && read -r rc < "$run/rc"
[ -f "$run/exit-hang" ] && read -r hang < "$run/exit-hang"
if [[ ! $rc =~ ^[0-9]+$ ]]; then
	echo "vm.sh: the VM died before the command finished (qemu status $qemu_rc)" >&2
	rc=98
elif [ "$hang" = cleanup ]; then
	# The VM had powered off and QEMU had acted on it (its main thread
	# in qemu_cleanup(), see exit-watch.sh): the command's status and
	# console are whole.
	echo "vm.sh: QEMU hung in its own exit after the VM powered off; killed" \
		"(an emulator fault, its backtraces above; see exit-watch.sh)" >&2
elif [ -n "$hang" ]; then
	echo "vm.sh: the command finished (status $rc), but QEMU did not" \
		"act on the VM's power-off (its backtraces above)" >&2
	rc=97
elif [ "$qemu_rc" -eq 124 ] ||
     { [ "$qemu_rc" -eq 137 ] && [ $((SECONDS - started)) -ge "$timeout" ]; }; then
	# timeout(1) stopped QEMU after the command had finished: the VM
	# hung on its way down (a driver's shutdown, say), which must not
	# pass as a clean run.
	echo "vm.sh: the command finished (status $rc), but the VM" \
		"did not power off before its timeout ($timeout s)" >&2
	rc=97
fi
if [ -n "$splats" ]; then
	echo "vm.sh: kernel splat detected:" >&2
	echo "$splats" | sed 's/^/vm.sh:   /' >&2
	[ $keep_going -eq 1 ] || rc=99
fi
exit "$rc"
