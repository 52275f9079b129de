#!/bin/sh
# test-hostile.sh: processes whose comm, exe, cwd, cmdline and cgroup names
# carry newlines, ')', quotes, ESC, 0xff, cut multibyte characters and
# " (deleted)", a 4 KiB cwd and a 128 KiB argv, watched by the running
# suite: every line strict UTF-8 JSON, one object per line, each hostile
# process's row present with its raw bytes kept, the other rows intact.
. "$(dirname "$0")/rellib.sh"
require_cmd python3 zstd
$PY -c 'import jsonschema' 2>/dev/null || skip "python3-jsonschema is not installed (make deps)"
rl_setup
cat > "$CONF" <<CONF
[sampler]
poll_interval = 250ms
idle_every = 1
CONF
HOSTILE="$(dirname "$0")/hostile.py"
mkdir "$TEST_TMP/h" && chmod 755 "$TEST_TMP/h"
$PY "$HOSTILE" spawn "$TEST_TMP/h" "$TEST_TMP/pids" "$RELPROCS" > "$TEST_TMP/spawn.out" 2>&1 &
HELPER_PID=$!
wait_for '[ -s "$TEST_TMP/pids" ]' 30 || fail "hostile processes not started: $(cat "$TEST_TMP/spawn.out")"
rl_start_suite
rl_wait_polls 6 || fail "sampler does not poll"
rl_stop_suite
cat "$TEST_TMP/spawn.out"
$PY "$HOSTILE" check "$DATA" "$TEST_TMP/pids" "$SCHEMA" || fail "hostile rows"
failed=$(grep -c 'rows_failed' "$LOGS/sampler.log" || true)
grep -iE 'assert|sanitizer|segfault' "$LOGS"/*.log && fail "a daemon complained"
echo "ok hostile input: $(wc -l < "$TEST_TMP/pids") processes, their rows valid"
