#!/bin/sh
# test-fulldisk.sh: croft-writer on a real small filesystem (a tmpfs with a
# size limit, mounted here as root) that fills up: nothing acked is lost,
# no line is torn, batches stay unacked while it is full (status says so,
# one log line per change), and everything pending lands in order once
# space is freed.
. "$(dirname "$0")/wlib.sh"
require_root
require_cmd mount umount zstd
wl_setup
MNT=$TEST_TMP/mnt
mkdir -p "$MNT"
mount -t tmpfs -o size=4m,mode=0755 croft-test "$MNT" || skip "cannot mount a tmpfs"
WL_UMOUNT=$MNT
DATA=$MNT/data
# segments rotate and compress while the disk fills: compression fails too
printf '[sampler]\npoll_interval = 200ms\n[writer]\nrotate_size = 256KiB\n' > "$CONF"
wl_start
# leave about 300 KiB free
avail=$(df -B1 --output=avail "$MNT" | tail -1)
head -c $((avail - 300 * 1024)) /dev/zero > "$MNT/filler" 2>/dev/null
# 600 batches of ~2.4 KB: ~1.4 MB, far over what is free
"$WCLIENT" --socket "$RUN/writer.sock" --batches 600 --rows 10 --pad 128 --window 4 \
	--acks "$TEST_TMP/acks" --timeout 120 --dump "$TEST_TMP/sent" > "$TEST_TMP/client.out" 2>&1 &
CPID=$!
wait_for 'wl_status | grep -q "\"state\":\"full\""' 30 || fail "status never showed a full disk: $(wl_status)"
wl_status | grep -q 'No space left on device' || fail "last_error does not say why: $(wl_status)"
wl_status | grep -q '"state":"degraded","why":"disk full' || fail "the envelope does not say degraded: $(wl_status)"
acked_full=$(wc -l < "$TEST_TMP/acks")
[ "$acked_full" -lt 600 ] || fail "everything acked on a full disk"
# stays unacked while full: nothing moves over a few retry periods
wl_dataset > "$TEST_TMP/got-full" || fail "reading the dataset on a full disk"
"$WCHECK" "$TEST_TMP/acks" 10 < "$TEST_TMP/got-full" || fail "dataset on a full disk"
n1=$(wc -l < "$TEST_TMP/acks")
wait_for '[ "$(grep -c "cannot append" "$WLOG")" -ge 1 ]' 5 || fail "full disk not logged"
sleep 1   # an observation window (five retries), not a synchronisation
[ "$(wc -l < "$TEST_TMP/acks")" = "$n1" ] || fail "acks while the disk was full"
[ "$(grep -c 'cannot append' "$WLOG")" = 1 ] || fail "more than one log line for one full-disk state"
rm -f "$MNT/filler"
wait "$CPID" || fail "client did not finish after space returned: $(cat "$TEST_TMP/client.out")"
CPID=
grep -q 'writing again' "$WLOG" || fail "recovery from a full disk not logged"
wl_status | grep -q '"state":"ok"' || fail "status still not ok: $(wl_status)"
wl_status | grep -q '"state":"up","why":null' || fail "the envelope still degraded: $(wl_status)"
wait_for wl_no_jsonl_segments 30 || fail "segments not compressed after space returned: $(ls "$DATA")"
for f in $(wl_segments); do zstd -t -q "$DATA/$f" || fail "zstd -t $f"; done
ls "$DATA" | grep -q '\.tmp$' && fail "a .zst.tmp left behind"
wl_dataset > "$TEST_TMP/got" || fail "reading the dataset"
cmp "$TEST_TMP/sent" "$TEST_TMP/got" || fail "dataset differs from what was sent"
"$WCHECK" "$TEST_TMP/acks" 10 600 < "$TEST_TMP/got" || fail "dataset after the full disk"
wl_stop
echo "ok full disk: $acked_full acked before it filled, all 600 in order after"
