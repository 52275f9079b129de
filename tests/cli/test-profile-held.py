#!/usr/bin/env python3
# test-profile-held.py CROFT: croft profile's per-poll RSS and threads on
# real processes recorded by `croft run`.  One busy process (a row each
# poll) and three idle ones (a row every idle_every polls, each at a poll of
# the cycle of its own) share a label; from the first poll all four have
# rows to one they all have a row in (the idle ones are made to read a
# line, so their next poll writes a row), every poll's RSS and threads
# must equal the sum of what /proc says the four hold (steady memory,
# touched at start), not swing with the idle rows' cadence.  Prints TAP.
# Any user (root: the daemons drop privileges).
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

CROFT = sys.argv[1]
POLL_MS = 200
IDLE_EVERY = 5
# bytes touched, extra threads (all asleep)
WORKERS = [("busy", 8 << 20, 0), ("idle", 24 << 20, 0), ("idle", 40 << 20, 3), ("idle", 16 << 20, 1)]
PROGRAM = r"""
import sys, threading, time
kind, size, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
b = bytearray(size)
for i in range(0, size, 4096):
    b[i] = 1
for _ in range(threads):
    threading.Thread(target=time.sleep, args=(1e6,), daemon=True).start()
print("ready", flush=True)
if kind == "busy":
    while True:
        pass
for line in sys.stdin:  # a line read is CPU time: its next poll writes a row
    pass
"""
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'probe'))
from probetest import Tap, wait_for  # noqa: E402 (TAP lines, waiting)

TAP = Tap()
ok = TAP.ok


def rows_of(data, pids):
    out = []
    for name in sorted(os.listdir(data) if os.path.isdir(data) else []):
        if name.endswith(".jsonl"):
            with open(os.path.join(data, name), "rb") as f:
                text = f.read()
            for line in text[:text.rfind(b"\n") + 1].splitlines():
                r = json.loads(line)
                if r["tgid"] in pids:
                    out.append(r)
    return out


def polls_with_rows(rows, pids, after):
    """The polls after `after` in which every one of pids has a row."""
    polls = [{r["unix_ms"] for r in rows if r["tgid"] == p and r["unix_ms"] > after} for p in pids]
    return sorted(set.intersection(*polls))


def held(pid):
    """What /proc says the process holds now: (rss bytes, threads)."""
    with open("/proc/%d/statm" % pid) as f:
        rss = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    with open("/proc/%d/status" % pid) as f:
        threads = next(int(l.split()[1]) for l in f if l.startswith("Threads:"))
    return rss, threads


def main():
    tmp = tempfile.mkdtemp(prefix="croft-profile-held.")
    os.chmod(tmp, 0o755)
    data, conf = os.path.join(tmp, "data"), os.path.join(tmp, "croft.conf")
    with open(conf, "w") as f:
        f.write("[sampler]\npoll_interval = %dms\nidle_every = %d\n" % (POLL_MS, IDLE_EVERY))
    os.chmod(conf, 0o644)
    label = "held-%d" % os.getpid()
    env = dict(os.environ, CROFT_LABEL=label)
    procs = [subprocess.Popen([sys.executable, "-c", PROGRAM, kind, str(size), str(threads)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
             for kind, size, threads in WORKERS]
    for p in procs:
        p.stdout.readline()
    pids = {p.pid for p in procs}
    log = open(os.path.join(tmp, "run.log"), "w")
    run = subprocess.Popen([CROFT, "run", "--data-dir", data, "--runtime-dir", os.path.join(tmp, "run"),
                            "--config", conf], stdout=log, stderr=subprocess.STDOUT)
    try:
        # three idle rows each: two full idle_every spans after the first
        wait_for(lambda: all(sum(r["tgid"] == p for r in rows_of(data, pids)) >= 3 for p in pids) and
                 sum(r["tgid"] == procs[0].pid for r in rows_of(data, pids)) > 2 * IDLE_EVERY, 120,
                 "three rows of every process")
        poked = int(time.time() * 1000)

        def all_in_a_poll():
            for p in procs[1:]:
                p.stdin.write("\n")
                p.stdin.flush()
            return polls_with_rows(rows_of(data, pids), pids, poked)
        wait_for(all_in_a_poll, 60, "a poll with a row of every process")
        want = [held(p) for p in sorted(pids)]
        want_rss, want_threads = sum(w[0] for w in want), sum(w[1] for w in want)
        run.send_signal(signal.SIGINT)
        ok(run.wait(60) == 0, "croft run stopped")
        rows = rows_of(data, pids)
        since = max(min(r["unix_ms"] for r in rows if r["tgid"] == p) for p in pids)
        until = polls_with_rows(rows, pids, poked)[0] + 1
        # the cadence before the idle ones were made to read; the poll under
        # way then (stamped before it, reading /proc after) may have seen the read
        cadence_end = max(r["unix_ms"] for r in rows if r["tgid"] == procs[0].pid and r["unix_ms"] < poked)
        busy_rows = sum(r["tgid"] == procs[0].pid and since <= r["unix_ms"] < cadence_end for r in rows)
        idle_rows = sum(r["tgid"] != procs[0].pid and since <= r["unix_ms"] < cadence_end for r in rows)
        # each idle one: its first row, then one at its slot of each cycle
        # begun (the slot is hashed from the tgid: the first may be the next poll)
        idle_most = 3 * (1 + -(-busy_rows // IDLE_EVERY))
        ok(busy_rows >= 2 * IDLE_EVERY and idle_rows <= idle_most,
           "busy: a row each poll, idle: every idle_every polls", "%d busy rows, %d idle rows (at most %d)"
           % (busy_rows, idle_rows, idle_most))
        busy_rows = sum(r["tgid"] == procs[0].pid and since <= r["unix_ms"] < until for r in rows)
        p = subprocess.run([CROFT, "profile", "--label", label, "--since", str(since), "--until", str(until),
                            "--json", "--config", conf, data], stdout=subprocess.PIPE, text=True)
        got = json.loads(p.stdout)
        rss, thr = got["rss_bytes"], got["threads"]
        ok(got["processes"] == 4 and got["polls"] >= busy_rows, "4 processes over every poll",
           "%d processes, %d polls" % (got["processes"], got["polls"]))
        ok(all(abs(rss[k] - want_rss) <= 0.02 * want_rss for k in ("mean", "p50", "p95", "max")),
           "every poll's RSS is what the four hold (/proc, 2%)",
           "want %d, got mean %.0f p50 %.0f p95 %.0f max %.0f" % (want_rss, rss["mean"], rss["p50"],
                                                                 rss["p95"], rss["max"]))
        ok(thr["mean"] == want_threads and thr["max"] == want_threads,
           "every poll's threads are the four's (/proc)",
           "want %d, got mean %s max %s" % (want_threads, thr["mean"], thr["max"]))
    finally:
        if run.poll() is None:
            run.send_signal(signal.SIGINT)
            run.wait(60)
        for p in procs:
            p.kill()
            p.wait()
        TAP.tail_on_failure(log.name, 20)
        subprocess.run(["rm", "-rf", tmp])
    TAP.done()


if __name__ == "__main__":
    main()
