#!/bin/bash
# vm.sh: boot Debian 12 under qemu (TCG, no KVM needed) on one of the
# image's kernels, install croft's Debian package in it, run a script in it
# as root under systemd, print the script's output and exit with its
# status; the script may reboot the VM and go on after the boot.  Runs on
# the host as root.
#
# usage: vm.sh --kernel K --build DIR --run SCRIPT --deb FILE...
#              [--copy PATH]... [--cache DIR] [--timeout SECONDS]
#              [--console FILE] [--keep]
#   --build DIR     meson build directory (its vm-cache is the default cache)
#   --deb FILE      a .deb copied into /croft-vm/debs (repeatable); the first
#                   is installed by `apt-get install ./FILE` at the first
#                   boot, before SCRIPT: its own maintainer scripts make the
#                   user, apply tmpfiles, enable and start the units
#   --run SCRIPT    bash script run in the VM as root by a systemd unit,
#                   from /croft-vm/work, which holds a copy of it; exit 200
#                   reboots the VM and runs it again (CROFT_VM_BOOT counts)
#   --copy PATH     file or folder copied next to SCRIPT (repeatable)
#   --cache DIR     where the base tree is kept (default DIR/vm-cache)
#   --timeout S     the VM is killed after S seconds (default 900): exit 124
#   --console FILE  keep the serial console (kernel, systemd) in FILE
#   --keep          keep the run's image and files (path printed)
# K: 5.10 (bullseye's), 6.1, 6.12 (Debian 12's), sid (sid's newest,
# unpacked), 6.1-v1 (6.1 with systemd.unified_cgroup_hierarchy=0: cgroup v1).
# Inside: CROFT_VM_KERNEL is K, CROFT_VM_DEBS the .deb names in
# /croft-vm/debs (the first installed), CROFT_VM_BOOT 1, 2, ...
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

usage() {
	sed -n '/^# usage:/,/^# Inside/p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

kernel= build= script= cache= timeout_s=900 console= keep=false copies=() debs=()
while [ $# -gt 0 ]; do
	case $1 in
	--kernel) kernel=$2; shift 2 ;;
	--build) build=$2; shift 2 ;;
	--run) script=$2; shift 2 ;;
	--copy) copies+=("$2"); shift 2 ;;
	--deb) debs+=("$2"); shift 2 ;;
	--cache) cache=$2; shift 2 ;;
	--timeout) timeout_s=$2; shift 2 ;;
	--console) console=$2; shift 2 ;;
	--keep) keep=true; shift ;;
	*) usage ;;
	esac
done
[ -n "$kernel" ] && [ -n "$build" ] && [ -n "$script" ] && [ ${#debs[@]} -gt 0 ] || usage
# the image's vmlinuz-* to boot (the newest that matches) and what to add
# to the kernel's command line
cmdline_extra=
case $kernel in
5.10) kernel_glob='5.10.*' ;;
6.1) kernel_glob='6.1.0-*' ;;
6.1-v1) kernel_glob='6.1.0-*' cmdline_extra=' systemd.unified_cgroup_hierarchy=0' ;;
6.12) kernel_glob='6.12.*' ;;
sid) kernel_glob='*' ;; # sid's is the newest in the image
*) echo "vm.sh: --kernel is 5.10, 6.1, 6.1-v1, 6.12 or sid, not $kernel" >&2; exit 2 ;;
esac
[ -f "$build/build.ninja" ] || { echo "vm.sh: $build is not a meson build directory" >&2; exit 2; }
[ -f "$script" ] || { echo "vm.sh: no script $script" >&2; exit 2; }
for d in "${debs[@]}"; do
	[ -f "$d" ] || { echo "vm.sh: no package $d (make deb builds one)" >&2; exit 2; }
done
for tool in mmdebstrap qemu-system-x86_64 mke2fs; do
	command -v "$tool" >/dev/null || { echo "vm.sh: needs $tool (make deps)" >&2; exit 3; }
done
build=$(cd "$build" && pwd)
cache=${cache:-$build/vm-cache}
mkdir -p "$cache"

# One base tree per package list.  The lock is held while the tree is
# built or copied: concurrent runs wait, and mkbase.sh may remove a stale
# tree no run is copying.
exec 9>"$cache/.lock"
flock 9
base=$("$here/mkbase.sh" "$cache")
vmlinuz=$(ls "$base"/boot/vmlinuz-$kernel_glob | sort -V | tail -n1)
release=${vmlinuz##*/vmlinuz-}
initrd=$base/boot/initrd.img-$release

run=$(mktemp -d "$cache/run-XXXXXX")
qemu_pid=
cleanup() {
	[ -n "$qemu_pid" ] && kill "$qemu_pid" 2>/dev/null
	if [ "$keep" = true ]; then echo "vm.sh: kept $run" >&2; else rm -rf "$run"; fi
}
trap cleanup EXIT

# The run's tree: the base hard-linked (only new files are written into
# it, so the cache stays as built), without the other kernel's modules,
# the packages, the test unit and the script in /croft-vm.
root=$run/root
cp -al "$base" "$root"
for m in "$root"/lib/modules/*; do
	[ "${m##*/}" = "$release" ] || rm -rf "$m"
done
rm -f "$root/.croft-base-complete"
flock -u 9
mkdir -p "$root/croft-vm/work" "$root/croft-vm/debs" "$root/etc/systemd/system/multi-user.target.wants"
deb_names=()
for d in "${debs[@]}"; do cp "$d" "$root/croft-vm/debs/"; deb_names+=("${d##*/}"); done
install -m 0755 "$here/guest/croft-vm-run" "$root/croft-vm/croft-vm-run"
install -m 0644 "$here/guest/croft-vm-run.service" "$root/etc/systemd/system/"
ln -s ../croft-vm-run.service "$root/etc/systemd/system/multi-user.target.wants/"
cp "$script" "$root/croft-vm/work/"
for c in "${copies[@]}"; do cp -a "$c" "$root/croft-vm/work/"; done
printf 'CROFT_VM_KERNEL=%s\nCROFT_VM_SCRIPT=%q\nCROFT_VM_DEBS=%q\n' "$kernel" "${script##*/}" \
	"${deb_names[*]}" >"$root/croft-vm/env"

image=$run/root.img
size_mib=$(( $(du -sm "$root" | cut -f1) + 768 ))
truncate -s "${size_mib}M" "$image"
mke2fs -q -t ext4 -L croft-root -d "$root" "$image"
rm -rf "$root"

results=$run/results.log
console_log=${console:-$run/console.log}
: >"$results"
: >"$console_log"
started_s=$SECONDS

# boot: qemu until the guest powers off or reboots (-no-reboot: a reboot
# ends qemu as well, so a panic cannot loop), the script's output streamed
# from the results file as it comes; 124 once the timeout is reached.
# One TCG thread for both vCPUs: with a thread per vCPU, the kernel's live
# code patching (int3 + text_poke, e.g. a static key flipped by CPUQuota=,
# a BPF trampoline) raced another vCPU once in eight boots here: "Oops:
# int3" in dequeue_entity on 6.12.
boot() {
	local from tail_pid
	from=$(($(stat -c %s "$results") + 1))
	qemu-system-x86_64 -accel tcg,thread=single -machine pc -cpu max -smp 2 -m 1536 \
		-nodefaults -display none -no-reboot \
		-chardev "file,id=console,path=$console_log,append=on" -serial chardev:console \
		-chardev "file,id=results,path=$results,append=on" -serial chardev:results \
		-drive "file=$image,format=raw,if=virtio,cache=unsafe" \
		-device virtio-rng-pci \
		-kernel "$vmlinuz" -initrd "$initrd" \
		-append "console=ttyS0 root=/dev/vda rw panic=-1 quiet loglevel=4$cmdline_extra" &
	qemu_pid=$!
	tail -c "+$from" -f --pid="$qemu_pid" "$results" | grep -v --line-buffered '^croft-vm: ' &
	tail_pid=$!
	while kill -0 "$qemu_pid" 2>/dev/null; do
		if [ $((SECONDS - started_s)) -ge "$timeout_s" ]; then
			kill "$qemu_pid"
			wait "$tail_pid" || true
			echo "vm.sh: VM ($release) still running after ${timeout_s}s, killed; console:" >&2
			tail -n 40 "$console_log" >&2
			return 124
		fi
		sleep 1
	done
	wait "$qemu_pid" || true
	qemu_pid=
	wait "$tail_pid" || true
}

# The script's last line is "croft-vm: exit N", or "croft-vm: reboot" once
# per boot it asked for (up to 4 boots).
boots=0
while :; do
	boots=$((boots + 1))
	boot || exit $?
	reboots=$(grep -c '^croft-vm: reboot$' "$results" || :) # none: grep says 1
	[ "$reboots" = "$boots" ] && [ "$boots" -lt 4 ] || break
	echo "vm.sh: $release: the script rebooted the VM (boot $((boots + 1)))" >&2
done
status=$(sed -n 's/^croft-vm: exit \([0-9]*\).*/\1/p' "$results" | tail -n1)
if [ -z "$status" ]; then
	echo "vm.sh: VM ($release) stopped before the script finished; console:" >&2
	tail -n 40 "$console_log" >&2
	exit 125
fi
echo "vm.sh: $release: script exited $status after $((SECONDS - started_s))s in the VM ($boots boots)" >&2
exit "$status"
