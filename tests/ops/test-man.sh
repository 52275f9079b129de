#!/bin/bash
# test-man.sh: every croft man page is built and renders with `man -l`
# without a single groff or man warning, at 80 columns and at 60.
# usage: test-man.sh MAN_BUILD_DIR PAGE...
set -u
. "$(dirname "$0")/../lib/testlib.sh"
[ "$1" = --not-built ] && skip "scdoc was not found at configure time: no man pages built"
require_cmd man groff
dir=$1
shift
n=0 fails=0
for page in "$@"; do
	for width in 80 60; do
		n=$((n + 1))
		if [ ! -s "$dir/$page" ]; then
			echo "not ok $n - $page was not built"
			fails=$((fails + 1))
			continue
		fi
		warnings=$(LC_ALL=C.UTF-8 MANWIDTH=$width man --warnings=w -l "$dir/$page" 2>&1 >/dev/null)
		lines=$(LC_ALL=C.UTF-8 MANWIDTH=$width man -l "$dir/$page" 2>/dev/null | wc -l)
		if [ -z "$warnings" ] && [ "$lines" -gt 10 ]; then
			echo "ok $n - $page renders at $width columns ($lines lines, no warnings)"
		else
			echo "not ok $n - $page at $width columns: $lines lines"
			echo "$warnings" | sed 's/^/# /'
			fails=$((fails + 1))
		fi
	done
done
echo "1..$n"
exit $((fails > 0))
