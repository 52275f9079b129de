#!/bin/sh
# test-killloop.sh: the whole suite runs over hundreds of idle processes
# while its daemons are SIGKILLed at random moments and restarted (short:
# writer 20, sampler 10, probe 5; CROFT_SOAK=1: 200, 100, 50).  Then: every
# line parses, no (tgid, unix_ms) twice, every poll whole (all watched
# processes), every batch the sampler sent (a recording pass-through sees
# them) in the dataset whole, no hole in its numbering, and no
# BPF program of a killed probe still loaded.
. "$(dirname "$0")/rellib.sh"
require_cmd python3 zstd od
rl_setup
KW=${KILLS_WRITER:-$(short_or_soak 20 200)}
KS=${KILLS_SAMPLER:-$(short_or_soak 10 100)}
KP=${KILLS_PROBE:-$(short_or_soak 5 50)}
NPROCS=$(short_or_soak 200 500)
INTERVAL=200
cat > "$CONF" <<CONF
[sampler]
poll_interval = ${INTERVAL}ms
idle_every = 1
[writer]
rotate_size = 256KiB
CONF
[ "$(id -u)" = 0 ] && [ "$PROBE" != not-built ] || KP=0
[ "$KP" = 0 ] || require_cmd bpftool
"$RELPROCS" spawn "$NPROCS" 0 "$TEST_TMP/pids" > "$TEST_TMP/spawn.out" &
HELPER_PID=$!
wait_for '[ -s "$TEST_TMP/pids" ]' 30 || fail "helper did not start"
# a recording pass-through between sampler and writer: the checker then
# knows every batch the sampler finished
$PY "$(dirname "$0")/relproxy.py" "$TEST_TMP/proxy.sock" "$RUN/writer.sock" \
	"$TEST_TMP/proxy.log" 2>"$TEST_TMP/proxy.err" &
EXTRA_PIDS=$!
SAMPLER_ARGS="--writer-socket $TEST_TMP/proxy.sock"
rl_start_writer
[ "$KP" = 0 ] || rl_start_probe
rl_spawn_sampler $SAMPLER_ARGS
rl_wait_up sampler
rl_wait_polls 3 || fail "sampler does not poll"
: > "$TEST_TMP/sampler-kills"

rand() { echo $(( $(od -An -N2 -tu2 /dev/urandom) % $1 )); }
# prog_ids DAEMON_PID: the BPF programs its fds hold (links and programs)
prog_ids() {
	cat /proc/"$1"/fdinfo/* 2>/dev/null | awk '$1 == "prog_id:" { print $2 }' | sort -u
}
loaded_progs() {
	bpftool prog show 2>/dev/null | sed -n 's/^\([0-9]*\): .*/\1/p'
}
kw=0 ks=0 kp=0 leaked=0
t0=$(now_ms)
while [ $kw -lt "$KW" ] || [ $ks -lt "$KS" ] || [ $kp -lt "$KP" ]; do
	sleep "0.$(printf %03d "$(rand 400)")"
	left=$(( KW - kw + KS - ks + KP - kp ))
	pick=$(rand $left)
	if [ $pick -lt $(( KW - kw )) ]; then
		rl_kill WPID; rl_spawn_writer; kw=$((kw + 1))
	elif [ $pick -lt $(( KW - kw + KS - ks )) ]; then
		now_ms >> "$TEST_TMP/sampler-kills"
		rl_kill SPID; rl_spawn_sampler $SAMPLER_ARGS; ks=$((ks + 1))
	else
		# the probe must be up (attached) before it is worth killing
		rl_wait_up probe 30
		ids=$(prog_ids "$PPID_")
		[ -n "$ids" ] || fail "probe pid $PPID_ holds no BPF program"
		rl_kill PPID_
		for id in $ids; do
			wait_for "! loaded_progs | grep -qx $id" 10 || leaked=$((leaked + 1))
		done
		rl_spawn_probe; kp=$((kp + 1))
	fi
done
t1=$(now_ms)
rl_wait_up writer; rl_wait_up sampler
[ "$KP" = 0 ] || rl_wait_up probe
rl_wait_polls 5 || fail "sampler does not poll after the loop"
# let the sampler's spool drain into the writer
wait_for '[ "$(rl_field sampler batches_unacked)" -le 1 ]' 180 || fail "spool does not drain: $(rl_status sampler)"
rl_stop_suite
[ "$leaked" = 0 ] || fail "$leaked BPF programs still loaded after their probe was SIGKILLed"
$PY "$RELCHECK" sent "$DATA" "$TEST_TMP/proxy.log" || fail "sent batches lost"
$PY "$RELCHECK" gaps "$DATA" 3000 "$TEST_TMP/sampler-kills" || fail "polls lost"
$PY "$RELCHECK" complete "$DATA" "$TEST_TMP/pids" || fail "rows lost"
rl_figure killloop_seconds $(( (t1 - t0) / 1000 ))
rl_figure killloop_kills "writer=$kw,sampler=$ks,probe=$kp"
rl_figure killloop_watched "$NPROCS"
echo "ok $kw writer, $ks sampler, $kp probe SIGKILLs over $(( (t1 - t0) / 1000 )) s: nothing lost or duplicated, no BPF program left"
