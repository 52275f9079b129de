#!/bin/sh
# test-corrupt.sh: damaged data files.  A live file with a garbage tail, a
# NUL tail or a whole garbage line past the last commit: the restarted
# writer cuts it back (and says so), every acked batch stays once.  A
# truncated and a corrupted .zst segment: the writer leaves them alone and
# keeps working; `croft stats` reads the rest, reports what it skipped
# (exit 3), and counts every row of the intact files.
. "$(dirname "$0")/rellib.sh"
require_cmd zstd python3
rl_setup
CROFT=$(dirname "$CROFTCTL")/croft
cat > "$CONF" <<CONF
[writer]
rotate_size = 8KiB
CONF
client() {  # BATCHES
	"$WCLIENT" --socket "$RUN/writer.sock" --batches "$1" --rows 4 --pad 100 --reconnect \
		--timeout 60 --acks "$TEST_TMP/acks" > "$TEST_TMP/client.out" 2>&1 ||
		fail "client: $(cat "$TEST_TMP/client.out")"
}
rl_start_writer
client 40
rl_stop WPID
tails=0
for tail in nul garbage line; do
	case $tail in
	nul) head -c 300 /dev/zero >> "$DATA/croft-dataset.jsonl" ;;
	garbage) head -c 300 /dev/urandom >> "$DATA/croft-dataset.jsonl" ;;
	line) printf '{"unix_ms":1,"tgid":1,"seq":999999,"row":0,"torn' >> "$DATA/croft-dataset.jsonl"
	      printf '\nnot json at all\n' >> "$DATA/croft-dataset.jsonl" ;;
	esac
	: > "$LOGS/writer.log"
	rl_start_writer
	grep -qi 'cut back' "$LOGS/writer.log" || fail "$tail tail: the writer did not report cutting it back"
	client 40   # the same client: all 40 already acked, nothing new
	rl_stop WPID
	$PY "$RELCHECK" synthetic "$DATA" "$TEST_TMP/acks" > /dev/null || fail "after a $tail tail"
	tails=$((tails + 1))
done
echo "# $tails damaged live-file tails cut back: $(grep -i 'cut back' "$LOGS/writer.log" | head -n 1 | cut -c1-120)"

# damaged segments: a fresh data dir of realistic rows (croft-gen-rows)
"$GEN_ROWS" --processes 20 --polls 60 --seed 7 > "$TEST_TMP/rows" || fail "croft-gen-rows"
chmod 644 "$TEST_TMP/rows"
DATA=$TEST_TMP/data2
rl_start_writer
"$WCLIENT" --socket "$RUN/writer.sock" --rows-file "$TEST_TMP/rows" --timeout 60 > /dev/null 2>&1 ||
	fail "client with realistic rows"
rl_stop WPID
wait_for '[ "$(ls "$DATA" | grep -c "\.zst$")" -ge 3 ]' 10 || fail "fewer than 3 segments"
set -- $(ls "$DATA" | grep '\.zst$' | sort)
trunc=$1 flip=$2
good_rows=0
for f in $(ls "$DATA" | grep '\.zst$'); do
	[ "$f" = "$trunc" ] || [ "$f" = "$flip" ] || good_rows=$((good_rows + $(zstd -dc "$DATA/$f" | wc -l)))
done
good_rows=$((good_rows + $(wc -l < "$DATA/croft-dataset.jsonl")))
size=$(stat -c %s "$DATA/$trunc")
truncate -s $((size / 2)) "$DATA/$trunc"
size=$(stat -c %s "$DATA/$flip")
printf '\377\377\377\377\377\377\377\377' | dd of="$DATA/$flip" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
rl_start_writer
"$GEN_ROWS" --processes 4 --polls 5 --seed 8 --start-ms 1900000000000 > "$TEST_TMP/rows2"
chmod 644 "$TEST_TMP/rows2"
"$WCLIENT" --socket "$RUN/writer.sock" --epoch 0x5eee --rows-file "$TEST_TMP/rows2" --timeout 30 > /dev/null 2>&1 ||
	fail "writer does not take batches beside damaged segments"
rl_stop WPID
[ -e "$DATA/$trunc" ] && [ -e "$DATA/$flip" ] || fail "the writer removed a damaged segment"
"$CROFT" stats --json "$DATA" > "$TEST_TMP/stats.json" 2> "$TEST_TMP/stats.err"
rc=$?
[ "$rc" = 3 ] || fail "croft stats exit $rc over damaged segments (want 3): $(cat "$TEST_TMP/stats.err")"
rows=$($PY -c 'import json, sys; print(json.load(open(sys.argv[1]))["rows"])' "$TEST_TMP/stats.json" 2>/dev/null)
new_rows=$(wc -l < "$TEST_TMP/rows2")
[ -n "$rows" ] && [ "$rows" -ge $((good_rows + new_rows)) ] ||
	fail "croft stats counted ${rows:-no} rows; the intact files hold $good_rows (+$new_rows new)"
grep -q "$trunc" "$TEST_TMP/stats.err" "$TEST_TMP/stats.json" || fail "the truncated segment is not named in the report"
grep -q "$flip" "$TEST_TMP/stats.err" "$TEST_TMP/stats.json" || fail "the corrupted segment is not named in the report"
rl_figure corrupt_cases "$tails live tails, 1 truncated + 1 corrupted .zst"
echo "ok damaged data: tails cut back with nothing acked lost; damaged segments reported, $rows rows read around them"
