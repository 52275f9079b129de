#!/bin/sh
# test-protocol.sh: croft-writer's side of writer.sock and writer.ctl: a
# batch that is not its announced whole lines drops the peer with nothing of
# it written; a batch already committed is acked and not written again;
# peers other than root and the writer's user are refused (SO_PEERCRED);
# status reports what was written.
. "$(dirname "$0")/wlib.sh"
wl_setup
printf '[sampler]\npoll_interval = 200ms\n' > "$CONF"
wl_start
live=$DATA/croft-dataset.jsonl

# a row count that disagrees with the lines: batches 1-4 land, 5 does not
"$WCLIENT" --socket "$RUN/writer.sock" --epoch 1 --batches 5 --rows 3 --window 1 --bad rows \
	--acks "$TEST_TMP/acks1" >/dev/null 2>&1 && fail "a bad batch was accepted"
grep -q 'batch is not its announced whole lines; dropped' "$WLOG" || fail "drop not logged"
"$WCHECK" "$TEST_TMP/acks1" 3 4 < "$live" || fail "after a bad row count"
size=$(wc -c < "$live")

# a last line without its newline: nothing written
"$WCLIENT" --socket "$RUN/writer.sock" --epoch 2 --batches 1 --rows 3 --bad partial >/dev/null 2>&1 &&
	fail "a partial line was accepted"
[ "$(wc -c < "$live")" = "$size" ] || fail "a partial batch was written"
tail -c 1 "$live" | od -An -c | grep -q '\\n' || fail "live file does not end in a newline"

# duplicates: a client that ignores the HELLO and resends 1..8 of a stream
# whose 1..5 are committed gets 8 acks and only 6..8 are written
rm -f "$TEST_TMP/acks3"
"$WCLIENT" --socket "$RUN/writer.sock" --epoch 3 --batches 5 --rows 2 --acks "$TEST_TMP/acks3" >/dev/null ||
	fail "client"
"$WCLIENT" --socket "$RUN/writer.sock" --epoch 3 --batches 8 --rows 2 --resend-all \
	--acks "$TEST_TMP/acks3b" >/dev/null || fail "duplicates not acked"
[ "$(wc -l < "$TEST_TMP/acks3b")" = 8 ] || fail "expected 8 acks for the resent stream"
[ "$(grep -c '"epoch":"0000000000000003"' "$live")" = 16 ] || fail "duplicates written again"
wl_status | grep -q '"duplicates":5' || fail "status does not count 5 duplicates: $(wl_status)"

# status: the figures the issue names
st=$(wl_status)
for key in '"live":{"name":"croft-dataset.jsonl","bytes":' '"segments":{"count":' '"compression":{"queue":' \
	'"last_ratio":' '"last_mb_s":' '"written":{"batches":' '"rows":' '"disk":{"state":"ok","free_bytes":' \
	'"last_error":' '"oldest":' '"newest":'; do
	echo "$st" | grep -qF "$key" || fail "status lacks $key: $st"
done
echo "ok bad batches dropped, duplicates acked not written, status"

# SO_PEERCRED: a uid that is neither root nor the writer's user is refused
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	chmod 0755 "$RUN"
	chmod 0666 "$RUN/writer.sock"
	setpriv --reuid=54321 --regid=54321 --clear-groups "$WCLIENT" --socket "$RUN/writer.sock" \
		--epoch 9 --batches 1 >/dev/null 2>&1 && fail "a foreign uid was served"
	grep -q 'refused pid [0-9]* uid 54321' "$WLOG" || fail "refusal not logged"
	grep -q '"epoch":"0000000000000009"' "$live" && fail "a foreign uid's batch was written"
	echo "ok foreign uid refused"
else
	echo "# foreign uid check needs root and setpriv; not run"
fi
wl_stop
