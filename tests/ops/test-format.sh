#!/bin/bash
# test-format.sh: every C source and header of the tree is as .clang-format
# says (clang-format --dry-run --Werror), one TAP line a directory.  The
# format is the one Debian 12's clang-format 14 writes; another major version
# breaks lines elsewhere, so it is not judged by one.
# usage: test-format.sh SOURCE_ROOT
set -u
. "$(dirname "$0")/../lib/testlib.sh"
require_cmd clang-format
src=$1
major=$(clang-format --version | sed -n 's/.*version \([0-9]*\).*/\1/p')
[ "$major" = 14 ] || skip "clang-format $major is not Debian 12's 14: its line breaks differ"
cd "$src" || fail "no source root $src"
n=0 fails=0
for dir in bench catalog cli common probe readers run sampler tests writer; do
	[ -d "$dir" ] || continue
	mapfile -d '' files < <(find "$dir" -name node_modules -prune -o \
		\( -name '*.c' -o -name '*.h' \) -type f -print0 | sort -z)
	[ "${#files[@]}" -gt 0 ] || continue
	n=$((n + 1))
	bad=$(clang-format --dry-run --Werror "${files[@]}" 2>&1 | sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error.*/\1/p' | sort -u)
	if [ -z "$bad" ]; then
		echo "ok $n - $dir: ${#files[@]} files as .clang-format says"
	else
		echo "not ok $n - $dir: not as .clang-format says (clang-format -i them):"
		echo "$bad" | sed 's/^/#   /'
		fails=$((fails + 1))
	fi
done
echo "1..$n"
[ "$fails" = 0 ]
