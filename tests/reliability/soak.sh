#!/bin/sh
# soak.sh: `make soak`, the long reliability run: every test of the
# reliability suite with CROFT_SOAK=1 (5 000 processes across 50 cgroups
# for 10 minutes, SIGKILL loops of 200/100/50, every crash point, 100 000
# processes a minute...); `make fuzz` is the long fuzz run.  Prints each test's
# figures; BUILD names the meson build dir (default build).  Root for the
# full set; what needs root skips otherwise (fails under CI=true).
set -u
BUILD=${BUILD:-build}
[ -f "$BUILD/build.ninja" ] || { echo "soak.sh: no build in $BUILD (run make first)" >&2; exit 1; }
ninja -C "$BUILD" >/dev/null || exit 1
export CROFT_SOAK=1
# meson's own timeouts are for the short mode: multiply them
meson test -C "$BUILD" --suite reliability --no-rebuild --print-errorlogs --verbose \
	--timeout-multiplier 20 2>&1 | tee "$BUILD/soak.log" |
	grep -E '^(figure:|ok |FAIL|SKIP|# )|reliability-' 
status=$(grep -cE '^ *[0-9]+/[0-9]+ .*(FAIL|TIMEOUT)' "$BUILD/soak.log")
echo "soak: log in $BUILD/soak.log; $status failed"
[ "$status" = 0 ]
