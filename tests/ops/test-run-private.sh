#!/bin/bash
# test-run-private.sh: `croft run` as root from a tree the drop user may not
# enter (a checkout in a 0700 home): data dir, runtime dir and croft.conf
# all lie under a 0700 directory.  The daemons, dropped to croft or nobody,
# still write rows (the writer through the data dir's fd) and reload
# croft.conf through its kept directory (a good file is taken, a bad one is
# refused naming its line: it was read after the drop).  A second croft run
# on the same data dir is refused in one line.  At the stop croft run says
# where the data is and the command that reads it, and `croft stats` with
# no PATH, run there, reads those rows.
# usage: test-run-private.sh CROFT CROFTCTL PROBE_BINARY
set -u
. "$(dirname "$0")/../lib/testlib.sh"
. "$(dirname "$0")/opslib.sh"
CROFT=$(realpath "$1") CROFTCTL=$(realpath "$2") PROBE_BIN=$3
require_root
require_cmd jq zstd
ops_probe_expected; probe=$?
[ $probe = 2 ] && fail "the probe cannot run on this CI host"
ops_setup
HOME_DIR=$TEST_TMP/home CHECKOUT=$TEST_TMP/home/croft
mkdir -m 700 "$HOME_DIR"
mkdir -m 755 "$CHECKOUT" # as git makes it
R=$HOME_DIR/run C=$CHECKOUT/croft.conf D=$CHECKOUT/croft-data
conf() { # conf TEXT: replaces croft.conf the way editors save (a new file renamed over it)
	printf '%b' "$1" >"$C.new" && chmod 644 "$C.new" && mv "$C.new" "$C"
}
conf '[sampler]\npoll_interval = 500ms\n'
says() { grep -A3 "^$1" <<<"$out" | grep -qF "$2"; } # says DAEMON TEXT: in croftctl's answer

(cd "$CHECKOUT" && exec "$CROFT" run --data-dir ./croft-data --runtime-dir "$R" \
	--config ./croft.conf) >"$LOG" 2>&1 &
RUN_PID=$!
check "from a 0700 tree: croft run starts writer and sampler" \
	wait_for 'ops_up croft-writer && ops_up croft-sampler' 30
[ $probe = 0 ] && check "... and the probe" wait_for 'ops_up croft-probe' 30
user=$(id -nu "$(awk '$1 == "Uid:" { print $2 }' "/proc/$(ops_field croft-writer .pid)/status")")
check "the writer runs as croft or nobody ($user)" grep -qxE 'croft|nobody' <<<"$user"
check "rows reach the data dir under the 0700 directory" \
	wait_for "[ -s '$D/croft-dataset.jsonl' ]" 30

conf '[sampler]\npoll_interval = 1s\n[writer]\nzstd_level = 5\n'
out=$(ctl reload 2>&1); rc=$?
check "reload of a replaced croft.conf: every daemon takes it" [ $rc = 0 ]
check "... the writer read it after its drop" says croft-writer 'reloaded ./croft.conf'
check "... and its status shows the new zstd level" \
	[ "$(ops_field croft-writer .status.compression.level)" = 5 ]
[ $probe = 0 ] && check "... so did the probe" says croft-probe 'GPU device set reloaded'
conf '[writer]\nzstd_level = x\n'
out=$(ctl reload 2>&1); rc=$?
check "a bad croft.conf at reload is refused" [ $rc != 0 ]
check "... the writer names its line" says croft-writer 'croft.conf:2: zstd_level'
[ $probe = 0 ] && check "... and so does the probe" says croft-probe 'croft.conf:2: zstd_level'
conf '[sampler]\npoll_interval = 500ms\n'
check "a good file again: reload exits 0" quiet ctl reload

# past the host lock (test-run-once.sh tests that), the writer's own data dir lock
out=$(CROFT_RUN_LOCK=${CROFT_RUN_LOCK:-croft-run}-2 timeout 60 "$CROFT" run --data-dir "$D" \
	--runtime-dir "$TEST_TMP/run2" 2>&1); rc=$?
check "a second croft run on the same data dir exits 1" [ $rc = 1 ]
check "... saying it is in use and what to do" \
	grep -q "$D is in use by another croft-writer: stop that one, or give this one another --data-dir" <<<"$out"

ops_stop
check "croft run exits 0 after SIGINT" [ "$RUN_RC" = 0 ]
check "at the stop it says where the data is and the command that reads it" \
	grep -qF "the data is in ./croft-data; \`$CROFT stats ./croft-data\` reads it" "$LOG"
: >"$TEST_TMP/empty.conf" # defaults, whatever /etc/croft holds
out=$(cd "$CHECKOUT" && "$CROFT" stats --json --config "$TEST_TMP/empty.conf" 2>"$TEST_TMP/stats.err")
check "croft stats with no PATH, in that directory, says it reads ./croft-data" \
	grep -q 'reading ./croft-data, found here' "$TEST_TMP/stats.err"
lines=$({ for z in "$D"/croft-dataset-*.jsonl.zst; do [ -e "$z" ] && zstd -dcq "$z"; done
	cat "$D"/croft-dataset*.jsonl; } | wc -l)
check "... and counts every row of it ($(jq .rows <<<"$out") = $lines lines)" \
	[ "$(jq .rows <<<"$out")" = "$lines" ]
finish
