#!/bin/bash
# test-run.sh: `croft run` end to end for ~30 s in temporary directories:
# every daemon starts and reports ready, rows carry fields from the sampler
# and (root with BPF) the probe, and after SIGINT every daemon exits 0, the
# live file ends with a whole line and every poll the sampler reported is
# on disk.  SIGKILLed, croft run leaves no daemon running.
# usage: test-run.sh CROFT CROFTCTL PROBE_BINARY
set -u
. "$(dirname "$0")/../lib/testlib.sh"
. "$(dirname "$0")/opslib.sh"
CROFT=$1 CROFTCTL=$2 PROBE_BIN=$3
require_root
require_cmd jq zstd
ops_probe_expected; probe=$?
[ $probe = 2 ] && fail "the probe cannot run on this CI host"
ops_setup
printf '[sampler]\npoll_interval = 1s\n' >"$C"

# A bad catalog: the sampler refuses it before it is ready; croft run stops
# the others instead of restarting it, exits 1, and the reason is shown.
echo '[{"name":"x"}]' >"$TEST_TMP/bad.json"
out=$(timeout 60 "$CROFT" run --data-dir "$D" --runtime-dir "$R" --config "$C" \
	--frameworks "$TEST_TMP/bad.json" 2>&1); rc=$?
check "croft run with a bad --frameworks file exits 1" [ $rc = 1 ]
check "... naming the file, entry and reason" grep -q "bad.json: entry 1 (\"x\"): no pattern" <<<"$out"
check "... and stopping the daemons it had started" grep -q 'croft-writer stopped' <<<"$out"

# A busy process: CPU, read/write syscalls and context switches every poll.
dd if=/dev/zero of=/dev/null bs=64 count=2000000000 2>/dev/null &
busy=$!
OPS_CLEANUP_EXTRA="kill $busy 2>/dev/null"

ops_start
check "croft run starts writer and sampler; croftctl sees them up" \
	wait_for 'ops_up croft-writer && ops_up croft-sampler' 30
if [ $probe = 0 ]; then
	check "croft-probe up" wait_for 'ops_up croft-probe' 30
	check "croftctl status exits 0 with all three up" quiet ctl status
	check "the sampler is connected to the probe" \
		wait_for '[ "$(ops_field croft-sampler .status.probe)" = connected ]' 30
else
	check "without the probe, croft run said which fields are missing" \
		grep -q 'not starting croft-probe: .*rows will leave out .*syscalls' "$LOG"
fi
if ! wait_for '[ "$(ops_field croft-sampler .status.polls)" -ge 30 ] 2>/dev/null' 90; then
	not_ok "~30 polls"
	ls -la "$TEST_TMP" "$R" 2>&1 | sed 's/^/# /'
	ctl status 2>&1 | sed 's/^/# /'
else
	ok "~30 polls"
fi
polls=$(ops_field croft-sampler .status.polls)
rows=$(ops_field croft-sampler .status.rows_total)
echo "# sampler reported $polls polls, $rows rows before SIGINT"

ops_stop
check "croft run exits 0 after SIGINT (every daemon exited 0)" [ "$RUN_RC" = 0 ]
check "stopped in order sampler, probe, writer" \
	bash -c "grep -o 'croft-[a-z]* stopped' '$LOG' | tr '\n' ' ' | grep -q \
	'^croft-sampler stopped $([ $probe = 0 ] && echo 'croft-probe stopped ')croft-writer stopped \$'"
live=$D/croft-dataset.jsonl
check "the live file ends with a whole line" [ "$(tail -c 1 "$live" | od -An -c | tr -d ' ')" = '\n' ]
all=$TEST_TMP/all.jsonl
{ for z in "$D"/croft-dataset-*.jsonl.zst; do [ -e "$z" ] && zstd -dcq "$z"; done
  for s in "$D"/croft-dataset-*.jsonl; do [ -e "$s" ] && cat "$s"; done
  cat "$live"; } >"$all"
check "every line is one JSON object" quiet jq -e -c 'type == "object"' "$all"
on_disk=$(wc -l <"$all")
check "every row the sampler reported is on disk ($on_disk >= $rows)" [ "$on_disk" -ge "$rows" ]
# the sampler's last words, where it says them: every row it made is on disk
final=$(sed -n 's/.*croft-sampler: stopped after \([0-9]*\) polls: \([0-9]*\) rows made; \([0-9]*\) batches.*/\1 \2 \3/p' "$LOG")
if [ -n "$final" ]; then
	read -r final_polls final_rows final_unacked <<<"$final"
	check "the sampler stopped with nothing unacknowledged ($final_unacked batches)" [ "$final_unacked" = 0 ]
	check "every row the sampler made is on disk, once ($on_disk = $final_rows)" [ "$on_disk" = "$final_rows" ]
	polls=$final_polls
fi
disk_polls=$(jq -r .unix_ms "$all" | sort -u | wc -l)
# the first poll has no rows: processes already running get theirs at their second poll
check "every poll the sampler reported is on disk ($disk_polls >= $polls - 1)" \
	[ "$disk_polls" -ge $((polls - 1)) ]
row=$(jq -c --argjson p "$busy" 'select(.tgid == $p)' "$all" | tail -n 1)
check "the busy process has rows" [ -n "$row" ]
check "... with the sampler's fields" \
	quiet jq -e '.process.comm == "dd" and .usage.cpu_cores > 0 and .usage.rss_bytes > 0' <<<"$row"
if [ $probe = 0 ]; then
	check "its rows carry the probe's fields (syscalls, context switches)" \
		quiet jq -e '(.syscalls | map(.name) | index("read")) != null and
			(.usage | has("ctx_voluntary_s") and has("runqueue_s"))' <<<"$row"
fi
# croft run SIGKILLed: no daemon it started may outlive it.  Each reads EOF
# on the pipe whose write end only croft run held, and stops as on SIGTERM
# (a PDEATHSIG would not survive the daemons' privilege drop).
ops_start
check "croft run starts again" wait_for 'ops_up croft-writer && ops_up croft-sampler' 30
pids=$(for d in croft-writer croft-probe croft-sampler; do ops_field $d .pid; done)
pids=$(echo $pids)
kill -KILL "$RUN_PID"
wait "$RUN_PID" 2>/dev/null
RUN_PID=
gone() {  # every pid exited (a zombie counts: it waits for a reaper only)
	for p in $pids; do
		s=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | cut -d' ' -f1)
		[ -z "$s" ] || [ "$s" = Z ] || return 1
	done
}
check "croft run SIGKILLed: every daemon it started ($pids) exits" wait_for gone 30
for p in $pids; do kill -KILL "$p" 2>/dev/null; done # those that did not

# Not root: the daemons run as the invoking user, no probe, the runtime dir
# under the data dir (XDG_RUNTIME_DIR unset).  The binaries are copied where
# nobody can reach them, in the build tree's layout croft run looks for.
mkdir -p "$TEST_TMP/nr"/{cli,writer,sampler}
cp "$CROFT" "$TEST_TMP/nr/cli/"
cp "$(dirname "$CROFT")/../writer/croft-writer" "$TEST_TMP/nr/writer/"
cp "$(dirname "$CROFT")/../sampler/croft-sampler" "$TEST_TMP/nr/sampler/"
chown -R nobody "$TEST_TMP/nr"
(cd "$TEST_TMP/nr" && exec setpriv --reuid nobody --regid "$(id -g nobody)" --clear-groups \
	env -u XDG_RUNTIME_DIR ./cli/croft run --data-dir ./data >"$TEST_TMP/nr.log" 2>&1) &
RUN_PID=$! LOG=$TEST_TMP/nr.log R=$TEST_TMP/nr/data/run
check "as nobody: croft run starts writer and sampler, sockets in DATA/run" \
	wait_for 'ops_up croft-writer && ops_up croft-sampler' 30
check "as nobody: the daemons run as nobody" \
	[ "$(stat -c %U /proc/"$(ops_field croft-writer .pid)")" = nobody ]
check "as nobody: rows reach the dataset" wait_for "[ -s '$TEST_TMP/nr/data/croft-dataset.jsonl' ]" 30
ops_stop
check "as nobody: croft run exits 0 after SIGINT" [ "$RUN_RC" = 0 ]
finish
