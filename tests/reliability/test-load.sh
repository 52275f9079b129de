#!/bin/sh
# test-load.sh: N long-lived idle processes across M cgroups (short: 1 000
# across 10 for ~40 polls; CROFT_SOAK=1: 5 000 across 50 for 10 minutes)
# under the whole suite.  Every watched process has a row at least every
# idle_every polls (its idle cadence) while it lives; the sampler's poll
# duration p99 and each daemon's RSS are printed and bounded.
. "$(dirname "$0")/rellib.sh"
require_cmd python3 zstd
rl_setup
NPROCS=${NPROCS:-$(short_or_soak 1000 5000)}
NCG=${NCG:-$(short_or_soak 10 50)}
SECONDS_RUN=${SECONDS_RUN:-$(short_or_soak 25 600)}
INTERVAL=$(short_or_soak 500 2000)
IDLE_EVERY=$(short_or_soak 3 15)
# bounds: the sampler keeps up (p99 below the interval) in bounded memory
RSS_MAX_KB=$(short_or_soak 131072 393216)
cat > "$CONF" <<CONF
[sampler]
poll_interval = ${INTERVAL}ms
idle_every = $IDLE_EVERY
[writer]
rotate_size = 8MiB
CONF
[ "$(id -u)" = 0 ] || NCG=0
"$RELPROCS" spawn "$NPROCS" "$NCG" "$TEST_TMP/pids" croft-rel-load > "$TEST_TMP/spawn.out" &
HELPER_PID=$!
wait_for '[ -s "$TEST_TMP/pids" ]' 120 || fail "helper did not start"
cat "$TEST_TMP/spawn.out"
[ "$(wc -l < "$TEST_TMP/pids")" = "$NPROCS" ] || fail "only $(wc -l < "$TEST_TMP/pids") processes spawned"
rl_start_suite
# the window: from the third poll (every process has its baseline) on
rl_wait_polls 3 120 || fail "sampler does not poll"
since=$(now_ms)
end=$(( $(date +%s) + SECONDS_RUN ))
: > "$TEST_TMP/polls"
# flat KEY JSON: a top-level number (no python: this loop must be quick)
flat() { echo "$2" | tr ',{' '\n\n' | sed -n "s/^\"$1\":\([0-9.]*\)$/\1/p"; }
rss_max_s=0 rss_max_w=0 rss_max_p=0 rss_first_s=
last=
while [ "$(date +%s)" -lt "$end" ]; do
	st=$(rl_status sampler)
	p=$(flat polls "$st")
	if [ -n "$p" ] && [ "$p" != "$last" ]; then
		echo "$p $(flat last_poll_ms "$st") $(flat last_poll_cpu_ms "$st")" >> "$TEST_TMP/polls"
		last=$p
		for d in s:$SPID w:$WPID p:$PPID_; do
			[ -n "${d#*:}" ] || continue
			kb=$(rl_rss_kb "${d#*:}")
			eval "[ \"${kb:-0}\" -gt \"\$rss_max_${d%%:*}\" ] && rss_max_${d%%:*}=$kb"
		done
		[ -n "$rss_first_s" ] || rss_first_s=$(rl_rss_kb "$SPID")
	fi
	sleep 0.1
done
until=$(now_ms)
rl_wait_polls 2
rl_stop_suite
kill -TERM "$HELPER_PID"; wait "$HELPER_PID"; HELPER_PID=
$PY "$RELCHECK" cadence "$DATA" "$TEST_TMP/pids" "$IDLE_EVERY" "$since" "$until" ||
	fail "rows missing under load"
pct() {  # COLUMN: samples p50 p99 max
	sort -k"$1" -g "$TEST_TMP/polls" | awk -v c="$1" '{ v[NR] = $c } END {
	i = int(NR * 0.99 + 0.999); if (i < 1) i = 1; if (i > NR) i = NR
	printf "%d %.1f %.1f %.1f", NR, v[int((NR + 1) / 2)], v[i], v[NR] }'
}
set -- $(pct 3)
cpu_p50=$2 cpu_p99=$3
set -- $(pct 2)
rl_figure load_processes "$NPROCS"
rl_figure load_cgroups "$NCG"
rl_figure load_polls_sampled "$1"
rl_figure poll_ms_p50 "$2"
rl_figure poll_ms_p99 "$3"
rl_figure poll_ms_max "$4"
rl_figure poll_cpu_ms_p50 "$cpu_p50"
rl_figure poll_cpu_ms_p99 "$cpu_p99"
rl_figure rss_kb_sampler "$rss_max_s (first poll $rss_first_s)"
rl_figure rss_kb_writer "$rss_max_w"
rl_figure rss_kb_probe "$rss_max_p"
# CPU per poll is the sampler's own cost; wall time also counts a loaded
# host's scheduling, so its bound is looser
awk -v p="$cpu_p99" -v i="$INTERVAL" 'BEGIN { exit !(p < i / 2) }' ||
	fail "poll CPU p99 $cpu_p99 ms is not below half the poll interval $INTERVAL ms"
awk -v p="$3" -v i="$INTERVAL" 'BEGIN { exit !(p < 2 * i) }' ||
	fail "poll p99 $3 ms is over twice the poll interval $INTERVAL ms"
for d in s w p; do
	eval "kb=\$rss_max_$d"
	[ "$kb" -le "$RSS_MAX_KB" ] || fail "daemon $d RSS $kb KiB over $RSS_MAX_KB KiB"
done
echo "ok $NPROCS processes across $NCG cgroups: every due row present; poll p99 $3 ms wall, $cpu_p99 ms CPU ($1 polls sampled); RSS KiB sampler $rss_max_s writer $rss_max_w probe $rss_max_p"
