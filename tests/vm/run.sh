#!/bin/bash
# run.sh: `make test-vm`: builds croft's Debian package from this tree
# twice, as version N and as N+1 (debian/build-deb.sh), then runs checks.sh
# in the Debian 12 VM on each kernel (vm.sh): bullseye's 5.10, Debian 12's
# 6.1 and 6.12, sid's newest, and 6.1 with cgroup v1 under systemd,
# CROFT_VM_JOBS at once (default: one a CPU), with N installed by apt; on CROFT_VM_UPGRADE_KERNEL
# (6.12) it also upgrades to N+1 and reboots (upgrade.sh).  Prints each
# boot's TAP and one summary line.  Host, root.  Without qemu or
# mmdebstrap (or not root) it skips, except under CI=true, where that is a
# failure.
# usage: run.sh BUILD_DIR      CROFT_VM_KERNELS="5.10 6.1 6.12 sid 6.1-v1" by
#        default; CROFT_VM_CACHE=DIR shares a base tree (default
#        BUILD_DIR/vm-cache)
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: run.sh BUILD_DIR}" && pwd)
kernels=${CROFT_VM_KERNELS:-5.10 6.1 6.12 sid 6.1-v1}
cache=${CROFT_VM_CACHE:-$build/vm-cache}

cannot() {
	if [ "${CI:-}" = true ]; then
		echo "test-vm: FAIL: $* (a skip is a failure under CI=true)" >&2
		exit 1
	fi
	echo "test-vm: SKIP: $*" >&2
	exit 0
}
[ "$(id -u)" = 0 ] || cannot "needs root (mmdebstrap builds the image as root)"
for tool in mmdebstrap qemu-system-x86_64 mke2fs; do
	command -v "$tool" >/dev/null || cannot "needs $tool (make deps installs it)"
done

# the probe tests' workloads, from the build (tests/probe/meson.build)
work=$build/tests/probe
for bin in probe-work net-work; do
	[ -x "$work/$bin" ] || cannot "needs $work/$bin (a build with tests)"
done

# the files checks.sh reads beside itself in the VM (lib: the probe tests
# import their helpers from beside their folder, with the wire.py this
# build generated, tests/lib/meson.build)
copies=(guest/rows.py guest/steps.py guest/oomparent.py guest/leftout.py upgrade.sh guest/continuity.py ../../docs/kernels.md
	../../man/croft-probe.8.scd ../../man/croft-sampler.8.scd verifier-ceilings ../probe)
copy_args=()
for c in "${copies[@]}"; do copy_args+=(--copy "$here/$c"); done
[ -f "$build/tests/lib/wire.py" ] || cannot "needs $build/tests/lib/wire.py (a build with tests)"
lib=$build/vm-lib/lib
rm -rf "$lib" && mkdir -p "$lib" && cp -r "$here/../lib/." "$build/tests/lib/wire.py" "$lib/" || exit 1
copy_args+=(--copy "$lib")

# N and N+1: the same tree, the second with a higher version (a changelog
# entry in build-deb.sh's scratch copy), so that the programs tell them apart
upgrade_kernel=${CROFT_VM_UPGRADE_KERNEL:-6.12}
debs=$build/vm-debs
version=$(dpkg-parsechangelog -l "$here/../../debian/changelog" -S Version) ||
	cannot "needs dpkg-parsechangelog (make deps installs dpkg-dev)"
next=$version+vmtest1
"$here/../../debian/build-deb.sh" "$debs" >/dev/null || exit 1
case " $kernels " in *" $upgrade_kernel "*)
	"$here/../../debian/build-deb.sh" "$debs" "$next" >/dev/null || exit 1 ;;
esac

# one boot: its output (TAP and vm.sh's lines) and exit status in $runs/K.*
boot_one() {
	local k=$1 started=$SECONDS pkgs=(--deb "$debs/croft_${version}_amd64.deb")
	[ "$k" = "$upgrade_kernel" ] && pkgs+=(--deb "$debs/croft_${next}_amd64.deb")
	"$here/vm.sh" --kernel "$k" --build "$build" --cache "$cache" --run "$here/checks.sh" "${pkgs[@]}" \
		"${copy_args[@]}" --copy "$work/probe-work" --copy "$work/net-work" \
		--console "$cache/console-$k.log" --timeout 1800 >"$runs/$k.out" 2>&1
	echo "$? $((SECONDS - started))" >"$runs/$k.rc"
}

# Each VM is one TCG thread, so one host CPU: CROFT_VM_JOBS boots at once
# (default: the CPUs here), the boot with the upgrade first as the longest.
jobs_max=${CROFT_VM_JOBS:-$(nproc)}
runs=$(mktemp -d)
mkdir -p "$cache"
order=
for k in $kernels; do
	if [ "$k" = "$upgrade_kernel" ]; then order="$k $order"; else order="$order $k"; fi
done
for k in $order; do
	while [ "$(jobs -pr | wc -l)" -ge "$jobs_max" ]; do
		wait -n
	done
	echo "test-vm: booting $k"
	boot_one "$k" &
done
wait

passed=0 failed=0 summary=
for k in $kernels; do
	echo "== kernel $k"
	cat "$runs/$k.out"
	read -r rc took <"$runs/$k.rc"
	p=$(grep -c '^ok ' "$runs/$k.out") f=$(grep -c '^not ok ' "$runs/$k.out")
	if [ "$rc" != 0 ] && [ "$f" = 0 ]; then
		f=1 # the VM itself failed: no check could say so
		echo "not ok - the VM run on $k ended with status $rc (console: $cache/console-$k.log)"
	fi
	passed=$((passed + p)) failed=$((failed + f))
	summary+=" $k: $p passed, $f failed, $took s;"
done
rm -rf "$runs"
echo "test-vm:$summary"
echo "vm: $passed passed, $failed failed"
[ "$failed" = 0 ]
