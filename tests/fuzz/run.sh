#!/bin/sh
# run.sh: builds the libFuzzer harnesses tests/fuzz/fuzz_*.c with clang
# (ASan + UBSan) into a build dir of their own and runs each for a while.
#   run.sh --short [SECONDS]   each harness SECONDS (default 10): CI, via meson test
#   run.sh --long  [SECONDS]   each harness SECONDS (default 600): `make fuzz`
# A harness names what it links in its header comment: "sources:", "libs:",
# "include:" (directories; each of the three may take several lines, to stay
# within clang-format's width) and "embed: FILE SYMBOL" (FILE as a C string,
# the way meson builds it with catalog/embed.py).
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
mkdir -p "$out"

require_cmd clang
echo 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }' \
	> "$out/probe.c"
clang -fsanitize=fuzzer "$out/probe.c" -o "$out/probe" 2>/dev/null ||
	skip "clang cannot build with -fsanitize=fuzzer (libFuzzer missing)"

status=0
for harness in "$root"/tests/fuzz/fuzz_*.c; do
	name=$(basename "$harness" .c)
	sources=$(sed -n 's/^ \* sources: //p' "$harness" | tr '\n' ' ')
	libs=$(sed -n 's/^ \* libs: //p' "$harness" | tr '\n' ' ')
	include=$(sed -n 's/^ \* include: //p' "$harness" | tr '\n' ' ')
	embed=$(sed -n 's/^ \* embed: //p' "$harness" | head -n 1)
	set --
	for s in $sources; do set -- "$@" "$root/$s"; done
	for d in $include; do set -- "$@" -I"$root/$d"; done
	if [ -n "$embed" ]; then
		set -- "$@" "$out/$name-embed.c" && python3 "$root/catalog/embed.py" \
			"$root/${embed%% *}" "$out/$name-embed.c" "${embed#* }"
	fi
	# shellcheck disable=SC2086 # libs is a word list on purpose
	clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
		-D_GNU_SOURCE -DCROFT_VERSION='"fuzz"' -DCROFT_SYSCONFDIR='"/etc"' \
		-DCROFT_DATADIR='"/usr/share"' -DCROFT_LIBEXECDIR='"/usr/libexec"' \
		-DCROFT_SBINDIR='"/usr/sbin"' -I"$root/common" \
		"$harness" "$@" $libs -o "$out/$name"
	corpus="$out/corpus/$name"
	seeds="$root/tests/fuzz/seeds/${name#fuzz_}"
	mkdir -p "$corpus"
	set -- "$corpus"
	[ -d "$seeds" ] && set -- "$@" "$seeds"
	echo "== $name: ${secs}s"
	if ! "$out/$name" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
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
