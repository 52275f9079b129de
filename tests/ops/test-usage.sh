#!/bin/bash
# test-usage.sh BUILD_ROOT: the wrong invocations of docs-audit.md §4, each
# answered as Debian's tools answer them: a usage error is one line naming
# the program with its subcommand, the option and the value and what is
# accepted, then "Try 'PROGRAM --help' for more information.", exit 2; other
# errors name the program and exit 1.  Plus croft help COMMAND, --version in
# croft --help, and the systemd generator refusing --help as a directory.
# Any user; runs nothing long (each daemon stops at its arguments or -n).
set -u
build=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
croft=$build/cli/croft croftctl=$build/cli/croftctl
writer=$build/writer/croft-writer sampler=$build/sampler/croft-sampler
probe=$build/probe/croft-probe gen=$build/bench/croft-gen-rows
generator=$build/systemd/croft-generator
n=0 fails=0

# expect RC FIRST_LINE_PATTERN [TRY_PROGRAM] -- COMMAND...: runs COMMAND
# (stdin empty); its exit status must be RC and its stderr's first line match
# the extended regex; with TRY_PROGRAM, stderr must be exactly two lines, the
# second "Try 'TRY_PROGRAM --help' for more information.".
expect() {
	local rc=$1 pattern=$2 try="" got err first
	shift 2
	if [ "$1" != -- ]; then try=$1; shift; fi
	shift
	n=$((n + 1))
	"$@" </dev/null >"$tmp/out" 2>"$tmp/err"
	got=$?
	first=$(head -n 1 "$tmp/err")
	err=""
	[ "$got" = "$rc" ] || err="exit $got, not $rc"
	[[ $first =~ $pattern ]] || err="$err; first line '$first' is not /$pattern/"
	if [ -n "$try" ]; then
		[ "$(wc -l <"$tmp/err")" = 2 ] || err="$err; $(wc -l <"$tmp/err") lines on stderr, not 2"
		[ "$(sed -n 2p "$tmp/err")" = "Try '$try --help' for more information." ] ||
			err="$err; no Try line for $try"
	fi
	local shown="${*#"$build/"}"
	if [ -z "$err" ]; then
		echo "ok $n - ${shown:0:90}: $got, $first"
	else
		echo "not ok $n - ${shown:0:90}: ${err#; }"
		sed 's/^/# /' "$tmp/err" | head -5
		fails=$((fails + 1))
	fi
}

mkdir "$tmp/empty"
printf '[{"name": "a"}]\n' >"$tmp/bad.json"
printf '[writer]\nretention_age = 30\ntextfile_dir = /x\n' >"$tmp/bad.conf"
"$gen" --processes 2 --polls 3 >"$tmp/rows.jsonl"
printf '[writer]\ndata_dir = /%s\n' "$(printf 'd%.0s' $(seq 200))" >"$tmp/long.conf"
long_id=$(printf 'a%.0s' $(seq 200))

# croft
expect 2 '^usage: croft COMMAND' -- "$croft"
expect 2 "^croft: unknown command 'frobnicate' \(commands: run, stats" croft -- "$croft" frobnicate
expect 2 "^croft: unrecognized option '--bogus'$" croft -- "$croft" --bogus
expect 2 "^croft run: unrecognized option '--bogus'$" "croft run" -- "$croft" run --bogus
expect 2 "^croft run: unexpected argument 'extra-arg'$" "croft run" -- "$croft" run extra-arg
expect 1 "^croft run: /nonexistent.conf: cannot read" -- "$croft" run --config /nonexistent.conf
expect 2 "^croft stats: --since 'yesterday': not a time \(ISO 8601" "croft stats" -- \
	"$croft" stats --since yesterday "$tmp/empty"
expect 2 "^croft stats: --tgid 'abc': not a process id \(0\.\." "croft stats" -- \
	"$croft" stats --tgid abc "$tmp/empty"
expect 2 "^croft stats: --threads '0': expected 1\.\." "croft stats" -- \
	"$croft" stats --threads 0 "$tmp/empty"
expect 2 "^croft stats: --svg is an option of croft profile$" "croft stats" -- \
	"$croft" stats --svg x "$tmp/empty"
expect 1 "^croft stats: /nonexistent: No such file or directory" -- "$croft" stats /nonexistent
expect 0 "^croft stats: no .jsonl or .jsonl.zst files under the given paths" -- \
	"$croft" stats "$tmp/empty"
expect 2 "^croft stats: /nonexistent.conf: cannot read" -- \
	"$croft" stats --config /nonexistent.conf "$tmp/empty"
expect 2 "^croft profile: give --tgid, --container, --pod, --label or --framework$" \
	"croft profile" -- "$croft" profile
expect 1 "^croft profile: /nonexistent/dir/x.svg: No such file or directory" -- \
	"$croft" profile --tgid 1000 --svg /nonexistent/dir/x.svg "$tmp/rows.jsonl"
expect 2 "^croft catalog: give show or check FILE$" "croft catalog" -- "$croft" catalog
expect 2 "^croft catalog: check needs a FILE$" "croft catalog" -- "$croft" catalog check
expect 2 "^croft catalog: unrecognized option '--bogus'$" "croft catalog" -- \
	"$croft" catalog --bogus
expect 2 "^croft catalog: show takes no argument \(got 'extra'\)$" "croft catalog" -- \
	"$croft" catalog show extra
expect 1 "^croft catalog: /nonexistent.json: No such file or directory" -- \
	"$croft" catalog check /nonexistent.json
expect 1 "^croft catalog: .*bad.json: entry 1 \(\"a\"\): no pattern" -- \
	"$croft" catalog check "$tmp/bad.json"
# croftctl
expect 2 "^croftctl: give a command: status, reload or label$" croftctl -- "$croftctl"
expect 2 "^croftctl status: unrecognized option '--bogus'$" "croftctl status" -- \
	"$croftctl" status --bogus
expect 2 "^croftctl reload: unexpected argument 'extra'$" "croftctl reload" -- \
	"$croftctl" reload extra
expect 2 "^croftctl: unrecognized option '--bogus'$" croftctl -- "$croftctl" --bogus
expect 2 "^croftctl label: container id 'a+\.\.\.': expected 64 lowercase hex digits$" \
	"croftctl label" -- "$croftctl" label "$long_id" x
expect 1 "" -- "$croftctl" --runtime-dir /nonexistent status
# the daemons
expect 2 "^croft-writer: unrecognized option '--bogus'$" croft-writer -- "$writer" --bogus
expect 2 "^croft-writer: option requires an argument -- 'c'$" croft-writer -- "$writer" -c
expect 2 "^croft-writer: unexpected argument 'extra'$" croft-writer -- "$writer" extra
expect 1 "bad.conf:2: retention_age: '30' is not a duration" -- \
	"$writer" -n -c "$tmp/bad.conf"
n=$((n + 1))
if grep -q "bad.conf:3: textfile_dir: belongs in \[sampler\], not \[writer\]" "$tmp/err"; then
	echo "ok $n - a key in the wrong section says where it belongs"
else
	echo "not ok $n - a key in the wrong section says where it belongs"
	fails=$((fails + 1))
fi
expect 0 "" -- "$sampler" -n -c "$tmp/long.conf"
if [ -x "$probe" ]; then
	expect 2 "^croft-probe: --map-entries 'abc': expected 1\.\.16777216$" croft-probe -- \
		"$probe" --map-entries abc -n
fi
expect 2 "^croft-gen-rows: --processes 'abc': expected 1\.\." croft-gen-rows -- \
	"$gen" --processes abc
expect 2 "^croft-gen-rows: --vanished-unread '0': expected 1\.\." croft-gen-rows -- \
	"$gen" --vanished-unread 0
expect 2 "^croft-generator: '--bogus' is not an absolute directory$" croft-generator -- \
	"$generator" --bogus
expect 2 "^croft-generator: 'relative' is not an absolute directory$" croft-generator -- \
	"$generator" relative

# help: on stdout, exit 0; croft help COMMAND is that command's
check_help() { # check_help PATTERN COMMAND...
	local pattern=$1
	shift
	n=$((n + 1))
	if "$@" >"$tmp/out" 2>&1 && grep -Eq -- "$pattern" "$tmp/out"; then
		echo "ok $n - ${*#"$build/"}: /$pattern/"
	else
		echo "not ok $n - ${*#"$build/"}: no /$pattern/ on stdout, or not exit 0"
		fails=$((fails + 1))
	fi
}
check_help '^usage: croft stats' "$croft" help stats
check_help '^usage: croft profile' "$croft" help profile
check_help '^usage: croft run' "$croft" help run
check_help '--version' "$croft" --help
check_help '--version' "$croftctl" --help
check_help '^usage: croftctl' "$croftctl" label --help
check_help '^usage: croft-generator NORMAL_DIR' "$generator" --help
[ -d "$tmp/--help" ] || [ -z "$(ls "$tmp")" ] # nothing made of --help
expect 2 "^croft help: unknown command 'frob'" "croft help" -- "$croft" help frob
echo "1..$n"
[ "$fails" = 0 ]
