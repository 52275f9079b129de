#!/bin/bash
# test-rootpaths.sh: root follows no path a user can change (security review
# findings 1 and 15).  A local user A plants symlinks where root's croft run,
# croft-writer and croft-sampler make or open their directories (the data
# dir itself, a runtime dir, DATA/sampler-state, a data dir A made first),
# and hard links to root's files where the daemons hand files over (a
# leftover dataset segment, a spool file).  Each victim keeps its owner,
# mode and content; each refusal names why.  Fails on 685571a: the victims
# became the daemon user's (and 0750), the spool file was truncated.
set -u
. "$(dirname "$0")/seclib.sh"
sec_setup
W=$TEST_TMP/work # A's own directory, as a shared project directory or a /tmp one
mkdir -m 0755 "$W"
chown "$A_UID:$A_GID" "$W"
printf '[sampler]\npoll_interval = 500ms\ntextfile_dir =\n' >"$TEST_TMP/croft.conf"
chmod 0644 "$TEST_TMP/croft.conf"
export CROFT_RUN_LOCK=$TEST_TMP/croft-run.lock CROFT_RUN_UNITS_DIR=$TEST_TMP/no-units

# croft_run DATA RUNTIME: croft run as root, ended at the latest after 20 s;
# its output in $out, its status in $rc.
croft_run() {
	out=$(cd "$W" && timeout -s INT 20 "$CROFT" run --config "$TEST_TMP/croft.conf" \
		--data-dir "$1" --runtime-dir "$2" 2>&1)
	rc=$?
}

# 1, variant A: the data dir is A's symlink to root's directory
victim vA
as_a ln -s "$TEST_TMP/vA" "$W/croft-data"
croft_run ./croft-data "$TEST_TMP/runA"
check "data dir a symlink: croft run refuses (exit 1)" [ "$rc" = 1 ]
check "... saying why" grep -q 'symlink' <<<"$out"
check "... its target keeps owner and mode ($VICTIM_WAS)" [ "$(owner_mode "$TEST_TMP/vA")" = "$VICTIM_WAS" ]
check "... and holds nothing of croft's" [ -z "$(ls -A "$TEST_TMP/vA")" ]

# 1: a symlink one level up
victim vA2
as_a ln -s "$TEST_TMP/vA2" "$W/up"
croft_run "$W/up/croft-data" "$TEST_TMP/runA2"
check "a symlink above the data dir: refused" [ "$rc" = 1 ]
check "... nothing made through it" [ -z "$(ls -A "$TEST_TMP/vA2")" ]

# 1: the runtime dir is A's symlink
victim vR
as_a ln -s "$TEST_TMP/vR" "$W/rt"
croft_run "$TEST_TMP/dataR" "$W/rt"
check "runtime dir a symlink: refused" [ "$rc" = 1 ]
check "... its target keeps owner and mode" [ "$(owner_mode "$TEST_TMP/vR")" = "$VICTIM_WAS" ]

# 1: A made the data dir first (a real directory, A's): not handed over
as_a mkdir -m 0777 "$W/mine"
croft_run "$W/mine" "$TEST_TMP/runM"
check "a data dir another user owns: refused" [ "$rc" = 1 ]
check "... it stays A's" [ "$(stat -c %u "$W/mine")" = "$A_UID" ]

# 1, variant B: a data dir the daemon user owns (A stands in for it: a
# compromised daemon) holds a sampler-state symlink; the sampler as root
victim vB
mkdir -m 0750 "$TEST_TMP/dataB"
chown "$A_UID:$A_GID" "$TEST_TMP/dataB"
as_a ln -s "$TEST_TMP/vB" "$TEST_TMP/dataB/sampler-state"
mkdir -m 0750 "$TEST_TMP/runB"
timeout 20 "$SAMPLER" --config "$TEST_TMP/croft.conf" --runtime-dir "$TEST_TMP/runB" \
	--user "$A" --state-dir "$TEST_TMP/dataB/sampler-state" >"$TEST_TMP/sB.log" 2>&1 &
SEC_PIDS="$SEC_PIDS $!"
spid=$!
wait_for "! kill -0 $spid 2>/dev/null || [ -S '$TEST_TMP/runB/sampler.ctl' ]" 20
kill -TERM "$spid" 2>/dev/null
wait "$spid"
check "state dir a symlink: the sampler refuses it" grep -q 'state dir.*symlink' "$TEST_TMP/sB.log"
check "... its target keeps owner and mode" [ "$(owner_mode "$TEST_TMP/vB")" = "$VICTIM_WAS" ]
check "... and holds no spool" [ -z "$(ls -A "$TEST_TMP/vB")" ]

# 1: croft-writer --data-dir a symlink, started as root
victim vW
as_a ln -s "$TEST_TMP/vW" "$W/wdata"
timeout 20 "$WRITER" --config "$TEST_TMP/croft.conf" --runtime-dir "$TEST_TMP/runW" \
	--user "$A" --data-dir "$W/wdata" >"$TEST_TMP/wW.log" 2>&1
check "croft-writer: a symlinked data dir refused (exit 1)" [ $? = 1 ]
check "... its target keeps owner and mode" [ "$(owner_mode "$TEST_TMP/vW")" = "$VICTIM_WAS" ]

# 15: a leftover segment hard-linked to root's file, in a data dir of the daemon user
printf 'root-secret\n' >"$TEST_TMP/secret"
chmod 0600 "$TEST_TMP/secret"
SECRET_WAS=$(owner_mode "$TEST_TMP/secret")
mkdir -m 0750 "$TEST_TMP/dataH"
chown "$A_UID:$A_GID" "$TEST_TMP/dataH"
ln "$TEST_TMP/secret" "$TEST_TMP/dataH/croft-dataset-20250101T000000Z.jsonl" # root may, protected_hardlinks or not
timeout -s INT 20 "$WRITER" --config "$TEST_TMP/croft.conf" --runtime-dir "$TEST_TMP/runH" \
	--user "$A" --data-dir "$TEST_TMP/dataH" >"$TEST_TMP/wH.log" 2>&1 &
wpid=$!
SEC_PIDS="$SEC_PIDS $wpid"
wait_for "! kill -0 $wpid 2>/dev/null || '$WCTL' '$TEST_TMP/runH/writer.ctl' status >/dev/null 2>&1" 20
kill -TERM "$wpid" 2>/dev/null
wait "$wpid"
check "a hard-linked segment: root's file keeps its owner and mode" \
	[ "$(owner_mode "$TEST_TMP/secret")" = "$SECRET_WAS" ]
check "... the writer says it was not handed over" grep -q 'more than one link' "$TEST_TMP/wH.log"

# 15: a spool file hard-linked to root's file: neither chowned nor truncated
mkdir -m 0700 "$TEST_TMP/stateS"
chown "$A_UID:$A_GID" "$TEST_TMP/stateS"
ln "$TEST_TMP/secret" "$TEST_TMP/stateS/sampler.spool.1"
mkdir -m 0750 "$TEST_TMP/runS"
timeout 20 "$SAMPLER" --config "$TEST_TMP/croft.conf" --runtime-dir "$TEST_TMP/runS" \
	--user "$A" --state-dir "$TEST_TMP/stateS" >"$TEST_TMP/sS.log" 2>&1 &
spid=$!
SEC_PIDS="$SEC_PIDS $spid"
wait_for "! kill -0 $spid 2>/dev/null || '$WCTL' '$TEST_TMP/runS/sampler.ctl' status >/dev/null 2>&1" 20
kill -TERM "$spid" 2>/dev/null
wait "$spid"
check "a hard-linked spool file: root's file keeps its owner and mode" \
	[ "$(owner_mode "$TEST_TMP/secret")" = "$SECRET_WAS" ]
check "... and its content" [ "$(cat "$TEST_TMP/secret")" = root-secret ]

# and the legitimate run still works: a fresh data dir is root's to make and hand over
(cd "$W" && exec "$CROFT" run --config "$TEST_TMP/croft.conf" --data-dir "$TEST_TMP/fresh/croft-data" \
	--runtime-dir "$TEST_TMP/runF") >"$TEST_TMP/runF.log" 2>&1 &
rpid=$!
SEC_PIDS="$SEC_PIDS $rpid"
check "a fresh data dir: croft run starts the daemons" \
	wait_for "grep -q 'all daemons started' '$TEST_TMP/runF.log'" 60
kill -INT "$rpid"
wait "$rpid"
check "... and stops them cleanly (exit 0)" [ $? = 0 ]
check "... the data dir is 0750, the daemon user's" \
	[ "$(stat -c '%a' "$TEST_TMP/fresh/croft-data")" = 750 ] &&
	[ "$(stat -c %u "$TEST_TMP/fresh/croft-data")" != 0 ]
sec_done
