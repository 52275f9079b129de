#!/usr/bin/python3
"""steps.py: one process's rows across wall-clock steps, for checks.sh's
clock-step check (root, inside the VM).

  steps.py count TGID
      prints how many rows of TGID there are
  steps.py more TGID N K
      exits 0 once there are N + K of them
  steps.py after TGID MS
      exits 0 once the last row of TGID has a unix_ms after MS
  steps.py check TGID CPU_S
      every row of TGID in the dataset, in the order written (segments by
      name, .jsonl.zst through zstd, then the live file): one start_ms in
      all; no unix_ms twice; every span_ms under a minute (a poll, not the
      step); and the rows' CPU (cpu_cores x span_ms, summed, as croft stats
      sums it) equal to CPU_S, the kernel's count of the process's CPU
      time, within a clock tick a row
"""
import glob
import json
import os
import subprocess
import sys

DATA = "/var/lib/croft"
SPAN_MAX_MS = 60000
TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")


def unzstd(path):
    return subprocess.run(["zstd", "-dcq", path], check=True, stdout=subprocess.PIPE).stdout


def segment(base):
    """A closed segment's text: its .zst once there (whole: written as .zst.tmp,
    then renamed; the .jsonl goes after), else the .jsonl, which the writer may
    compress and remove while we look."""
    try:
        return unzstd(base + ".zst") if os.path.exists(base + ".zst") else open(base, "rb").read()
    except FileNotFoundError:
        return unzstd(base + ".zst")


def lines():
    # each segment once, by its .jsonl name; never a .zst.tmp (a rename away from gone)
    names = glob.glob(DATA + "/croft-dataset-*.jsonl") + glob.glob(DATA + "/croft-dataset-*.jsonl.zst")
    for base in sorted({n[:-len(".zst")] if n.endswith(".zst") else n for n in names}):
        yield from segment(base).splitlines()
    yield from open(DATA + "/croft-dataset.jsonl", "rb").read().splitlines()


def rows_of(tgid):
    rows = []
    for line in lines():
        try:
            row = json.loads(line)
        except ValueError:
            continue  # a line being appended
        if row.get("tgid") == tgid:
            rows.append(row)
    return rows


def main():
    if sys.argv[1] == "count":
        print(len(rows_of(int(sys.argv[2]))))
        return
    if sys.argv[1] == "more":
        sys.exit(0 if len(rows_of(int(sys.argv[2]))) >= int(sys.argv[3]) + int(sys.argv[4])
                 else 1)
    if sys.argv[1] == "after":
        rows = rows_of(int(sys.argv[2]))
        sys.exit(0 if rows and rows[-1]["unix_ms"] > int(sys.argv[3]) else 1)
    tgid, cpu_s = int(sys.argv[2]), float(sys.argv[3])
    rows = rows_of(tgid)
    starts = {r["process"].get("start_ms") for r in rows}
    times = [r["unix_ms"] for r in rows]
    spans = [r["span_ms"] for r in rows]
    rows_s = sum(r["usage"].get("cpu_cores", 0) * r["span_ms"] / 1000.0 for r in rows)
    print("%d rows; start_ms %s; unix_ms %d..%d (%d steps back); span_ms max %d; "
          "CPU by the rows %.3f s, by the kernel %.3f s"
          % (len(rows), sorted(starts), min(times), max(times),
             sum(b < a for a, b in zip(times, times[1:])), max(spans), rows_s, cpu_s))
    ok = (len(rows) >= 4 and len(starts) == 1 and len(set(times)) == len(times) and
          max(spans) < SPAN_MAX_MS and abs(rows_s - cpu_s) <= TICK_S * (len(rows) + 1))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
