#!/bin/bash
# test-supervisor.sh: croft run's supervisor channel speaks only to its own
# children (security review finding 5).  A local user A, before and while
# root's croft run runs: binds the host lock's old abstract name (and, on a
# host lock file, cannot open it), binds the names the next notify sockets
# would have and sends WATCHDOG=1 to the sampler's every 0.3 s.  Root's
# croft run starts anyway; a hung sampler (SIGSTOP) is killed after its
# watchdog time (3 s here) and restarted at once, not after A's pings and
# squats run out.  Fails on 685571a: "another croft run (pid .., uid A)",
# and the hung sampler kept alive by A's pings.
set -u
. "$(dirname "$0")/seclib.sh"
sec_setup
require_cmd python3
printf '[sampler]\npoll_interval = 500ms\ntextfile_dir =\n' >"$TEST_TMP/croft.conf"
chmod 0644 "$TEST_TMP/croft.conf"
LOCK=$TEST_TMP/croft-run.lock
export CROFT_RUN_LOCK=$LOCK CROFT_RUN_UNITS_DIR=$TEST_TMP/no-units CROFT_RUN_WATCHDOG_S=3
LOG=$TEST_TMP/run.log

export -f as_a
export A_UID A_GID

# 1. the host lock: A binds the names croft run's lock had (abstract, anyone
# may) and tries the lock file; root's croft run starts all the same
as_a $PY - "$TEST_TMP/a-stop1" "$LOCK" "croft-run" >"$TEST_TMP/a-lock.log" 2>&1 <<'PY' &
import os, socket, sys, time
held = []
for name in sys.argv[2:]:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.bind("\0" + name); s.listen(1); held.append(s)
        print("bound", name, flush=True)
    except OSError as e:
        print("cannot bind", name, e, flush=True)
while not os.path.exists(sys.argv[1]):
    time.sleep(0.1)
PY
apid=$!
SEC_PIDS="$SEC_PIDS $apid"
check "A holds the lock's old abstract name" wait_for "grep -qx 'bound $LOCK' '$TEST_TMP/a-lock.log'" 10
"$CROFT" run --config "$TEST_TMP/croft.conf" --data-dir "$TEST_TMP/data" \
	--runtime-dir "$TEST_TMP/run" >"$LOG.1" 2>&1 &
rpid=$!
SEC_PIDS="$SEC_PIDS $rpid"
wait_for "grep -q 'all daemons started' '$LOG.1' || ! kill -0 $rpid 2>/dev/null" 60
check "root's croft run starts although A bound them first" grep -q 'all daemons started' "$LOG.1" ||
	sed 's/^/# /' "$LOG.1"
check "the lock file is root's, 0600" [ "$(stat -c '%u %a' "$LOCK")" = "0 600" ]
check "... A can neither open nor flock it" bash -c "! as_a flock -n '$LOCK' true 2>/dev/null"
check "no abstract croft-run socket is bound by croft run" \
	bash -c "! grep -q '@croft-run-$rpid' /proc/net/unix"
kill -INT "$rpid" 2>/dev/null
wait "$rpid"
touch "$TEST_TMP/a-stop1"
wait "$apid"

# 2. the watchdog: A squats the names the sampler's next notify sockets had
# and spoofs its pings; a hung sampler is killed and restarted all the same
"$CROFT" run --config "$TEST_TMP/croft.conf" --data-dir "$TEST_TMP/data" \
	--runtime-dir "$TEST_TMP/run" >"$LOG" 2>&1 &
rpid=$!
SEC_PIDS="$SEC_PIDS $rpid"
wait_for "grep -q 'all daemons started' '$LOG' || ! kill -0 $rpid 2>/dev/null" 60
grep -q 'all daemons started' "$LOG" || { sed 's/^/# /' "$LOG"; fail "croft run did not start"; }
spid=$(sed -n 's/.*started croft-sampler (pid \([0-9]*\)).*/\1/p' "$LOG" | tail -n 1)
# A squats the names the next sampler notify sockets had, and spoofs its pings
as_a $PY - "$TEST_TMP/a-stop" "croft-run-$rpid-sampler-0" "$rpid" >"$TEST_TMP/a-ping.log" 2>&1 <<'PY' &
import os, socket, sys, time
stop, target, run = sys.argv[1], sys.argv[2], sys.argv[3]
held = []
for i in range(1, 6):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        s.bind("\0croft-run-%s-sampler-%d" % (run, i)); held.append(s)
    except OSError:
        pass
out = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
tried = 0
print("squatted", len(held), flush=True)
while not os.path.exists(stop):
    try:
        tried += 1
        out.sendto(b"WATCHDOG=1", "\0" + target)
    except OSError:
        pass
    time.sleep(0.3)
print("tried", tried, flush=True)
PY
SEC_PIDS="$SEC_PIDS $!"
wait_for "grep -q '^squatted' '$TEST_TMP/a-ping.log'" 10 || fail "A's spoofer did not start"
kill -STOP "$spid"
check "a hung sampler is killed at its watchdog time, A's pings notwithstanding" \
	wait_for "grep -q 'croft-sampler (pid $spid) sent no watchdog ping' '$LOG'" 20
check "... and restarted at the first try (A's squatted names are nothing to it)" \
	wait_for "grep -q 'restarting croft-sampler' '$LOG' && [ \$(grep -c 'started croft-sampler' '$LOG') -ge 2 ]" 20
check "... no 'cannot restart'" bash -c "! grep -q 'cannot restart' '$LOG'"
check "... the new sampler reports ready" \
	wait_for "[ \$(grep -c 'croft-sampler ready' '$LOG') -ge 2 ]" 30
touch "$TEST_TMP/a-stop"
check "A pinged all along" wait_for "grep -q '^tried [1-9]' '$TEST_TMP/a-ping.log'" 10
kill -INT "$rpid"
wait "$rpid"
check "croft run stops cleanly (exit 0)" [ $? = 0 ]
sec_done
