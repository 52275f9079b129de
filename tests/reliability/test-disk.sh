#!/bin/sh
# test-disk.sh: the data directory on a small tmpfs (root) under the
# running suite: filled up, then remounted read-only.  While stuck the
# writer burns no CPU (no busy loop), logs one line per state change and
# acks nothing; the sampler keeps its batches; once space (or rw) is back
# everything lands by itself: every batch the sampler sent is in the
# dataset exactly once.  Read-only: the kernel refuses `remount,ro` while
# the writer holds its live file open for writing (EBUSY), so EROFS comes
# from crashshim.so's CROFT_FAIL_FILE on every file-changing call instead.
. "$(dirname "$0")/rellib.sh"
require_root
require_cmd mount umount python3
rl_setup
MNT=$TEST_TMP/mnt
mkdir -p "$MNT"
mount -t tmpfs -o size=6m,mode=0755 croft-rel "$MNT" || skip "cannot mount a tmpfs"
RL_CLEANUP="umount -l '$MNT'"
DATA=$MNT/data
STUCK_S=$(short_or_soak 8 60)
cat > "$CONF" <<CONF
[sampler]
poll_interval = 250ms
idle_every = 1
[writer]
rotate_size = 512KiB
CONF
$PY "$(dirname "$0")/relproxy.py" "$TEST_TMP/proxy.sock" "$RUN/writer.sock" \
	"$TEST_TMP/proxy.log" 2>"$TEST_TMP/proxy.err" &
EXTRA_PIDS=$!
WRITER_WRAP="env LD_PRELOAD=$CRASHSHIM CROFT_FAIL_FILE=$TEST_TMP/fail"
rl_start_writer
rl_start_sampler --writer-socket "$TEST_TMP/proxy.sock"
rl_wait_polls 3 || fail "sampler does not poll"

disk_state() { rl_field writer disk.state; }
log_lines() { grep -cE 'cannot append|writing again' "$LOGS/writer.log"; }
# stuck NAME: the writer stays stuck STUCK_S seconds; prints its CPU ms then
stuck() {
	c0=$(rl_cpu_ms "$WPID") a0=$(grep -c '^ack' "$TEST_TMP/proxy.log")
	t0=$(now_ms)
	sleep "$STUCK_S"   # an observation window, not a synchronisation
	cpu=$(( $(rl_cpu_ms "$WPID") - c0 )) wall=$(( $(now_ms) - t0 ))
	[ "$(grep -c '^ack' "$TEST_TMP/proxy.log")" = "$a0" ] || fail "$1: batches acked while stuck"
	[ $((cpu * 100)) -le $((wall * 5)) ] || fail "$1: writer used $cpu ms CPU in $wall ms stuck (busy loop?)"
	rl_figure "disk_${1}_writer_cpu_ms" "$cpu in $wall ms"
}

# 1. full
l0=$(log_lines)
head -c 8M /dev/zero > "$MNT/filler" 2>/dev/null
wait_for '[ "$(disk_state)" = full ]' 30 || fail "writer never reported a full disk: $(rl_status writer)"
stuck full
[ "$(log_lines)" = $((l0 + 1)) ] || fail "full disk: $(( $(log_lines) - l0 )) log lines for one state change"
rm -f "$MNT/filler"
wait_for '[ "$(disk_state)" = ok ]' 30 || fail "no recovery after space came back"
[ "$(log_lines)" = $((l0 + 2)) ] || fail "recovery from full: not exactly one more log line"

# 2. read-only
rl_wait_polls 3
echo 30 > "$TEST_TMP/fail.tmp" && chmod 644 "$TEST_TMP/fail.tmp" && mv "$TEST_TMP/fail.tmp" "$TEST_TMP/fail"  # EROFS
wait_for '[ "$(disk_state)" != ok ] && [ -n "$(disk_state)" ]' 30 || fail "writer never reported the read-only disk"
stuck readonly
[ "$(log_lines)" = $((l0 + 3)) ] || fail "read-only: $(( $(log_lines) - l0 - 2 )) log lines for one state change"
rm -f "$TEST_TMP/fail"
wait_for '[ "$(disk_state)" = ok ]' 30 || fail "no recovery after rw came back"
[ "$(log_lines)" = $((l0 + 4)) ] || fail "recovery from read-only: not exactly one more log line"

# recovered: acks flow again (the spool's backlog drains at the host's pace)
a1=$(grep -c '^ack' "$TEST_TMP/proxy.log")
wait_for '[ "$(grep -c "^ack" "$TEST_TMP/proxy.log")" -ge $((a1 + 20)) ]' 60 || fail "no acks after recovery: writer $(rl_status writer) sampler $(rl_status sampler)"
rl_stop SPID
rl_stop WPID
$PY "$RELCHECK" sent "$DATA" "$TEST_TMP/proxy.log" || fail "batches lost over full/read-only disk"
echo "ok full and read-only disk: no busy loop, one log line per change, nothing lost, recovered by itself"
