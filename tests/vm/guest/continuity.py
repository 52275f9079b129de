#!/usr/bin/python3
"""continuity.py: a busy process's rows across an upgrade or a reboot, for
upgrade.sh (root, inside the VM).  Reads the dataset, live file and
segments (zstd -dc).

  continuity.py cpulog PID LOG
      every LOG_INTERVAL_S until the process ends: "unix_ms cpu_ns" from
      /proc/PID/schedstat (its threads' CPU time, the kernel's count)
  continuity.py across PID LOG RESTART_MS
      the process's rows across a restart of the sampler at RESTART_MS:
      fails on a doubled (tgid, start_ms, unix_ms), on more than one poll
      after RESTART_MS (a unix_ms other processes' rows have) before its
      first row after it, and when the CPU time its rows give
      (usage.cpu_cores x span_ms, summed over the rows after the first of
      those within the LOG) differs from the schedstat LOG's growth over
      the same span by more than TOLERANCE, and when its last row before
      RESTART_MS and its first after it are more than MAX_UPGRADE_GAP_MS
      apart (issue 32 item 6: an upgrade costs at most one poll); prints
      the rows' gaps
  continuity.py window TGID FROM_MS TO_MS WANT
      the rows of TGID in (FROM_MS, TO_MS): at least WANT (the batches
      counted unacked; a poll may come between that count and TO_MS), none
      doubled, and none missing: no two of its rows further apart than
      MAX_GAP_MS
  continuity.py labelled CGROUP LABEL SINCE_MS
      0 once a row of CGROUP since SINCE_MS carries LABEL
"""
import glob
import json
import subprocess
import sys
import time

DATA_DIR = "/var/lib/croft"
LOG_INTERVAL_S = 0.05
POLL_MS = 1000  # the poll_interval upgrade.sh sets (issue 32: an upgrade costs one poll at 1 s)
MAX_GAP_MS = POLL_MS * 3 // 2  # a busy process has a row each poll: none missing
# across an upgrade at most one poll missing: two poll intervals apart, plus
# half a poll of margin for the sampler's own stop and start (its last row
# at the stop and its first at the start each come at their own moment,
# not on the old polls' phase)
MAX_UPGRADE_GAP_MS = POLL_MS * 5 // 2
TOLERANCE = 0.05  # the sampler reads a process up to ~0.3 s after its poll's unix_ms under TCG


def rows():
    """Every row of the dataset: closed segments, then the live file."""
    for seg in sorted(glob.glob(f"{DATA_DIR}/croft-dataset-*.jsonl*")):
        if seg.endswith(".zst"):
            text = subprocess.run(["zstd", "-dcq", seg], capture_output=True).stdout
        else:
            text = open(seg, "rb").read()
        yield from parse(text)
    try:
        yield from parse(open(f"{DATA_DIR}/croft-dataset.jsonl", "rb").read())
    except FileNotFoundError:
        pass


def parse(text):
    for line in text.splitlines():
        try:
            yield json.loads(line)
        except ValueError:
            continue  # a line being appended


def cpulog(pid, log):
    with open(log, "w", buffering=1) as out:
        while True:
            try:
                with open(f"/proc/{pid}/schedstat") as f:
                    ns = int(f.read().split()[0])
            except (OSError, ValueError, IndexError):
                return 0
            out.write(f"{int(time.time() * 1000)} {ns}\n")
            time.sleep(LOG_INTERVAL_S)


def cpu_at(reads, ms):
    for (t0, c0), (t1, c1) in zip(reads, reads[1:]):
        if t0 <= ms <= t1:
            return c0 + (c1 - c0) * (ms - t0) / max(t1 - t0, 1)
    return None


def doubled(mine):
    keys = [(r["tgid"], r["process"].get("start_ms"), r["unix_ms"]) for r in mine]
    return len(keys) - len(set(keys))


def across(pid, log, restart_ms):
    every = list(rows())
    mine = sorted((r for r in every if r["tgid"] == pid), key=lambda r: r["unix_ms"])
    dup = doubled(mine)
    after = [r["unix_ms"] for r in mine if r["unix_ms"] >= restart_ms]
    if len(mine) < 3 or not after:
        print(f"{len(mine)} rows of tgid {pid}, {len(after)} after the restart")
        return 1
    polls = sorted({r["unix_ms"] for r in every if restart_ms <= r["unix_ms"] < after[0]})
    before = [r["unix_ms"] for r in mine if r["unix_ms"] < restart_ms]
    gap = after[0] - before[-1] if before else 0
    print(f"{len(mine)} rows of tgid {pid}, {dup} doubled; after the restart at {restart_ms}: "
          f"{len(polls)} polls {polls} before its first row at {after[0]}; "
          f"{gap} ms from its last row before (at most {MAX_UPGRADE_GAP_MS})")
    reads = [tuple(int(p) for p in ln.split()) for ln in open(log) if len(ln.split()) == 2]
    logged = [r for r in mine if reads and reads[0][0] <= r["unix_ms"] <= reads[-1][0]]
    times = [r["unix_ms"] for r in logged]
    print(f"gaps between its rows (ms): {[b - a for a, b in zip(times, times[1:])]}")
    print(f"their span_ms: {[r.get('span_ms') for r in logged[1:]]}")
    if len(logged) < 3 or any("span_ms" not in r for r in logged):
        print(f"{len(logged)} rows within the schedstat log, or rows without span_ms")
        return 1
    croft_s = sum(r["usage"]["cpu_cores"] * r["span_ms"] / 1000 for r in logged[1:])
    kernel_s = (cpu_at(reads, times[-1]) - cpu_at(reads, times[0])) / 1e9
    covered_ms = sum(r["span_ms"] for r in logged[1:])
    off = abs(croft_s - kernel_s) / kernel_s
    print(f"CPU over {(times[-1] - times[0]) / 1000:.1f} s: rows {croft_s:.3f} s "
          f"(their span_ms cover {covered_ms / 1000:.1f} s), schedstat {kernel_s:.3f} s: "
          f"off by {off:.1%} (tolerance {TOLERANCE:.0%})")
    return 0 if (not dup and len(polls) <= 1 and before and gap <= MAX_UPGRADE_GAP_MS and
                 off <= TOLERANCE) else 1


def window(tgid, from_ms, to_ms, want):
    mine = [r for r in rows() if r["tgid"] == tgid and from_ms < r["unix_ms"] < to_ms]
    times = sorted(r["unix_ms"] for r in mine)
    gap = max((b - a for a, b in zip(times, times[1:])), default=0)
    print(f"{len(mine)} rows of tgid {tgid} in the window, want {want} or more; "
          f"{doubled(mine)} doubled; widest gap {gap} ms; times {times}")
    return 0 if len(mine) >= want and not doubled(mine) and gap <= MAX_GAP_MS else 1


def labelled(cgroup, label, since_ms):
    got = [r.get("label") for r in rows()
           if r["process"].get("cgroup") == cgroup and r["unix_ms"] >= since_ms]
    print(f"labels of {cgroup}'s rows since {since_ms}: {got[-3:]}")
    return 0 if label in got else 1


def main(argv):
    if len(argv) == 4 and argv[1] == "cpulog":
        return cpulog(int(argv[2]), argv[3])
    if len(argv) == 5 and argv[1] == "across":
        return across(int(argv[2]), argv[3], int(argv[4]))
    if len(argv) == 6 and argv[1] == "window":
        return window(int(argv[2]), int(argv[3]), int(argv[4]), int(argv[5]))
    if len(argv) == 5 and argv[1] == "labelled":
        return labelled(argv[2], argv[3], int(argv[4]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
