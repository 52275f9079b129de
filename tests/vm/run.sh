#!/bin/bash
# run.sh: `make test-vm`: checks.sh in a Debian 12 VM on each of Debian 12's
# kernels (vm.sh), one after the other; prints their TAP and one summary
# line.  Host, root.  Without qemu or mmdebstrap (or not root) it skips,
# except under CI=true, where that is a failure.
# usage: run.sh BUILD_DIR      CROFT_VM_KERNELS="6.1 6.12" by default;
#        CROFT_VM_CACHE=DIR shares a base tree (default BUILD_DIR/vm-cache)
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: run.sh BUILD_DIR}" && pwd)
kernels=${CROFT_VM_KERNELS:-6.1 6.12}
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

passed=0 failed=0 summary=
for k in $kernels; do
	echo "== kernel $k"
	mkdir -p "$cache"
	console=$cache/console-$k.log
	out=$(mktemp)
	"$here/vm.sh" --kernel "$k" --build "$build" --cache "$cache" --run "$here/checks.sh" \
		--copy "$here/guest/rows.py" --copy "$here/guest/oomparent.py" \
		--copy "$here/../probe" --copy "$work/probe-work" --copy "$work/net-work" \
		--console "$console" --timeout 1800 | tee "$out"
	rc=${PIPESTATUS[0]}
	p=$(grep -c '^ok ' "$out") f=$(grep -c '^not ok ' "$out")
	rm -f "$out"
	if [ "$rc" != 0 ] && [ "$f" = 0 ]; then
		f=1 # the VM itself failed: no check could say so
		echo "not ok - the VM run on $k ended with status $rc (console: $console)"
	fi
	passed=$((passed + p)) failed=$((failed + f))
	summary+=" $k: $p passed, $f failed;"
done
echo "test-vm:$summary"
echo "vm: $passed passed, $failed failed"
[ "$failed" = 0 ]
