#!/bin/sh
# test-churn.sh: many short-lived processes a second (fork + exec + exit;
# short: 500/s for 10 s, CROFT_SOAK=1: 1 700/s = 100 000 a minute, for 5
# minutes) under the whole suite.  The probe's exec and exit accounting is
# exact (delivered + dropped == seen, counted by its eBPF programs before
# the ring buffer) and its exits seen cover every churned process; a map
# that filled has its drops counted and shown (a second, short churn with
# tiny maps makes them fill); every line parses; the daemons' memory stays flat.
. "$(dirname "$0")/rellib.sh"
require_bpf
require_cmd python3
[ "$PROBE" != not-built ] || skip "probe not built"
rl_setup
RATE=$(short_or_soak 500 1700)
SECS=$(short_or_soak 10 300)
TINY_SECS=$(short_or_soak 3 30)
cat > "$CONF" <<CONF
[sampler]
poll_interval = 500ms
CONF

# probe_events KIND FIELD: events.KIND.FIELD of the probe's status (as of its last answer).
probe_events() { rl_field probe "events.$1.$2"; }

# check_probe_accounts: seen == delivered + dropped for exec and exit; every
# map found full by an answer has drops counted for it.  Prints the figures.
check_probe_accounts() {
	rl_status probe | $PY -c '
import json, sys
st = json.load(sys.stdin)["figures"]
bad = []
for kind in ("exec", "exit"):
    e = st["events"][kind]
    print("%s seen=%d delivered=%d dropped=%d;" % (kind, e["seen"], e["delivered"], e["dropped"]),
          end=" ")
    if e["delivered"] + e["dropped"] != e["seen"]:
        bad.append("%s: delivered %d + dropped %d != seen %d"
                   % (kind, e["delivered"], e["dropped"], e["seen"]))
reason = {"syscalls": "syscall_map_full", "ioctl": "ioctl_map_full",
          "sched": "sched_map_full", "net": "net_map_full", "gpufile": "gpufile_map_full"}
for name, m in st["maps"].items():
    drops = st["drops"][reason[name]]
    print("map %s full_answers=%d drops=%d;" % (name, m["full_answers"], drops), end=" ")
    if m["full_answers"] and not drops:
        bad.append("map %s was full in %d answers with no drop counted"
                   % (name, m["full_answers"]))
if bad:
    print("FAILED: " + "; ".join(bad))
    sys.exit(1)
'
}

# full_maps: how many maps an answer found full.
full_maps() {
	rl_status probe | $PY -c 'import json, sys
print(sum(1 for m in json.load(sys.stdin)["figures"]["maps"].values() if m["full_answers"]))'
}

rss() { echo "$(rl_rss_kb "$WPID") $(rl_rss_kb "$SPID") $(rl_rss_kb "$PPID_")"; }

# churn SECS: churns at RATE, waits for the probe to answer it all; sets $churned.
churn() {
	x0=$(probe_events exit seen) c0=$(probe_events exec seen)
	"$RELPROCS" churn "$RATE" "$1" > "$TEST_TMP/churn.out" || fail "churn helper"
	churned=$(sed -n 's/^churned=\([0-9]*\).*/\1/p' "$TEST_TMP/churn.out")
	rl_wait_polls 4 || fail "sampler stopped polling after the churn"
	exits=$(( $(probe_events exit seen) - x0 )) execs=$(( $(probe_events exec seen) - c0 ))
	[ "$exits" -ge "$churned" ] ||
		fail "probe saw $exits exits of $churned churned processes"
	[ "$execs" -ge "$churned" ] ||
		fail "probe saw $execs execs of $churned churned processes"
}

rl_start_suite
rl_wait_polls 3 || fail "sampler does not poll"
set -- $(rss); w0=$1 s0=$2 p0=$3
churn "$SECS"
set -- $(rss); w1=$1 s1=$2 p1=$3
accounts=$(check_probe_accounts) || fail "probe accounting after churn: $accounts"
rl_figure churn "$(cat "$TEST_TMP/churn.out")"
rl_figure churn_probe "exits seen +$exits, execs seen +$execs; $accounts"
rl_figure churn_rss_kb "writer $w0->$w1 sampler $s0->$s1 probe $p0->$p1"
for d in w s p; do
	eval "a=\$${d}0 b=\$${d}1"
	[ $((b - a)) -le 16384 ] || fail "daemon $d grew by $((b - a)) KiB under churn"
done

# tiny maps: they fill, and every fill shows as drops; rows go on
rl_stop PPID_
rl_start_probe --map-entries 8
rl_wait_polls 3 || fail "sampler does not poll with the tiny-map probe"
churn "$TINY_SECS"
accounts=$(check_probe_accounts) || fail "tiny-map probe accounting after churn: $accounts"
rl_figure churn_tiny_maps "$(cat "$TEST_TMP/churn.out"); $accounts"
[ "$(full_maps)" -ge 1 ] || fail "no map of 8 entries filled under churn"
rl_stop_suite
$PY "$RELCHECK" lines "$DATA" || fail "dataset after churn"
echo "ok probe exec/exit accounts exact under churn, full maps counted; memory flat"
