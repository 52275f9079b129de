#!/bin/bash
# test-readme.sh SOURCE_ROOT: the README stays a five-minute read that points
# elsewhere: at most 300 lines, the two commands (make run, make test) in its
# first screen (40 lines), and every relative link of README.md and
# docs/*.md naming a file that exists.  Any user.  TAP on stdout.
set -u
src=$1
n=0 fails=0
tap() { # tap DESCRIPTION COMMAND...
	local out
	n=$((n + 1))
	if out=$("${@:2}" 2>&1); then
		echo "ok $n - $1"
	else
		echo "not ok $n - $1"
		printf '%s\n' "$out" | sed 's/^/# /'
		fails=$((fails + 1))
	fi
}
short() {
	local lines
	lines=$(wc -l <"$src/README.md")
	echo "README.md: $lines lines"
	[ "$lines" -le 300 ]
}
first_screen() {
	head -n 40 "$src/README.md" | grep -q '^ *make run ' &&
		head -n 40 "$src/README.md" | grep -q '^ *make test '
}
# links_resolve FILE...: each [text](target) without a scheme names a file
# or directory relative to the file it is in (an #anchor dropped).
links_resolve() {
	local f target bad=0
	for f in "$@"; do
		while IFS= read -r target; do
			target=${target%%#*}
			[ -n "$target" ] || continue
			[ -e "$(dirname "$f")/$target" ] || { echo "$f: no $target"; bad=1; }
		done < <(grep -o '\](\([^):]*\))' "$f" | sed 's/^](\(.*\))$/\1/')
	done
	[ "$bad" = 0 ]
}
tap "README.md has at most 300 lines" short
tap "make run and make test are in the README's first 40 lines" first_screen
tap "every relative link of README.md and docs/*.md resolves" \
	links_resolve "$src/README.md" "$src"/docs/*.md
# the link check itself: a link to a missing file is caught
broken=$(mktemp -d)
printf '[gone](docs/gone.md)\n' >"$broken/README.md"
caught() { ! links_resolve "$@" >/dev/null; }
tap "a link to a missing file is caught" caught "$broken/README.md"
rm -rf "$broken"
echo "1..$n"
[ "$fails" = 0 ]
