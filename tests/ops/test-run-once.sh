#!/bin/bash
# test-run-once.sh: one collector a host.  A second `croft run`, in other
# temporary directories, is refused naming the first (its pid) and how to
# stop it; once the first is gone, SIGINTed or SIGKILLed, the next starts.
# With the units running (a croft-writer answering at
# UNITS/writer/writer.ctl, as under systemd) croft run is refused naming
# it and the systemctl line.  CROFT_RUN_LOCK (ops_env) scopes the lock to
# this build.
# usage: test-run-once.sh CROFT CROFTCTL PROBE_BINARY
set -u
. "$(dirname "$0")/../lib/testlib.sh"
. "$(dirname "$0")/opslib.sh"
CROFT=$1 CROFTCTL=$2
WRITER=$(dirname "$CROFT")/../writer/croft-writer
[ -x "$WRITER" ] || fail "no croft-writer at $WRITER"
[ -n "${CROFT_RUN_LOCK:-}" ] || fail "CROFT_RUN_LOCK unset: run me from meson (ops_env)"
ops_setup
: >"$C"
mkdir "$TEST_TMP/b"

ops_start
check "the first croft run is up" wait_for 'ops_up croft-writer && ops_up croft-sampler' 30
first=$RUN_PID

second() { # second RUNTIME: runs a croft run in other dirs; sets out, rc
	out=$(timeout 30 "$CROFT" run --data-dir "$TEST_TMP/b/data" --runtime-dir "$1" \
		--config "$C" 2>&1 </dev/null)
	rc=$?
}
second "$TEST_TMP/b/run"
check "a second croft run in other directories exits 1" [ "$rc" = 1 ]
check "... naming the first's pid and how to stop it" \
	grep -q "another croft run (pid $first, uid $(id -u)) runs on this host: stop it first (Ctrl-C where it runs, or kill -INT $first)" <<<"$out"
check "... starting no daemon" [ ! -e "$TEST_TMP/b/run/writer.ctl" ]
echo "# $(head -n 1 <<<"$out")"
check "the first still runs, all up" ops_up croft-sampler

ops_stop
check "the first stops on SIGINT" [ "$RUN_RC" = 0 ]
second_bg() {
	"$CROFT" run --data-dir "$TEST_TMP/b/data" --runtime-dir "$1" --config "$C" \
		>"$TEST_TMP/b.log" 2>&1 </dev/null &
	RUN_PID=$!
}
second_bg "$TEST_TMP/b/run"
check "then another starts" wait_for "[ -S '$TEST_TMP/b/run/writer.ctl' ] && \"$CROFTCTL\" --runtime-dir '$TEST_TMP/b/run' status >/dev/null" 30
# SIGKILLed: the kernel frees the lock at once, no file is left to go stale
kill -KILL "$RUN_PID"
wait "$RUN_PID" 2>/dev/null
RUN_PID=
second_bg "$TEST_TMP/b/run2"
check "after a SIGKILLed croft run the next starts" \
	wait_for "\"$CROFTCTL\" --runtime-dir '$TEST_TMP/b/run2' status >/dev/null" 30
ops_stop
check "... and stops on SIGINT" [ "$RUN_RC" = 0 ]

# the units: a writer answering where systemd puts it
U=$TEST_TMP/units
# its data dir made and handed over by the writer itself (root refuses one others may write)
mkdir -p "$U/writer"
"$WRITER" --config "$C" --runtime-dir "$U/writer" --data-dir "$TEST_TMP/udata" \
	>"$TEST_TMP/unit.log" 2>&1 &
unit=$!
OPS_CLEANUP_EXTRA="kill $unit 2>/dev/null"
check "the stand-in unit answers" wait_for "\"$CROFTCTL\" --runtime-dir '$U' status >/dev/null 2>&1 || [ -S '$U/writer/writer.ctl' ]" 30
out=$(timeout 30 "$CROFT" run --data-dir "$D" --runtime-dir "$R" --config "$C" \
	--units-runtime-dir "$U" 2>&1 </dev/null)
rc=$?
check "croft run while the units run exits 1" [ "$rc" = 1 ]
check "... naming the unit's socket and how to stop the units" \
	grep -q "the croft units run on this host (croft-writer answers on $U/writer/writer.ctl): stop them first (systemctl stop croft-sampler croft-probe croft-writer)" <<<"$out"
echo "# $(head -n 1 <<<"$out")"
out=$(CROFT_RUN_UNITS_DIR=$U timeout 30 "$CROFT" run --data-dir "$D" --runtime-dir "$R" \
	--config "$C" 2>&1 </dev/null)
check "... also with the path from CROFT_RUN_UNITS_DIR" grep -q "croft units run on this host" <<<"$out"
kill -TERM "$unit"
wait "$unit"
OPS_CLEANUP_EXTRA=
rm -f "$U/writer/writer.ctl" "$U/writer/writer.sock"

# what the units look like to an outsider: a unit's 0750 directory closed to
# it means they run; a closed directory above where they would be (this
# checkout in a 0700 home) says nothing of them
# (the binaries copied where nobody reaches them, in the build tree's layout)
N=$(mktemp -d) && chmod 755 "$N"
mkdir -p "$N"/{cli,writer,sampler}
cp "$CROFT" "$N/cli/" && cp "$WRITER" "$N/writer/" && cp "$C" "$N/croft.conf" &&
	cp "$(dirname "$CROFT")/../sampler/croft-sampler" "$N/sampler/"
chown -R nobody "$N"
as_nobody() { setpriv --reuid nobody --regid "$(id -g nobody)" --clear-groups "$@"; }
nobody_run() { # UNITS_DIR: croft run as nobody for a moment; sets out
	out=$(cd "$N" && as_nobody env -u XDG_RUNTIME_DIR timeout -s INT 5 ./cli/croft run \
		--data-dir ./data --config ./croft.conf --units-runtime-dir "$1" 2>&1 </dev/null)
}
# the stand-in writer left its directory to the user it dropped to (nobody
# where no croft user exists, whose group nogroup our nobody is in): give it
# an owner and group nobody is not, as the units' croft:croft 0750 is
chown root:root "$U/writer"
chmod 711 "$TEST_TMP" && chmod 750 "$U/writer"
nobody_run "$U"
check "as nobody, a unit's 0750 directory closed to it: refused" \
	grep -q "croft-writer keeps its 0750 directory closed to us at $U/writer/writer.ctl" <<<"$out"
chmod 700 "$TEST_TMP"
nobody_run "$U"
check "as nobody, the units' place behind a closed directory: not taken for the units" \
	grep -q "started croft-writer" <<<"$out"
rm -rf "$N"
ops_start --units-runtime-dir "$U"
check "with the units stopped croft run starts" wait_for 'ops_up croft-writer' 30
ops_stop
finish
