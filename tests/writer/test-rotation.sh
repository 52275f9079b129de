#!/bin/sh
# test-rotation.sh: croft-writer rotates at rotate_size and on the aligned
# boundaries of rotate_interval; names are unique and in time order; every
# segment passes `zstd -t`, the decompressed dataset equals what was sent, and
# the seed's Python recipe (zstandard's stream_reader) reads every segment.
. "$(dirname "$0")/wlib.sh"
require_cmd zstd
wl_setup

# seed_python: a python3 that has the zstandard module (Debian's python3 has
# it from python3-zstandard; a pyenv python3 earlier on the PATH may not).
seed_python() {
	for p in python3 /usr/bin/python3; do
		"$p" -c 'import zstandard' 2>/dev/null && { command -v "$p"; return 0; }
	done
	return 1
}

# --- size rotation: 64 KiB segments
cat > "$CONF" <<CONF
[sampler]
poll_interval = 200ms
[writer]
rotate_size = 64KiB
rotate_interval = 1h
CONF
wl_start
"$WCLIENT" --socket "$RUN/writer.sock" --batches 300 --rows 10 --acks "$TEST_TMP/acks" \
	--dump "$TEST_TMP/sent" >/dev/null || fail "client"
wait_for wl_no_jsonl_segments 30 || fail "segments not compressed"
segs=$(wl_segments)
n=$(echo "$segs" | grep -c '\.jsonl\.zst$')
[ "$n" -ge 5 ] || fail "expected >= 5 size-rotated segments, got $n: $segs"
[ "$(echo "$segs" | sort -u)" = "$segs" ] || fail "names not unique"
for f in $segs; do
	zstd -t -q "$DATA/$f" || fail "zstd -t $f"
	size=$(zstd -q -dc "$DATA/$f" | wc -c)
	[ "$size" -ge 65536 ] || fail "$f holds $size bytes, under rotate_size"
	[ "$size" -lt 69632 ] || fail "$f holds $size bytes, far over rotate_size"
done
wl_dataset > "$TEST_TMP/got" || fail "reading the dataset"
cmp "$TEST_TMP/sent" "$TEST_TMP/got" || fail "dataset differs from what was sent"
# the seed's Python recipe reads the segments the default level writes
py=$(seed_python) || skip "no python3 with the zstandard module (python3-zstandard, make deps)"
for f in $segs; do
	"$py" - "$DATA/$f" > "$TEST_TMP/py" <<'PY' || fail "python zstandard recipe on $f"
import io, json, sys, zstandard
with open(sys.argv[1], "rb") as f:
    reader = io.TextIOWrapper(zstandard.ZstdDecompressor().stream_reader(f))
    rows = [json.loads(line) for line in reader]
print(len(rows))
PY
	[ "$(cat "$TEST_TMP/py")" = "$(zstd -q -dc "$DATA/$f" | wc -l)" ] ||
		fail "$f: the Python recipe read $(cat "$TEST_TMP/py") rows"
done
"$WCHECK" "$TEST_TMP/acks" 10 300 < "$TEST_TMP/got" || fail "wcheck"
wl_status | grep -q '"batches":300' || fail "status: $(wl_status)"
grep -q 'rotated (size)' "$WLOG" || fail "no size rotation logged"
wl_stop
echo "ok size rotation: $n segments"

# --- interval rotation: 2 s boundaries (multiples of 2 s since the epoch)
rm -rf "$DATA" "$TEST_TMP/acks"
cat > "$CONF" <<CONF
[sampler]
poll_interval = 200ms
[writer]
rotate_size = 1GiB
rotate_interval = 2s
CONF
wl_start
"$WCLIENT" --socket "$RUN/writer.sock" --batches 40 --rows 5 --window 1 --pace-ms 200 \
	--acks "$TEST_TMP/acks" --dump "$TEST_TMP/sent" >/dev/null || fail "client"
# the live file is closed at the next boundary even without new batches
wait_for '[ ! -s "$DATA/croft-dataset.jsonl" ]' 10 || fail "live file not rotated at the boundary"
wait_for wl_no_jsonl_segments 30 || fail "segments not compressed"
segs=$(wl_segments)
n=$(echo "$segs" | wc -l)
[ "$n" -ge 3 ] || fail "expected >= 3 interval segments, got $n: $segs"
first=1
prev=
for f in $segs; do
	stamp=${f#croft-dataset-}
	stamp=${stamp%%.*}
	[ -z "$prev" ] || [ "$stamp" \> "$prev" ] || fail "names out of order: $prev then $stamp"
	prev=$stamp
	secs=$(echo "$stamp" | cut -c14-15)
	# all but the first began on a boundary: an even second
	[ "$first" = 1 ] || [ $((1$secs % 2)) = 0 ] || fail "$f does not start on a 2 s boundary"
	first=0
	zstd -t -q "$DATA/$f" || fail "zstd -t $f"
done
wl_dataset > "$TEST_TMP/got" || fail "reading the dataset"
cmp "$TEST_TMP/sent" "$TEST_TMP/got" || fail "dataset differs from what was sent"
grep -q 'rotated (interval)' "$WLOG" || fail "no interval rotation logged"
wl_stop
echo "ok interval rotation: $n segments"
