#!/bin/sh
# test-statedir.sh: nothing lost across a stop and a reboot.  The writer
# down, the sampler polls; it is stopped (SIGTERM) and its runtime dir
# deleted, as a reboot does; writer and sampler started again on the same
# --state-dir -> every row of those polls is in the dataset exactly once
# (against the sampler's own count of rows made), and no row is doubled.
# The stop says the batches are kept, and nothing is said lost.
. "$(dirname "$0")/rellib.sh"
require_root
require_cmd python3 timeout zstd
rl_setup
STATE=$TEST_TMP/state
printf '[sampler]\npoll_interval = 300ms\nidle_every = 1\n' > "$CONF"
mkdir -p "$DATA"

# writer down: the sampler spools every poll
rl_start_sampler --state-dir "$STATE"
rl_wait_polls 6 || fail "the sampler did not poll"
[ "$(rl_field sampler spool_persistent)" = True ] || fail "the spool is not in a file"
[ "$(rl_field sampler writer)" != connected ] || fail "a writer answered"
rl_stop SPID
made=$(sed -n 's/.*stopped after [0-9]* polls: \([0-9]*\) rows made; \([0-9]*\) batches.*/\1 \2/p' \
	"$LOGS/sampler.log")
set -- $made
rows_made=${1:-0} batches=${2:-0}
[ "$rows_made" -gt 0 ] && [ "$batches" -ge 5 ] || fail "stop did not report its spool: $made"
grep -q 'kept in the spool for the next start' "$LOGS/sampler.log" ||
	fail "the stop does not say the batches are kept"
grep -qi 'lost' "$LOGS/sampler.log" && fail "the stop says something was lost: $(grep -i lost "$LOGS/sampler.log")"
[ -s "$STATE/sampler.spool.0" ] || [ -s "$STATE/sampler.spool.1" ] || fail "no spool file in $STATE"
stop_ms=$(now_ms)

# the reboot: /run is empty again
rm -rf "$RUN"
rl_start_writer
rl_start_sampler --state-dir "$STATE"
wait_for '[ "$(rl_field sampler batches_unacked)" = 0 ] && [ "$(rl_field sampler polls)" -ge 2 ]' 60 ||
	fail "the spooled batches were not acked after the restart"
grep -q "$batches unacked batches .* from before the restart" "$LOGS/sampler.log" ||
	fail "the restart did not replay $batches batches: $(grep spool "$LOGS/sampler.log")"
rl_stop_suite

$PY - "$DATA" "$stop_ms" "$rows_made" <<'PY' || fail "rows of the spooled polls lost or doubled"
import glob, json, os, subprocess, sys
data, stop_ms, made = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rows = []
for f in sorted(glob.glob(os.path.join(data, "croft-dataset*.jsonl*"))):
    text = subprocess.run(["zstd", "-dc", f], stdout=subprocess.PIPE, check=True).stdout \
        if f.endswith(".zst") else open(f, "rb").read()
    rows += [json.loads(l) for l in text.splitlines() if l.strip()]
before = [r for r in rows if r["unix_ms"] <= stop_ms]
keys = [(r["unix_ms"], r["tgid"]) for r in rows]
print(f"# {made} rows made before the stop; {len(before)} of them in the dataset; "
      f"{len(rows)} rows in all, {len(keys) - len(set(keys))} doubled")
sys.exit(0 if len(before) == made and len(keys) == len(set(keys)) else 1)
PY
rl_figure statedir_rows_kept "$rows_made"
echo "ok $batches spooled batches ($rows_made rows) survived a stop and a deleted runtime dir, once each"
