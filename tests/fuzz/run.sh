#!/bin/sh
# run.sh: runs the libFuzzer harnesses tests/fuzz/fuzz_*.c (ASan + UBSan)
# for a while each.  Meson builds them (tests/fuzz/meson.build) in a clang
# build dir of their own, FUZZ_BUILD, set up here with -Dfuzz=true.
#   run.sh --short [SECONDS]   each harness SECONDS (default 10): CI, via meson test
#   run.sh --long  [SECONDS]   each harness SECONDS (default 600): `make fuzz`
# Crashes are kept as FUZZ_BUILD/crash-<harness>-*; any crash fails the run.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
. "$root/tests/lib/testlib.sh"

case "${1:---short}" in
--short) secs=${2:-10} ;;
--long) secs=${2:-600} ;;
*) echo "usage: $0 [--short|--long] [SECONDS]" >&2; exit 2 ;;
esac
out=${FUZZ_BUILD:-$root/build-fuzz}

require_cmd clang
require_cmd meson
echo 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }' |
	clang -x c -fsanitize=fuzzer - -o /dev/null 2>/dev/null ||
	skip "clang cannot build with -fsanitize=fuzzer (libFuzzer missing)"
# -O1: the build is most of a short run's CPU time, and -O2 costs more of it
if [ ! -f "$out/build.ninja" ]; then
	log=$(CC=clang meson setup "$out" "$root" -Dfuzz=true -Doptimization=1 -Dprobe=disabled \
		-Dman=disabled 2>&1) || { echo "$log" >&2; fail "meson setup $out"; }
fi
ninja -C "$out" fuzz

status=0
for harness in "$root"/tests/fuzz/fuzz_*.c; do
	name=$(basename "$harness" .c)
	bin="$out/tests/fuzz/$name"
	[ -x "$bin" ] || fail "$name is not built: add it to tests/fuzz/meson.build"
	corpus="$out/corpus/$name"
	seeds="$root/tests/fuzz/seeds/${name#fuzz_}"
	mkdir -p "$corpus"
	set -- "$corpus"
	[ -d "$seeds" ] && set -- "$@" "$seeds"
	echo "== $name: ${secs}s"
	if ! "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
		-error_exitcode=1 -timeout_exitcode=1 -print_final_stats=1 \
		-artifact_prefix="$out/crash-$name-" "$@" >"$out/$name.log" 2>&1; then
		echo "FAIL: $name crashed; see $out/$name.log and $out/crash-$name-*" >&2
		tail -n 40 "$out/$name.log" >&2
		status=1
	else
		grep -E '^stat::number_of_executed_units|^Done' "$out/$name.log" || true
	fi
done
exit $status
