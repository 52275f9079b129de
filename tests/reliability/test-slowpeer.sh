#!/bin/sh
# test-slowpeer.sh: peers that connect and never send, send one byte every
# few seconds, or send and never read, on writer.sock, probe.sock and every
# .ctl of the running suite.  Meanwhile the sampler's batches keep being
# acked and status answers; each bad peer is dropped within the limit; the
# daemons' memory stays bounded.
. "$(dirname "$0")/rellib.sh"
require_cmd python3
rl_setup
LIMIT=$(short_or_soak 40 120)
cat > "$CONF" <<CONF
[sampler]
poll_interval = 250ms
idle_every = 1
CONF
rl_start_suite
rl_wait_polls 3 || fail "sampler does not poll"
rss0_w=$(rl_rss_kb "$WPID") rss0_s=$(rl_rss_kb "$SPID") rss0_p=${PPID_:+$(rl_rss_kb "$PPID_")}
$PY "$(dirname "$0")/slowpeer.py" "$RUN" 3 "$LIMIT" > "$TEST_TMP/peers" 2>&1 &
PEERS=$!
EXTRA_PIDS=$PEERS
# the good peers carry on while the bad ones hang on
worst_status_ms=0 worst_unacked=0 checks=0
while kill -0 "$PEERS" 2>/dev/null; do
	t=$(now_ms)
	st=$(rl_status sampler)
	ms=$(( $(now_ms) - t ))
	[ "$ms" -gt "$worst_status_ms" ] && worst_status_ms=$ms
	u=$(echo "$st" | rl_json batches_unacked)
	[ "${u:-99}" -gt "$worst_unacked" ] && worst_unacked=${u:-99}
	case $(echo "$st" | rl_json writer) in
	connected*) ;;
	*) fail "the sampler lost the writer while slow peers hung on: $(echo "$st" | rl_json writer)" ;;
	esac
	rl_status writer > /dev/null || fail "writer status unanswered while slow peers hang on"
	checks=$((checks + 1))
	sleep 1
done
wait "$PEERS"; EXTRA_PIDS=
cat "$TEST_TMP/peers"
rl_wait_polls 2 || fail "sampler stopped polling"
wait_for '[ "$(rl_field sampler batches_unacked)" -le 2 ]' 120 || fail "the sampler's spool does not drain"
rss1_w=$(rl_rss_kb "$WPID") rss1_s=$(rl_rss_kb "$SPID") rss1_p=${PPID_:+$(rl_rss_kb "$PPID_")}
rl_stop_suite
rl_figure slowpeer_worst_status_ms "$worst_status_ms"
rl_figure slowpeer_worst_unacked_batches "$worst_unacked"
rl_figure slowpeer_rss_kb "writer $rss0_w->$rss1_w sampler $rss0_s->$rss1_s probe ${rss0_p:--}->${rss1_p:--}"
[ "$worst_status_ms" -le 3000 ] || fail "status took $worst_status_ms ms while slow peers hung on"
# the sampler's own memory also holds its spool of unacked batches (bounded
# by spool_size) when a loaded host slows the writer: a looser bound there
for d in w:16384 s:65536 p:16384; do
	eval "a=\${rss0_${d%:*}:-0} b=\${rss1_${d%:*}:-0}"
	[ $((b - a)) -le "${d#*:}" ] || fail "daemon ${d%:*} grew by $((b - a)) KiB"
done
# every bad peer is dropped: writer.sock and probe.sock give a new peer
# PROBE_HELLO_S / PEER_HELLO_S to say HELLO, the writer drops a peer that
# leaves its acks unread, and a .ctl peer has one deadline for its request.
bad=$(grep -v 'dropped_after_s' "$TEST_TMP/peers")
[ -z "$bad" ] || fail "slow peers not dropped within $LIMIT s:
$bad"
echo "ok $(wc -l < "$TEST_TMP/peers") slow peers dropped; good peers unaffected (status <= ${worst_status_ms} ms, <= $worst_unacked batches unacked)"
