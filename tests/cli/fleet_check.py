#!/usr/bin/env python3
# fleet_check.py CROFT_JSON FIGURES_JSON FIRST: an engine's fleet figures
# (rows of {figure, key, value}: docs/engines.md's DuckDB query, croft-dask.py)
# against croft stats --json of the same folder: process-hours and processes
# per workload state and per host, GPU-held hours and their busy, idle and
# unknown parts per container, GPU, user and host, processes and CPU-hours
# per framework, calls of croft's top syscalls.  TAP lines numbered from FIRST; exit 1 on a
# difference.  Test process.
import json
import sys

HOURS = 2e-6  # croft --json rounds hours to 6 decimals
croft = json.load(open(sys.argv[1]))
engine = {}
for r in json.load(open(sys.argv[2])):
    engine.setdefault(r["figure"], {})[r["key"]] = r["value"]
n = int(sys.argv[3]) - 1
failed = 0


def check(what, want, figure, slack):
    global n, failed
    n += 1
    got = engine.get(figure, {})
    bad = {str(k): (v, got.get(k)) for k, v in want.items()
           if got.get(k) is None or abs(got[k] - v) > slack}
    extra = [str(k) for k, v in got.items() if k not in want and abs(v) > slack]
    ok = bool(want) and not bad and not extra
    failed += not ok
    print("%s %d - %s (%d figures)" % ("ok" if ok else "not ok", n, what, len(want)))
    if not ok:
        print("# " + json.dumps({"differ": bad, "only in the engine": extra})[:2000])


wl = [w for w in croft["workloads"] if w["rows"]]
check("process-hours per workload state", {w["workload"]: w["process_hours"] for w in wl},
      "process_hours", HOURS)
check("processes per workload state", {w["workload"]: w["processes"] for w in wl},
      "processes", 0)
check("process-hours per host", {h["host"]: h["process_hours"] for h in croft["hosts"]},
      "host_process_hours", HOURS)
# GPU-held hours and their split by verdict, per container, GPU, user and host
gpu = lambda g: None if g["gpu"] is None else str(g["gpu"])
uid = lambda u: None if u["uid"] is None else str(u["uid"])
for rank, key, dim in (("gpu_held_by_container", lambda c: c["container_id"], ""),
                       ("gpu_held_by_gpu", gpu, "_by_gpu"), ("gpu_held_by_user", uid, "_by_user"),
                       ("hosts", lambda h: h["host"], "_by_host")):
    for what in ("", "busy_", "idle_", "unknown_"):
        figure = what + "gpu_held_hours"
        want = {key(e): e[figure] for e in croft.get(rank, []) if e["gpu_held_hours"]}
        check("%s per %s" % (figure.replace("_", " "), dim[4:] or "container"), want,
              figure + dim, HOURS)
fw = croft["frameworks"]
check("processes per framework", {f["framework"]: f["processes"] for f in fw},
      "framework_processes", 0)
check("CPU-hours per framework", {f["framework"]: f["cpu_hours"] for f in fw},
      "framework_cpu_hours", HOURS)
# croft lists its top 20 syscalls: each of those to the call, and the same 20 on top
calls = {s["name"]: s["calls"] for s in croft["syscalls"]}
got = engine.get("calls", {})
top = sorted(got, key=lambda k: -got[k])[:len(calls)]
n += 1
bad = {k: (v, got.get(k)) for k, v in calls.items() if got.get(k) is None or abs(got[k] - v) > 1}
ok = bool(calls) and not bad and set(top) == set(calls)
failed += not ok
print("%s %d - calls of croft's top %d syscalls" % ("ok" if ok else "not ok", n, len(calls)))
if not ok:
    print("# " + json.dumps(bad)[:2000])
sys.exit(1 if failed else 0)
