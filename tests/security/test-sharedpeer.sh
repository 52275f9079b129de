#!/bin/bash
# test-sharedpeer.sh: a daemon user other processes share (nobody where no
# croft user exists; any --user but croft) makes no process a croft peer by
# its uid alone (security review finding 4).  Root starts croft-writer and
# croft-sampler as user A (A stands in for nobody), as croft run does: both
# children of one parent.  Another process of A, not started by that
# parent, says HELLO as a sampler and sends a batch with a forged row, asks
# for the writer's status and opens the writer's /proc/PID/mem (what a
# ptrace attach needs): refused, nothing written, while the real sampler's
# rows still arrive.  Fails on 685571a: the forged row was acked and
# appended, the status given, the memory open to it.
set -u
. "$(dirname "$0")/seclib.sh"
sec_setup
require_cmd python3
printf '[sampler]\npoll_interval = 300ms\nidle_every = 1\ntextfile_dir =\n' >"$TEST_TMP/croft.conf"
chmod 0644 "$TEST_TMP/croft.conf"
R=$TEST_TMP/run D=$TEST_TMP/data
"$WRITER" --config "$TEST_TMP/croft.conf" --runtime-dir "$R" --user "$A" --data-dir "$D" \
	>"$TEST_TMP/writer.log" 2>&1 &
wpid=$!
SEC_PIDS="$SEC_PIDS $wpid"
check "the writer comes up as A" wait_for "'$WCTL' '$R/writer.ctl' status >/dev/null 2>&1" 30
"$SAMPLER" --config "$TEST_TMP/croft.conf" --runtime-dir "$R" --user "$A" \
	--state-dir "$TEST_TMP/state" >"$TEST_TMP/sampler.log" 2>&1 &
SEC_PIDS="$SEC_PIDS $!"
check "the sampler, its sibling, as A: its rows reach the dataset" \
	wait_for "[ -s '$D/croft-dataset.jsonl' ]" 30

# A's own process: a grandchild of this shell, so no sibling of the daemons
cat >"$TEST_TMP/forge.py" <<'PY'
import os, socket, struct, sys, time
sys.path.insert(0, sys.argv[2])
import wire
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(10)
s.connect(sys.argv[1] + "/writer.sock")
row = b'{"unix_ms":1,"tgid":31337,"workload":"gpu-held","forged":1}\n'
data = b''
try:
    s.sendall(wire.hello(wire.ROLE_SAMPLER, 0x5eed, 0))
    s.sendall(wire.packet(wire.MT_BATCH, wire.BATCH.pack(0x5eed, 1, int(time.time() * 1000), 1, 0) + row))
    s.settimeout(3)  # the writer's HELLO, then the ACK: whatever comes before EOF or 3 s
    while True:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
except OSError:
    pass
types = []
while len(data) >= wire.HDR.size:
    mtype, length = wire.HDR.unpack_from(data)
    types.append(mtype)
    data = data[wire.HDR.size + length:]
print("acked" if wire.MT_ACK in types else "refused")
try:
    status, text = wire.ctl_request(sys.argv[1] + "/writer.ctl", wire.MT_CTL_STATUS)
except Exception as e:
    status, text = -1, str(e)
print("status", "given" if status == 0 else "refused", text[:60].replace("\n", " "))
try:  # the writer's memory: what a ptrace attach would give
    open("/proc/%s/mem" % sys.argv[3], "rb").close()
    print("mem opened")
except OSError as e:
    print("mem refused", e)
PY
cp "$WIRE_DIR/wire.py" "$TEST_TMP/wire.py"
chmod 0644 "$TEST_TMP/forge.py" "$TEST_TMP/wire.py"
out=$(bash -c "setpriv --reuid=$A_UID --regid=$A_GID --clear-groups $PY -B '$TEST_TMP/forge.py' '$R' '$TEST_TMP' '$wpid'; exit \$?" 2>&1)
sed 's/^/# A: /' <<<"$out"
check "A's own process: its batch is not acked" grep -qx refused <<<"$out"
check "... its row is not in the dataset" bash -c "! grep -q 31337 '$D'/croft-dataset*"
check "... the writer's status is refused to it" grep -q '^status refused' <<<"$out"
check "... the writer's memory is closed to it (not dumpable: no ptrace either)" \
	grep -q '^mem refused' <<<"$out"
check "... and the writer says whom it refused" grep -q "refused pid [0-9]* uid $A_UID" "$TEST_TMP/writer.log"
rows=$(wc -l <"$D/croft-dataset.jsonl")
check "the sampler's rows still arrive" wait_for "[ \$(wc -l <'$D/croft-dataset.jsonl') -gt $rows ]" 30
sec_done
