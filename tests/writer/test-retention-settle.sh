#!/bin/sh
# test-retention-settle.sh: with realistic rows (croft-gen-rows) rotating
# many times, the segments the writer keeps settle within one compressed
# segment under retention_size: a segment in compression is not counted at
# its raw size, and retention runs again once it is compressed.
. "$(dirname "$0")/wlib.sh"
require_cmd zstd
wl_setup
LIMIT=262144 # retention_size, bytes

cat > "$CONF" <<CONF
[writer]
rotate_size = 128KiB
rotate_interval = 1h
retention_size = 256KiB
retention_age = 30d
zstd_level = 3
CONF
"$GEN_ROWS" --processes 40 --polls 400 --seed 5 > "$TEST_TMP/rows"
wl_start
"$WCLIENT" --socket "$RUN/writer.sock" --rows-file "$TEST_TMP/rows" --window 4 \
	--acks "$TEST_TMP/acks" >/dev/null || fail "client"
# status is answered by the loop that runs retention after each compression
wait_for '[ "$(wl_field queue)" = 0 ] && wl_no_jsonl_segments' 60 ||
	fail "compression did not catch up: $(wl_status)"

total=0 largest=0 n=0
for f in $(wl_segments); do
	b=$(stat -c %s "$DATA/$f")
	total=$((total + b))
	[ "$b" -gt "$largest" ] && largest=$b
	n=$((n + 1))
done
rotations=$(grep -c 'rotated (size)' "$WLOG")
deleted=$(grep -c 'retention: deleted' "$WLOG")
echo "# figure: $rotations rotations, $deleted deleted, $n kept: $total bytes stored," \
	"limit $LIMIT, largest segment $largest"
[ "$deleted" -ge 5 ] || fail "retention_size was reached only $deleted times: a weak test"
[ "$total" -le "$LIMIT" ] || fail "$total bytes kept, over retention_size $LIMIT"
[ "$total" -gt $((LIMIT - largest)) ] ||
	fail "$total bytes kept: more than one segment ($largest bytes) under retention_size $LIMIT"
wl_stop
echo "ok settled: $total of $LIMIT bytes, within one segment ($largest)"
