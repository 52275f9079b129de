#!/bin/sh
# test-churn.sh: many short-lived processes a second (fork + exec + exit;
# short: 500/s for 10 s, CROFT_SOAK=1: 1 700/s = 100 000 a minute, for 5
# minutes) under the whole suite.  The probe accounts for every exit: the
# exits it delivered plus what it reports dropped cover every churned one;
# every line parses, nothing twice; the daemons' memory stays flat.
. "$(dirname "$0")/rellib.sh"
require_bpf
require_cmd python3
[ "$PROBE" != not-built ] || skip "probe not built"
rl_setup
RATE=$(short_or_soak 500 1700)
SECS=$(short_or_soak 10 300)
cat > "$CONF" <<CONF
[sampler]
poll_interval = 500ms
CONF
rl_start_suite
rl_wait_polls 3 || fail "sampler does not poll"
probe_num() { rl_field probe "$1"; }
drops() { rl_status probe | $PY -c 'import json, sys; print(sum(json.load(sys.stdin)["drops"].values()))'; }
rss() { echo "$(rl_rss_kb "$WPID") $(rl_rss_kb "$SPID") $(rl_rss_kb "$PPID_")"; }
e0=$(probe_num exits_seen) d0=$(drops)
set -- $(rss); w0=$1 s0=$2 p0=$3
"$RELPROCS" churn "$RATE" "$SECS" > "$TEST_TMP/churn.out" || fail "churn helper"
churned=$(sed -n 's/^churned=\([0-9]*\).*/\1/p' "$TEST_TMP/churn.out")
rl_wait_polls 4
e1=$(probe_num exits_seen) d1=$(drops)
set -- $(rss); w1=$1 s1=$2 p1=$3
rl_stop_suite
$PY "$RELCHECK" lines "$DATA" || fail "dataset after churn"
exits=$((e1 - e0)) dropped=$((d1 - d0))
rl_figure churn "$(cat "$TEST_TMP/churn.out")"
rl_figure churn_probe "exits_seen +$exits, drops +$dropped"
rl_figure churn_rss_kb "writer $w0->$w1 sampler $s0->$s1 probe $p0->$p1"
[ $((exits + dropped)) -ge "$churned" ] ||
	fail "probe accounted for $exits exits + $dropped drops of $churned churned processes"
for d in w s p; do
	eval "a=\$${d}0 b=\$${d}1"
	[ $((b - a)) -le 16384 ] || fail "daemon $d grew by $((b - a)) KiB under churn"
done
echo "ok $churned processes churned: probe saw $exits exits, reported $dropped drops; memory flat"
