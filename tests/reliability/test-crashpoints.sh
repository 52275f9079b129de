#!/bin/sh
# test-crashpoints.sh: croft-writer SIGKILLed at each filesystem step in
# turn (crashshim.so counts write/pwrite, fsync/fdatasync, rename, unlink,
# ftruncate and open calls across its threads and kills it at call N) of a
# scenario with appends, rotations, compressions and retention deletions.
# At the crash every .zst present is complete; after a restart the client
# finishes, and: one live file, no .zst.tmp, every segment readable, every
# acked batch present once and whole, only the oldest cut by retention.
. "$(dirname "$0")/rellib.sh"
require_cmd zstd python3 od
rl_setup
BATCHES=$(short_or_soak 24 60)
cat > "$CONF" <<CONF
[writer]
rotate_size = 4KiB
retention_size = 4KiB
zstd_level = 1
CONF
# rows that barely compress, so retention by size deletes segments
$PY -c 'import os, sys
for s in range(1, int(sys.argv[1]) + 1):
    for r in range(4):
        print("{\"unix_ms\":%d,\"tgid\":%d,\"seq\":%d,\"row\":%d,\"pad\":\"%s\"}" %
              (1792504800000 + s * 2000, 1000 + r, s, r, os.urandom(110).hex()))' "$BATCHES" > "$TEST_TMP/rows"
# one step of the scenario: crash at N (0: never); leaves the step count
run_scenario() {  # N
	rm -rf "$DATA" "$RUN" "$TEST_TMP/acks" "$LOGS/writer.log"
	mkdir -p "$RUN"
	WRITER_WRAP="env LD_PRELOAD=$CRASHSHIM CROFT_CRASH_AT=$1 CROFT_CRASH_COUNT=$TEST_TMP/count"
	rl_spawn_writer
	WRITER_WRAP=
	wait_for "[ -S '$RUN/writer.sock' ] || ! kill -0 $WPID 2>/dev/null" 20 || fail "writer did not start"
	"$WCLIENT" --socket "$RUN/writer.sock" --rows-file "$TEST_TMP/rows" --window 1 \
		--reconnect --timeout 60 --acks "$TEST_TMP/acks" > "$TEST_TMP/client.out" 2>&1 &
	CPID=$!
	EXTRA_PIDS=$CPID
}

# the steps of an undisturbed run
run_scenario 0
wait "$CPID" || fail "client failed without crashes: $(cat "$TEST_TMP/client.out")"
wait_for 'ls "$DATA" | grep -q "\.zst$" && ! ls "$DATA" | grep -qE "Z\.jsonl$|\.tmp$"' 30 ||
	fail "compression did not catch up"
rl_stop WPID
STEPS=$(awk '{ print $1 }' "$TEST_TMP/count")
deleted=$(grep -c 'delet' "$LOGS/writer.log" || true)
[ "$deleted" -gt 0 ] || fail "the scenario deletes no segment (retention not exercised)"
[ "$(grep -c ': compressed ' "$LOGS/writer.log")" -ge 2 ] || fail "the scenario compresses fewer than 2 segments"
$PY "$RELCHECK" synthetic "$DATA" "$TEST_TMP/acks" > /dev/null || fail "undisturbed run"
echo "# scenario: $BATCHES batches, $STEPS filesystem steps, $deleted retention deletions"

# every step in soak mode; about 30 in the short one, from a random start so
# that successive CI runs cover different steps
if [ "$SOAK" = 1 ]; then STRIDE=1; else STRIDE=$(( (STEPS + 29) / 30 )); fi
STRIDE=${CRASH_STRIDE:-$STRIDE}
n=$(( $(od -An -N2 -tu2 /dev/urandom) % STRIDE + 1 ))
crashed=0 cut=0
t0=$(now_ms)
while [ "$n" -le "$STEPS" ]; do
	run_scenario "$n"
	# until the writer dies at step n, or the client is done and compression
	# settled (a step beyond this run's count)
	wait_for "! kill -0 $WPID 2>/dev/null || { ! kill -0 $CPID 2>/dev/null && ! ls '$DATA' | grep -qE 'Z\.jsonl\$|\.tmp\$'; }" 60 ||
		fail "step $n: neither crashed nor finished"
	if ! kill -0 "$WPID" 2>/dev/null; then
		wait "$WPID" 2>/dev/null
		WPID=
		crashed=$((crashed + 1))
		step=$(awk '{ print $2 }' "$TEST_TMP/count")
		# at the crash: each .zst there is whole (renamed only once complete)
		for f in $(ls "$DATA" 2>/dev/null | grep '\.zst$'); do
			zstd -t -q "$DATA/$f" 2>/dev/null || fail "crash at step $n ($step): $f incomplete"
		done
		rl_spawn_writer
		wait_for 'rl_status writer >/dev/null' 20 || fail "no restart after the crash at step $n ($step): $(tail -n 3 "$LOGS/writer.log")"
	else
		step="none (run has fewer steps)"
	fi
	wait "$CPID" || fail "crash at step $n: client: $(tail -n 2 "$TEST_TMP/client.out")"
	EXTRA_PIDS=
	wait_for '! ls "$DATA" | grep -qE "Z\.jsonl$|\.tmp$"' 30 || fail "crash at step $n: compression stuck: $(ls "$DATA")"
	kill -TERM "$WPID"
	wait "$WPID"
	rc=$?
	WPID=
	if [ "$rc" = 137 ]; then
		# step n came during the shutdown: a crash point too; restart, stop again
		crashed=$((crashed + 1))
		step="$(awk '{ print $2 }' "$TEST_TMP/count") (at shutdown)"
		rl_start_writer
		rl_stop WPID
	elif [ "$rc" != 0 ]; then
		fail "step $n: writer exited $rc on SIGTERM"
	fi
	[ "$(ls "$DATA" | grep -c '^croft-dataset\.jsonl$')" = 1 ] || fail "crash at step $n: no live file"
	for f in $(ls "$DATA" | grep '\.zst$'); do
		zstd -t -q "$DATA/$f" || fail "crash at step $n ($step): $f unreadable after restart"
	done
	out=$($PY "$RELCHECK" synthetic "$DATA" "$TEST_TMP/acks" 2>&1) ||
		fail "crash at step $n ($step): $out"
	grep -q 'cut back' "$LOGS/writer.log" && cut=$((cut + 1))
	n=$((n + STRIDE))
done
echo "# $(( ($(now_ms) - t0) / 1000 )) s for $crashed crashes"
[ "$crashed" -ge $((STEPS / STRIDE * 8 / 10)) ] || fail "only $crashed of $((STEPS / STRIDE)) tried steps crashed the writer"
rl_figure crashpoints_steps "$STEPS"
rl_figure crashpoints_crashed "$crashed (every ${STRIDE}th step)"
echo "ok writer killed at $crashed of $STEPS filesystem steps (stride $STRIDE) (append, rotation, compression, retention): nothing lost or duplicated, every segment readable"
