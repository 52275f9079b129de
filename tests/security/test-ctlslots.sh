#!/bin/bash
# test-ctlslots.sh: one user cannot hold every control slot (security review
# finding 11).  A user who may connect to writer.ctl (here A, the daemon's
# own group) keeps 40 connections open and reopens each the writer closes;
# root's requests are answered all the same, each of 5 in a row, and the
# writer says why it refused A's extra ones.  Fails on 685571a: A held all
# 32 slots and root's requests got no answer.
set -u
. "$(dirname "$0")/seclib.sh"
sec_setup
printf '[writer]\n' >"$TEST_TMP/croft.conf"
chmod 0644 "$TEST_TMP/croft.conf"
R=$TEST_TMP/run
"$WRITER" --config "$TEST_TMP/croft.conf" --runtime-dir "$R" --user "$A" \
	--data-dir "$TEST_TMP/data" >"$TEST_TMP/writer.log" 2>&1 &
SEC_PIDS="$SEC_PIDS $!"
check "the writer comes up" wait_for "'$WCTL' '$R/writer.ctl' status >/dev/null 2>&1" 30
as_a $PY - "$R/writer.ctl" "$TEST_TMP/a-stop" >"$TEST_TMP/a.log" 2>&1 <<'PY' &
import os, select, socket, sys, time
path, stop = sys.argv[1], sys.argv[2]
held, opened = [], 0
while not os.path.exists(stop):
    for s in [s for s in held if select.select([s], [], [], 0)[0]]:
        held.remove(s); s.close()          # the writer closed it: take the slot again
    while len(held) < 40:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(path); held.append(s); opened += 1
        except OSError:
            s.close(); break
    print("holding", len(held), "opened", opened, flush=True)
    time.sleep(0.05)
PY
SEC_PIDS="$SEC_PIDS $!"
check "A holds its connections" wait_for "grep -q '^holding 40 opened [4-9][0-9]' '$TEST_TMP/a.log'" 20
answered=0
for i in 1 2 3 4 5; do
	"$WCTL" "$R/writer.ctl" status >/dev/null 2>&1 && answered=$((answered + 1))
done
check "root's 5 requests are answered ($answered of 5)" [ "$answered" = 5 ]
check "the writer says why A's extra connections were refused" \
	grep -q "refused pid [0-9]* uid $A_UID: too many peers" "$TEST_TMP/writer.log"
touch "$TEST_TMP/a-stop"
sec_done
