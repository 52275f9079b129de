#!/bin/sh
# test-carry.sh: a sampler restart costs at most one poll.  A process burns
# a known CPU time while the sampler is SIGKILLed and started again (at
# once, as croft run's first restart is quick; systemd's RestartSec= adds
# its own wait); the restarted sampler carries the process's counters on
# from its runtime dir, so the rows go on at its first poll and
# sum(cpu_cores x span_ms / 1000) over the rows equals the CPU time the
# process counted itself.  Then the same kills with the carry files removed
# before each start (as before they existed): the figure to compare.
. "$(dirname "$0")/rellib.sh"
require_cmd python3 timeout
rl_setup
POLL_MS=300
printf '[sampler]\npoll_interval = %dms\nidle_every = 2\n' "$POLL_MS" > "$CONF"
mkdir -p "$DATA"
rl_start_writer
rl_start_sampler
rl_wait_polls 2 || fail "the sampler did not poll"

# burn SECONDS of CPU, then say how much this process used, then sleep
burn() {
	$PY -c 'import os, sys, time
want = float(sys.argv[1])
while time.process_time() < want:
    pass
with open(sys.argv[2], "w") as f:
    f.write("%.6f\n" % time.process_time())
time.sleep(3600)' "$1" "$2" &
}

kills() { # kills N FORGET: SIGKILL the sampler N times mid-burn, restart at once
	for i in $(seq "$1"); do
		rl_wait_polls 4 || fail "no polls between kills"
		rl_kill SPID
		[ "$2" = forget ] && rm -f "$RUN"/sampler.carry.*
		rl_spawn_sampler
	done
}

phase() { # phase NAME KILLS FORGET: one burner through KILLS kills; its figures
	burn 12 "$TEST_TMP/$1.cpu"
	pid=$!
	EXTRA_PIDS="${EXTRA_PIDS:-} $pid"
	rl_wait_polls 3 || fail "no polls"
	kills "$2" "$3"
	wait_for "[ -s '$TEST_TMP/$1.cpu' ]" 120 || fail "the burner did not finish"
	rl_wait_polls 6 || fail "no polls after the burn"
	kill "$pid"
	echo "$pid" > "$TEST_TMP/$1.pid"
}
KILLS=$(short_or_soak 3 20)
phase carry "$KILLS" keep
phase forget "$KILLS" forget
rl_stop_suite

$PY - "$DATA" "$TEST_TMP" "$POLL_MS" "$KILLS" <<'PY' || fail "rates across the restarts are not exact, or polls were lost"
import glob, json, os, subprocess, sys
data, tmp, poll_ms, kills = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
rows = []
for f in sorted(glob.glob(os.path.join(data, "croft-dataset*.jsonl*"))):
    text = subprocess.run(["zstd", "-dc", f], stdout=subprocess.PIPE, check=True).stdout \
        if f.endswith(".zst") else open(f, "rb").read()
    rows += [json.loads(l) for l in text.splitlines() if l.strip()]
ok = True
for name in ("carry", "forget"):
    pid = int(open(os.path.join(tmp, name + ".pid")).read())
    own = float(open(os.path.join(tmp, name + ".cpu")).read())
    mine = sorted((r for r in rows if r["tgid"] == pid), key=lambda r: r["unix_ms"])
    summed = sum(r["usage"]["cpu_cores"] * r["span_ms"] / 1000 for r in mine)
    # while it burned, a row every poll: a gap of n intervals is n - 1 polls
    # without a row (a restarted sampler's first poll writing none among them)
    own_end = max(r["unix_ms"] for r in mine if r["usage"]["cpu_cores"] > 0.05)
    times = [r["unix_ms"] for r in mine if r["unix_ms"] <= own_end]
    gaps = [b - a for a, b in zip(times, times[1:]) if b - a > 1.5 * poll_ms]
    lost = sum(max(0, round(g / poll_ms) - 1) for g in gaps)
    print(f"# {name}: gaps between its rows over 1.5 polls: {gaps} ms")
    print(f"# {name}: {kills} kills, {lost} polls without a row while busy "
          f"({lost / kills:.2f} per kill); CPU {own:.3f} s counted by the process, "
          f"{summed:.3f} s summed from {len(mine)} rows ({100 * (summed - own) / own:+.2f}%)")
    print(f"figure: carry_{name}_polls_lost_per_kill={lost / kills:.2f}")
    if name == "carry" and (lost > kills or abs(summed - own) > 0.02 * own + 0.05):
        ok = False
sys.exit(0 if ok else 1)
PY
echo "ok a SIGKILLed sampler's restart costs at most one poll, rates exact"
