#!/bin/sh
# test-killloop.sh: a client streams numbered batches while croft-writer is
# SIGKILLed at random moments and restarted, at least 100 times (during
# recovery, appends, rotations and compressions).  Afterwards every acked
# batch is in the dataset exactly once, in order, and every line parses.
. "$(dirname "$0")/wlib.sh"
require_cmd zstd od
wl_setup
KILLS=${KILLS:-110}

cat > "$CONF" <<CONF
[sampler]
poll_interval = 100ms
[writer]
rotate_size = 48KiB
CONF
# random milliseconds in 0..$1-1, from the kernel's generator
rand_ms() {
	echo $(( $(od -An -N2 -tu2 /dev/urandom) % $1 ))
}

wl_start
"$WCLIENT" --socket "$RUN/writer.sock" --batches 1000000 --rows 7 --window 16 --reconnect \
	--timeout 600 --acks "$TEST_TMP/acks" > "$TEST_TMP/client.out" 2>&1 &
CPID=$!
i=0
while [ "$i" -lt "$KILLS" ]; do
	# a random moment: from right after the start (mid-recovery) to well into appending
	sleep "0.$(printf %03d "$(rand_ms 250)")"
	wl_kill
	kill -0 "$CPID" 2>/dev/null || fail "client ended early: $(cat "$TEST_TMP/client.out")"
	wl_spawn
	i=$((i + 1))
done
# let it settle: the last writer must serve and ack again
before=$(wc -l < "$TEST_TMP/acks")
wait_for '[ "$(wc -l < "$TEST_TMP/acks")" -gt "$((before + 20))" ]' 30 || fail "no acks after the last restart"
kill -TERM "$CPID"
wait "$CPID" 2>/dev/null
CPID=
wl_stop
acked=$(wc -l < "$TEST_TMP/acks")
[ "$acked" -ge 500 ] || fail "only $acked batches acked over $KILLS restarts"
grep -c 'cut back' "$WLOG" > "$TEST_TMP/cuts" || true
wl_dataset > "$TEST_TMP/got" || fail "reading the dataset"
for f in $(wl_segments); do
	case $f in *.zst) zstd -t -q "$DATA/$f" || fail "zstd -t $f" ;; esac
done
"$WCHECK" "$TEST_TMP/acks" 7 < "$TEST_TMP/got" || fail "dataset check after $KILLS kills"
echo "ok $KILLS SIGKILLs: $acked batches acked, $(wl_segments | wc -l) segments, $(cat "$TEST_TMP/cuts") torn tails cut back"
