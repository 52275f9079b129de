#!/bin/sh
# test-recovery.sh: what croft-writer does at start with what a crash or an
# older collector left: a torn tail is cut back to the last commit, an old
# live file (no commit record) becomes a segment named for its first row,
# leftover .jsonl segments are compressed, stray .zst.tmp files removed, a
# .zst cut mid-frame beside its .jsonl is redone, a lone .zst is kept; a
# live file as other writers leave it (the seed's pretty-printed example
# row without its newline, rows spaced as Python writes them) keeps every
# row, as compact lines, named for its first row's time.
. "$(dirname "$0")/wlib.sh"
require_cmd zstd
wl_setup
printf '[sampler]\npoll_interval = 200ms\n' > "$CONF"

# --- 1: torn tail after a commit
wl_start
"$WCLIENT" --socket "$RUN/writer.sock" --batches 20 --rows 4 --acks "$TEST_TMP/acks" \
	--dump "$TEST_TMP/sent" >/dev/null || fail "client"
wl_kill
printf '{"unix_ms":1,"seq":21,"row":0,"pad":"torn' >> "$DATA/croft-dataset.jsonl"
wl_start
grep -q 'cut back from' "$WLOG" || fail "torn tail not reported"
wait_for wl_no_jsonl_segments 20 || fail "not compressed"
[ ! -s "$DATA/croft-dataset.jsonl" ] || fail "the old live file was not made a segment"
wl_dataset > "$TEST_TMP/got"
cmp "$TEST_TMP/sent" "$TEST_TMP/got" || fail "after a torn tail the dataset differs from what was acked"
wl_stop
echo "ok torn tail cut back to the commit"

# --- 2: an older collector's files in a fresh data dir
rm -rf "$DATA" "$TEST_TMP/acks"
mkdir -p "$DATA"
now_s=$(date +%s)
start_s=$((now_s - 7200 - now_s % 3600 + 1234))   # two hours ago, mid-hour
stamp() { date -u -d "@$1" +%Y%m%dT%H%M%SZ; }
"$GEN_ROWS" --processes 20 --polls 3 --start-ms "${start_s}000" > "$TEST_TMP/old"
{ cat "$TEST_TMP/old"; printf '{"unix_ms":%s000,"tgid":1,"proc' "$start_s"; } > "$DATA/croft-dataset.jsonl"
old_seg=croft-dataset-$(stamp "$start_s").jsonl
# a leftover segment never compressed
left=croft-dataset-$(stamp $((start_s - 3600))).jsonl
"$GEN_ROWS" --processes 30 --polls 5 --seed 7 > "$DATA/$left"
cp "$DATA/$left" "$TEST_TMP/left"
# a crash during compression: the .zst.tmp of a segment whose .jsonl is still there
cp "$DATA/$left" "$TEST_TMP/tmpsrc"
tmpseg=croft-dataset-$(stamp $((start_s - 5400))).jsonl
"$GEN_ROWS" --processes 10 --polls 2 --seed 9 > "$DATA/$tmpseg"
cp "$DATA/$tmpseg" "$TEST_TMP/tmpseg"
zstd -q -c "$DATA/$tmpseg" | head -c 100 > "$DATA/$tmpseg.zst.tmp"
# a .zst cut mid-frame, its .jsonl still there (crash between rename and unlink
# on a filesystem that lost the tail): redone
cutseg=croft-dataset-$(stamp $((start_s - 6000))).jsonl
"$GEN_ROWS" --processes 15 --polls 4 --seed 11 > "$DATA/$cutseg"
cp "$DATA/$cutseg" "$TEST_TMP/cutseg"
zstd -q -c "$DATA/$cutseg" | head -c 300 > "$DATA/$cutseg.zst"
# a lone truncated .zst: nothing to redo it from, so it stays as it is
lone=croft-dataset-$(stamp $((start_s - 6600))).jsonl.zst
"$GEN_ROWS" --processes 15 --polls 4 --seed 13 | zstd -q -c | head -c 200 > "$DATA/$lone"
lone_sum=$(cksum < "$DATA/$lone")

wl_start
wait_for wl_no_jsonl_segments 20 || fail "leftover segments not compressed: $(ls "$DATA")"
[ ! -e "$DATA/$tmpseg.zst.tmp" ] || fail "stray .zst.tmp not removed"
grep -q "$tmpseg.zst.tmp: removed" "$WLOG" || fail "stray .zst.tmp removal not logged"
for f in "$old_seg" "$left" "$tmpseg" "$cutseg"; do
	[ -e "$DATA/$f.zst" ] || fail "$f.zst missing: $(ls "$DATA")"
	zstd -t -q "$DATA/$f.zst" || fail "zstd -t $f.zst"
done
zstd -q -dc "$DATA/$old_seg.zst" | cmp - "$TEST_TMP/old" || fail "old live file: whole lines not kept as $old_seg"
zstd -q -dc "$DATA/$left.zst" | cmp - "$TEST_TMP/left" || fail "leftover segment content"
zstd -q -dc "$DATA/$tmpseg.zst" | cmp - "$TEST_TMP/tmpseg" || fail "segment interrupted in compression"
zstd -q -dc "$DATA/$cutseg.zst" | cmp - "$TEST_TMP/cutseg" || fail "truncated .zst not redone"
[ "$(cksum < "$DATA/$lone")" = "$lone_sum" ] || fail "a lone .zst was touched"
[ ! -s "$DATA/croft-dataset.jsonl" ] || fail "live file not empty after recovery"
# and the writer appends as usual afterwards
"$WCLIENT" --socket "$RUN/writer.sock" --batches 5 --rows 3 --acks "$TEST_TMP/acks" >/dev/null || fail "client after recovery"
"$WCHECK" "$TEST_TMP/acks" 3 5 < "$DATA/croft-dataset.jsonl" || fail "appends after recovery"
wl_stop
echo "ok old live file, leftover .jsonl, stray .zst.tmp, truncated .zst, lone .zst"

# --- 3: a crash while the commit of batch 3 was being stored (a torn newer
# slot): the older slot wins, batch 3 (never acked) is cut off, 1-2 stay
wl_start
"$WCLIENT" --socket "$RUN/writer.sock" --epoch 0x77 --batches 3 --rows 2 --window 1 >/dev/null || fail "client"
wl_kill
gen_before=$(od -An -tu8 -j8 -N8 "$DATA/croft-dataset.commit"; od -An -tu8 -j72 -N8 "$DATA/croft-dataset.commit")
# corrupt the slot with the higher generation
g0=$(od -An -tu8 -j8 -N8 "$DATA/croft-dataset.commit" | tr -d ' ')
g1=$(od -An -tu8 -j72 -N8 "$DATA/croft-dataset.commit" | tr -d ' ')
if [ "$g0" -gt "$g1" ]; then off=16; else off=80; fi
printf 'XXXX' | dd of="$DATA/croft-dataset.commit" bs=1 seek=$off conv=notrunc 2>/dev/null
wl_start
grep -q 'committed epoch 0000000000000077 seq 2,' "$WLOG" || fail "older slot not used ($gen_before): $(tail -3 "$WLOG")"
wait_for wl_no_jsonl_segments 20 || fail "not compressed"
seg=$(wl_segments | tail -1)
zstd -q -dc "$DATA/$seg" | grep -c '"epoch":"0000000000000077"' | grep -qx 4 ||
	fail "expected batches 1-2 (4 rows) of epoch 0x77 in $seg"
wl_stop
echo "ok torn commit slot: the older slot wins"

# --- 4: live files as other writers leave them (no commit record): every row kept
for case in seed spaced; do
	[ -z "$WPID" ] || wl_stop
	rm -rf "$DATA" && mkdir -p "$DATA"
	printf '[writer]\nretention_age = 10y\n' > "$CONF" # rows of October 2026
	if [ $case = seed ]; then
		cp "$(dirname "$0")/data/seed-example-row.json" "$DATA/croft-dataset.jsonl"
		seg=croft-dataset-20261020T141910Z.jsonl.zst want='1792505950473 234758'
	else
		printf '{"unix_ms": 1792504800123, "tgid": 7}\n{"unix_ms": 1792504802123, "tgid": 8}' \
			> "$DATA/croft-dataset.jsonl"
		seg=croft-dataset-20261020T140000Z.jsonl.zst want='1792504800123 7
1792504802123 8'
	fi
	wl_start
	wait_for wl_no_jsonl_segments 20 || fail "$case: not compressed: $(ls "$DATA")"
	[ -e "$DATA/$seg" ] || fail "$case: no $seg: $(ls "$DATA"; tail -3 "$WLOG")"
	got=$(zstd -q -dc "$DATA/$seg" | python3 -c '
import json, sys
for line in sys.stdin:
    r = json.loads(line)
    print(r["unix_ms"], r["tgid"])') || fail "$case: a line of $seg is not JSON"
	[ "$got" = "$want" ] || fail "$case: rows of $seg: $got"
done
wl_stop
echo "ok live files as other writers leave them: every row, named for the first"
