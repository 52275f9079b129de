# croft-dask.py: the figures croft stats gives, computed by a Dask cluster
# over a fleet's croft datasets (how to go past one machine:
# docs/engines.md).  Each task reads whole segments (.jsonl.zst, every zstd frame, or
# plain .jsonl) with the zstandard module and sums them; the partial sums
# are merged as croft stats merges its threads'.  Runs as any user; needs
# python3-dask, python3-distributed and python3-zstandard (Debian 12).
#
# usage: python3 croft-dask.py [--scheduler ADDRESS | --scheduler-file FILE]
#                      [--wait-workers N] [--holders NAMES] PATH...
# Without a scheduler, a local cluster.  Prints one JSON array of
# {"figure", "key", "value"}: docs/engines.md's DuckDB query's rows.
import argparse
import functools
import io
import json
import os
import sys

E4 = 10000  # figures are summed as integers: rates x 1e4 x ms, as croft stats does
MS_PER_HOUR = 3600000.0
HOLDERS = ("nvidia-persistenced nv-hostengine dcgm-exporter nvidia-device-plugin "
           "gpu-feature-discovery nv-fabricmanager nvidia-smi amd-smi rocm-smi rdcd "
           "amd-metrics-exporter gpuagent k8s-device-plugin")  # croft.conf gpu_system_holders
COMM_LEN_MAX = 15  # the kernel cuts comm there
DELETED = " (deleted)"


def segment_lines(path):
    """The lines of one segment: every frame of a .zst (croft's writer
    writes one, concatenated files have more), or a plain .jsonl."""
    import zstandard
    with open(path, "rb") as f:
        if path.endswith(".zst"):
            reader = zstandard.ZstdDecompressor().stream_reader(f, read_across_frames=True)
            yield from io.TextIOWrapper(reader, encoding="utf-8", errors="replace")
        else:
            yield from io.TextIOWrapper(f, encoding="utf-8", errors="replace")


def is_holder(proc, holders):
    exe = proc.get("exe") or ""
    if exe.endswith(DELETED):
        exe = exe[:-len(DELETED)]
    base = exe.rsplit("/", 1)[-1] if exe else None
    return any(base == h or proc.get("comm") == h[:COMM_LEN_MAX] for h in holders)


def e4(x):
    return round(x * E4) if isinstance(x, (int, float)) else 0


def new_sums():
    # figure -> key -> integer ms (or rate x 1e4 x ms); procs: one entry a process
    return {"ms": {}, "procs": {}, "rows": 0, "without_span": 0, "workers": set()}


def add(sums, figure, key, value):
    t = sums["ms"].setdefault(figure, {})
    t[key] = t.get(key, 0) + value


def activity(r):
    """The row's verdict; rows without one (older datasets) are unknown."""
    a = r.get("gpu_activity")
    return a if a in ("busy", "idle") else "unknown"


def add_held(sums, dim, key, verdict, span):
    """GPU-held ms, and of them busy, idle and unknown (each figure, even 0)."""
    add(sums, "gpu_held_hours" + dim, key, span)
    for what in ("busy", "idle", "unknown"):
        add(sums, what + "_gpu_held_hours" + dim, key, span if what == verdict else 0)


def add_row(sums, r, holders):
    span = r.get("span_ms")
    proc = r.get("process") or {}
    if not isinstance(span, int) or span < 0:
        sums["without_span"] += 1  # older datasets: croft stats' gap rule, not here
        return
    sums["rows"] += 1
    # no workload (a vanished row of a process no poll read): no-gpu, as croft stats reads it
    wl, host = r.get("workload", "no-gpu"), r.get("host")
    usage = r.get("usage") or {}
    cpu = max(e4(usage.get("cpu_cores")), 0)
    add(sums, "process_hours", wl, span)
    add(sums, "host_process_hours", host, span)
    key = (host, r.get("tgid"), proc.get("start_ms"))
    p = sums["procs"].setdefault(key, [set(), -1, None, 0])
    p[0].add(wl)
    p[3] += cpu * span
    if proc.get("framework") and r["unix_ms"] > p[1]:
        p[1], p[2] = r["unix_ms"], proc["framework"]
    if wl == "gpu-held" and not is_holder(proc, holders):
        uid = proc.get("uid")
        keys = [("", proc.get("container_id")), ("_by_user", None if uid is None else str(uid)),
                ("_by_host", host)]
        keys += [("_by_gpu", None if gpu is None else str(gpu)) for gpu in r.get("gpus") or [None]]
        for dim, k in keys:
            add_held(sums, dim, k, activity(r), span)
    for s in r.get("syscalls") or ():
        rate = e4(s.get("rate_per_sec"))
        if rate > 0:
            add(sums, "calls", s.get("name"), rate * span)


def file_sums(paths, holders):
    """One task: its segments' rows summed, and which worker summed them."""
    from distributed import get_worker
    sums = new_sums()
    try:
        sums["workers"].add(get_worker().address)
    except ValueError:
        pass  # not on a worker
    for path in paths:
        for line in segment_lines(path):
            try:
                add_row(sums, json.loads(line), holders)
            except (ValueError, TypeError, KeyError, AttributeError):
                continue  # not a row: croft stats counts and reports it
    return sums


def merge(a, b):
    for figure, t in b["ms"].items():
        for key, v in t.items():
            add(a, figure, key, v)
    for key, q in b["procs"].items():
        p = a["procs"].setdefault(key, [set(), -1, None, 0])
        p[0] |= q[0]
        p[3] += q[3]
        if q[1] > p[1]:
            p[1], p[2] = q[1], q[2]
    a["rows"] += b["rows"]
    a["without_span"] += b["without_span"]
    a["workers"] |= b["workers"]
    return a


def figures(sums):
    out = []
    for figure, t in sums["ms"].items():
        for key, v in t.items():
            value = (v + 5000000) // 10000000 if figure == "calls" else v / MS_PER_HOUR
            out.append({"figure": figure, "key": key, "value": value})
    procs = {}
    for states, _, fw, cpu in sums["procs"].values():
        for wl in states:
            procs[("processes", wl)] = procs.get(("processes", wl), 0) + 1
        procs[("framework_processes", fw)] = procs.get(("framework_processes", fw), 0) + 1
        procs[("framework_cpu_hours", fw)] = procs.get(("framework_cpu_hours", fw), 0) + cpu
    for (figure, key), v in procs.items():
        value = v / E4 / MS_PER_HOUR if figure == "framework_cpu_hours" else v
        out.append({"figure": figure, "key": key, "value": value})
    return sorted(out, key=lambda e: (e["figure"], str(e["key"])))


def segments(paths):
    found = []
    for top in paths:
        if os.path.isfile(top):
            found.append(top)
        for d, _, names in os.walk(top, followlinks=True):
            found += [os.path.join(d, n) for n in names
                      if n.endswith(".jsonl.zst") or n.endswith(".jsonl")]
    return sorted(found)


def main():
    ap = argparse.ArgumentParser(description="croft stats' figures on a Dask cluster")
    ap.add_argument("--scheduler", help="the scheduler's address (tcp://HOST:PORT)")
    ap.add_argument("--scheduler-file", help="the file dask-scheduler wrote its address to")
    ap.add_argument("--wait-workers", type=int, default=0, help="wait for N workers first")
    ap.add_argument("--holders", default=HOLDERS, help="gpu_system_holders (names)")
    ap.add_argument("paths", nargs="+")
    o = ap.parse_args()
    import dask.bag
    from distributed import Client
    files = segments(o.paths)
    if not files:
        sys.exit("croft-dask: no .jsonl or .jsonl.zst files under %s" % " ".join(o.paths))
    holders = tuple(h for h in o.holders.replace(",", " ").split() if h)
    if o.scheduler or o.scheduler_file:
        client = Client(o.scheduler, scheduler_file=o.scheduler_file)
    else:
        client = Client(processes=True, dashboard_address=None)
    if o.wait_workers:
        client.wait_for_workers(o.wait_workers, timeout=120)
    bag = dask.bag.from_sequence(files, npartitions=len(files))
    total = bag.map_partitions(lambda ps: [file_sums(ps, holders)]).reduction(
        lambda parts: functools.reduce(merge, parts, new_sums()),
        lambda parts: functools.reduce(merge, parts, new_sums())).compute()
    print("croft-dask: %d rows of %d files summed on %d workers" %
          (total["rows"], len(files), len(total["workers"])), file=sys.stderr)
    if total["without_span"]:
        print("croft-dask: %d rows without span_ms (older datasets) left out: read those "
              "with croft stats" % total["without_span"], file=sys.stderr)
    json.dump(figures(total), sys.stdout)
    print()
    client.close()


if __name__ == "__main__":
    main()
