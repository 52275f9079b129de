#!/bin/sh
# test-clock.sh: wall-clock jumps under the running daemons, without
# touching the host's clock: clockshim.so offsets CLOCK_REALTIME, time()
# and gettimeofday() by the milliseconds in a file the test rewrites.
# Writer: one UTC hour crossed three times (the second and third live
# files begin at the same hour: no segment may overwrite another; every
# batch sent stays), back 1 day, forward 40 days (retention then deletes exactly the segments that are
# over 30 days old by their own time, and logs each).  Sampler: a busy
# process's cpu_cores stays right across +40 d and -1 d jumps (rates use
# the monotonic clock): no row over one core, and rate x span summed never
# more than the kernel's count of its CPU time.
. "$(dirname "$0")/rellib.sh"
require_cmd python3 zstd
rl_setup
OFF=$TEST_TMP/offset
echo 0 > "$OFF"
chmod 644 "$OFF"
set_offset() { echo "$1" > "$OFF.tmp" && chmod 644 "$OFF.tmp" && mv "$OFF.tmp" "$OFF"; }
cat > "$CONF" <<CONF
[sampler]
poll_interval = 250ms
idle_every = 1
[writer]
rotate_interval = 1h
retention_age = 30d
CONF
CLOCKENV="env LD_PRELOAD=$CLOCKSHIM CROFT_CLOCK_OFFSET_FILE=$OFF"
WRITER_WRAP=$CLOCKENV
SAMPLER_WRAP=$CLOCKENV
# the shim works: a shifted `date` (same preload)
[ "$(CROFT_CLOCK_OFFSET_FILE=$OFF LD_PRELOAD=$CLOCKSHIM sh -c 'echo 86400000 > '"$OFF"'; sleep 0.1; date +%s')" -gt $(( $(date +%s) + 86000 )) ] ||
	fail "clock shim has no effect"
set_offset 0

sh -c 'while :; do :; done' &
BUSY=$!
EXTRA_PIDS=$BUSY
# a recording pass-through: every batch the sampler sent must stay on disk
$PY "$(dirname "$0")/relproxy.py" "$TEST_TMP/proxy.sock" "$RUN/writer.sock" \
	"$TEST_TMP/proxy.log" 2>"$TEST_TMP/proxy.err" &
EXTRA_PIDS="$EXTRA_PIDS $!"
rl_start_writer
rl_start_sampler --writer-socket "$TEST_TMP/proxy.sock"
rl_wait_polls 4 || fail "sampler does not poll"

# 1. the same UTC hour crossed three times (the clock set back before it
# each time): the third live file begins at the same hour as the second,
# and its segment must not take (overwrite) the second's name
segs() { ls "$DATA" | grep -cE '^croft-dataset-.*\.jsonl(\.zst)?$'; }
now=$(date +%s)
H=$(( now - now % 3600 + 3600 ))
for i in 1 2 3; do
	s0=$(segs)
	set_offset $(( (H - 15 - $(date +%s)) * 1000 ))
	wait_for '[ "$(segs)" -gt '"$s0"' ]' 45 || fail "no rotation at the hour, crossing $i"
	rl_wait_polls 2
done
names=$(ls "$DATA" | grep -E '^croft-dataset-.*\.jsonl(\.zst)?$' | sed 's/\.zst$//' | sort)
[ "$(echo "$names" | uniq -d)" = "" ] || fail "two segments share a name: $names"
echo "# one hour crossed 3 times: segments $(echo $names)"
# 2. back one day from there
set_offset $(( (H - 86400 - $(date +%s)) * 1000 ))
rl_wait_polls 6
rl_stop SPID
wait_for '[ "$(rl_field writer peers)" = 0 ]' 10
rl_stop WPID
# the clock went back over the same seconds, so (tgid, unix_ms) may repeat
# legitimately; the row counts per sent batch must still match exactly
$PY "$RELCHECK" sent-clock "$DATA" "$TEST_TMP/proxy.log" || fail "rows lost across the clock jumps (a segment overwritten?)"

# rows: every line parses, nothing twice; the busy process's rate right
# throughout (checked before the +40 d step, which deletes these rows)
$PY - "$DATA" "$BUSY" <<'PY' || fail "after the clock jumps"
import os, re, sys
sys.path.insert(0, os.environ['RELCHECK'].rsplit('/', 1)[0])
import relcheck
data, busy = sys.argv[1], int(sys.argv[2])
rows = relcheck.parse_all(data)
mine = [r for r in rows if r['tgid'] == busy and 'cpu_cores' in r.get('usage', {})]
rates = [r['usage']['cpu_cores'] for r in mine]
if len(rates) < 10:
    relcheck.fail('only %d rows of the busy process' % len(rates))
# a poll in which the loop got no CPU (a loaded host) is a true 0.0
bad = [x for x in rates if not 0.0 <= x <= 1.1]
if bad:
    relcheck.fail('busy process cpu_cores out of [0, 1.1] across the jumps: %r' % bad[:8])
# what the rows say it did (rate x span, as croft stats sums it) against the
# kernel's count of its CPU time so far: never more, and not nothing
with open('/proc/%d/stat' % busy) as f:
    fields = f.read().rsplit(')', 1)[1].split()
cpu_s = (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')
rows_s = sum(r['usage']['cpu_cores'] * r['span_ms'] / 1000.0 for r in mine)
if not 0.0 < rows_s <= cpu_s + 0.25:
    relcheck.fail('busy process: rows add up to %.2f CPU-s, the kernel counts %.2f' % (rows_s, cpu_s))
print('rows=%d busy_rows=%d cpu_cores min %.2f max %.2f; %.2f CPU-s by the rows of %.2f'
      % (len(rows), len(rates), min(rates), max(rates), rows_s, cpu_s))
PY

# 3. forward 40 days, then a restart: what is over 30 days old by its own
# time goes at once (retention right after recovery), each deletion logged:
# every segment, and the live file recovery closes as one; nothing newer
# does.  The oldest segment is left uncompressed, as by a writer killed
# before compressing it: expired, it must go at the start too, not be queued
# for compression and kept until the next rotation.
zst=$(ls "$DATA" | grep -E '^croft-dataset-.*\.jsonl\.zst$' | sort | head -n 1)
[ -n "$zst" ] || fail "no compressed segment before the +40 d restart"
zstd -q -d "$DATA/$zst" -o "$DATA/${zst%.zst}" && chown --reference="$DATA/$zst" "$DATA/${zst%.zst}" &&
	chmod --reference="$DATA/$zst" "$DATA/${zst%.zst}" && rm "$DATA/$zst" || fail "cannot uncompress $zst"
before=$(ls "$DATA" | grep -cE '^croft-dataset-.*\.jsonl(\.zst)?$')
[ -s "$DATA/croft-dataset.jsonl" ] && before=$((before + 1))
set_offset $(( 40 * 86400 * 1000 ))
rl_start_writer
[ "$(rl_field writer segments_deleted)" = "$before" ] ||
	fail "$(rl_field writer segments_deleted) of $before segments 40 days old deleted at the start"
rl_start_sampler --writer-socket "$TEST_TMP/proxy.sock"
rl_wait_polls 6
rl_stop SPID
wait_for '[ "$(rl_field writer segments_deleted)" -ge '"$before"' ]' 30 ||
	fail "$(rl_field writer segments_deleted) of $before segments 40 days old deleted"
rl_stop WPID
kill -KILL "$BUSY"
deleted=$(grep -c 'retention: deleted' "$LOGS/writer.log")
[ "$deleted" -ge "$before" ] || fail "$deleted of $before deletions logged"

rl_figure clock_jumps "one hour crossed x3, -1 d, +40 d"
echo "ok wall-clock jumps: no segment overwritten, old data deleted by its own age, rates right"
