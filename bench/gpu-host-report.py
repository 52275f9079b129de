#!/usr/bin/env python3
# gpu-host-report.py DIR: the report of one bench/gpu-host.sh run on an
# NVIDIA host, from the files the run kept in DIR (also a recorded sample,
# for the test here): croft's rows against nvidia-smi's compute apps and
# /proc/driver/nvidia/gpus/*/information, the job's own clock and the
# ioctl loop's count.  Prints the figures and one PASS/FAIL line per
# check; exits 1 when a check failed.  Python 3 standard library only.
import glob
import json
import os
import sys

CHECKS = []


def check(ok, what):
    CHECKS.append(bool(ok))
    print("  %s  %s" % ("PASS" if ok else "FAIL", what))


def events(path):
    """The JSON lines a gpu-host-job.py process printed, by event name."""
    out = {}
    if os.path.exists(path):
        for line in open(path):
            if line.startswith("{"):
                e = json.loads(line)
                out[e["event"]] = e
    return out


def char_devices(path):
    """(major, name) of /proc/devices' character section."""
    out, in_char = [], False
    for line in open(path):
        if line.startswith("Character devices:"):
            in_char = True
        elif line.startswith("Block devices:"):
            in_char = False
        elif in_char and line.split():
            major, name = line.split(None, 1)
            out.append((int(major), name.strip()))
    return out


def gpus_info(d):
    """uuid -> {minor, bus, model} from the copies of .../gpus/*/information."""
    out = {}
    for path in sorted(glob.glob(os.path.join(d, "information", "*"))):
        fields = {}
        for line in open(path):
            if ":" in line:
                k, v = line.split(":", 1)
                fields[k.strip()] = v.strip()
        if "GPU UUID" in fields and "Device Minor" in fields:
            out[fields["GPU UUID"]] = {"minor": int(fields["Device Minor"]),
                                       "bus": fields.get("Bus Location", os.path.basename(path)),
                                       "model": fields.get("Model", "?")}
    return out


def smi_snapshots(d):
    """[(start_ms, end_ms, [(pid, uuid)])] from nvidia-smi
    --query-compute-apps=pid,gpu_uuid --format=csv, one file per snapshot named
    START-END by when nvidia-smi started and returned; the header line and
    entries that are not a pid ([N/A] under some MIG setups) are left out."""
    out = []
    for path in sorted(glob.glob(os.path.join(d, "smi", "*.csv"))):
        apps = []
        for line in open(path).read().splitlines()[1:]:
            cells = [c.strip() for c in line.split(",")]
            if len(cells) >= 2 and cells[0].isdigit():
                apps.append((int(cells[0]), cells[1]))
        start, end = os.path.basename(path)[:-4].split("-")
        out.append((int(start), int(end), apps))
    return out


def rows_by_pid(d):
    out = {}
    for path in sorted(glob.glob(os.path.join(d, "data", "*.jsonl"))):
        for line in open(path):
            r = json.loads(line)
            out.setdefault(r["tgid"], []).append(r)
    for rows in out.values():
        rows.sort(key=lambda r: r["unix_ms"])
    return out


def sampler_status(d, name):
    path = os.path.join(d, name)
    if not os.path.exists(path):
        return {}
    for daemon in json.load(open(path)).get("daemons", []):
        if daemon.get("daemon") == "croft-sampler":
            return daemon.get("status", {})
    return {}


def states(rows):
    """Runs of rows of the same workload and ioctls or none: "gpu-held x20 (ioctls 0)"."""
    runs = []
    for r in rows:
        n = r.get("ioctl_count")
        key = (r["workload"], None if n is None else n > 0)
        if runs and runs[-1][0] == key:
            runs[-1][1] += 1
            runs[-1][2] += n or 0
        else:
            runs.append([key, 1, n or 0])
    return " -> ".join("%s x%d (ioctls %s)" % (k[0], count, "-" if k[1] is None else total)
                       for k, count, total in runs)


def within(rows, start_ms, end_ms):
    """Rows whose whole span (since the row before) lies in [start_ms, end_ms]."""
    return [r for p, r in zip(rows, rows[1:]) if p["unix_ms"] >= start_ms and r["unix_ms"] <= end_ms]


def report_devices(d):
    print("device majors (/proc/devices):")
    nv = [(m, n) for m, n in char_devices(os.path.join(d, "devices")) if n.startswith("nvidia")]
    print("  " + (", ".join("%d %s" % mn for mn in nv) or "none named nvidia*"))
    st = sampler_status(d, "status-end.json") or sampler_status(d, "status.json")
    rules = st.get("gpu_device_rules", "none")
    print("croft's device set: %s; NVIDIA numbering on %s; devices behind render/accel nodes %s" %
          (rules, st.get("gpu_nvidia_majors"), st.get("gpu_index_devices")))
    majors = {int(r.split(":")[0]) for r in rules.split(", ") if ":" in r}
    check(nv and all(m in majors for m, _ in nv), "every nvidia* major of /proc/devices is in croft's set")
    check(st.get("gpu_nvidia_majors") and all(m in st["gpu_nvidia_majors"] for m, n in nv
                                              if n in ("nvidia", "nvidia-frontend", "nvidiactl")),
          "the nvidia major numbers GPUs by minor")


def report_job(d, job, rows):
    print("job pid %d (%s): compute %.1f s, idle %.1f s, %s products" % (
        job["compute"]["pid"], job["compute"].get("device", "?"),
        (job["idle"]["unix_ms"] - job["compute"]["unix_ms"]) / 1000,
        (job["end"]["unix_ms"] - job["idle"]["unix_ms"]) / 1000, job["idle"].get("products")))
    print("  states: " + states(rows))
    # a poll between opening the GPU and the first ioctl sees a file held
    # without an ioctl yet: gpu-held for that poll, then the onset
    gpu = [r["workload"] for r in rows if r["workload"] != "no-gpu"]
    onset = gpu.index("gpu-onset") if "gpu-onset" in gpu else len(gpu)
    after = gpu[onset:]
    held = after.index("gpu-held") if "gpu-held" in after else len(after)
    check(onset <= 1 and held < len(after) and all(w == "gpu-held" for w in after[held:]),
          "gpu-onset, then gpu-held")
    busy = within(rows, job["compute"]["unix_ms"], job["idle"]["unix_ms"])
    idle = within(rows, job["idle"]["unix_ms"], job["end"]["unix_ms"])
    check(busy and all(r.get("ioctl_count", 0) > 0 for r in busy),
          "ioctl_count > 0 in every row of the compute window (%d rows)" % len(busy))
    check(idle and all(r.get("ioctl_count") == 0 for r in idle),
          "ioctl_count 0 in every row of the idle window (%d rows), still gpu-held: %s" % (
              len(idle), all(r["workload"] == "gpu-held" for r in idle)))
    fw = [r["process"].get("framework") for r in rows if r["process"].get("framework")]
    maps = os.path.join(d, "job-maps.txt")
    libs = open(maps).read().split() if os.path.exists(maps) else []
    check(fw and fw[-1] == "pytorch", "framework %s (the job mapped %s)" % (
        fw[-1] if fw else None, ", ".join(libs) or "no libtorch"))
    rate = [r["ioctl_count"] / ((r["unix_ms"] - p["unix_ms"]) / 1000) for p, r in zip(rows, rows[1:])
            if r in busy]
    return sum(rate) / len(rate) if rate else 0.0


def report_holder(holder, rows):
    print("holder pid %d (opened the GPU before croft started):" % holder["ready"]["pid"])
    print("  states: " + states(rows))
    check(rows and all(r["workload"] == "gpu-held" for r in rows),
          "gpu-held from its first row, never gpu-onset")


def report_gpus(d, rows, names, t0):
    info = gpus_info(d)
    print("GPUs: " + ", ".join("minor %d = %s (%s, %s)" % (g["minor"], u, g["bus"], g["model"])
                               for u, g in sorted(info.items(), key=lambda x: x[1]["minor"])))
    print("gpus against nvidia-smi --query-compute-apps=pid,gpu_uuid:")
    seen, bad = 0, []
    for start, t, apps in smi_snapshots(d):
        want = {}
        for pid, uuid in apps:
            want.setdefault(pid, set()).add(info[uuid]["minor"] if uuid in info else uuid)
        for pid, minors in sorted(want.items()):
            # nvidia-smi saw it at some moment before t: croft's rows on either
            # side of t (the next one; the last before, for a process that
            # exited or opened its GPU while nvidia-smi ran)
            mine = rows.get(pid, [])
            before = [r for r in mine if r["unix_ms"] <= t][-1:]
            after = [r for r in mine if r["unix_ms"] >= t][:1]
            sides = [r.get("gpus") for r in after + before]
            got = next((g for g in sides if g is not None and minors <= set(g)),
                       sides[0] if sides else None)
            ok = got is not None and minors <= set(got)
            seen += 1
            if not ok:
                bad.append(pid)
            print("  t+%5.1f s: pid %d (%s) nvidia-smi %s, croft gpus %s%s" % (
                (t - t0) / 1000, pid, names.get(pid, "other"), sorted(minors, key=str), got,
                "" if ok else "  <- differs"))
    check(seen and not bad, "every process nvidia-smi lists holds its GPUs in croft's row "
          "(%d of %d)" % (seen - len(bad), seen))


def report_cost(d, rows, job_rate):
    def figures(name):
        path = os.path.join(d, name)
        return [float(x) for x in open(path).read().split()[:2]] if os.path.exists(path) else None
    bare, probe = figures("ioctl-bare.txt"), figures("ioctl-probe.txt")
    dev = os.path.join(d, "ioctl-device")
    print("croft-probe's cost per GPU ioctl (ioctl 0 on %s, fastest chunk of 1000):" % (
        open(dev).read().strip() if os.path.exists(dev) else "/dev/nvidiactl"))
    if not bare or not probe:
        check(False, "both ioctl loops ran")
        return
    added = probe[0] - bare[0]
    print("  without croft-probe %.1f ns, with %.1f ns: %+.1f ns per ioctl (%.2fx)" % (
        bare[0], probe[0], added, probe[0] / bare[0]))
    pid = int(open(os.path.join(d, "ioctl-probe.pid")).read())
    counted = sum(r.get("ioctl_count", 0) for r in rows.get(pid, []))
    check(counted == int(probe[1]), "croft counted the loop's ioctls: %d of %d" % (counted, probe[1]))
    print("  the job made %.0f GPU ioctls/s computing: %.4f%% of a core at %+.1f ns each" % (
        job_rate, job_rate * max(added, 0) / 1e7, added))


def main():
    d = sys.argv[1]
    job, holder = events(os.path.join(d, "job.out")), events(os.path.join(d, "holder.out"))
    rows = rows_by_pid(d)
    host = open(os.path.join(d, "host.txt")).read().strip() if os.path.exists(
        os.path.join(d, "host.txt")) else "?"
    print("croft on an NVIDIA host: " + host)
    report_devices(d)
    names = {}
    job_rate = 0.0
    if {"compute", "idle", "end"} <= job.keys():
        names[job["compute"]["pid"]] = "job"
        job_rate = report_job(d, job, rows.get(job["compute"]["pid"], []))
    else:
        check(False, "the job ran (job.out has compute, idle and end)")
    if "ready" in holder:
        names[holder["ready"]["pid"]] = "holder"
        report_holder(holder, rows.get(holder["ready"]["pid"], []))
    else:
        check(False, "the holder ran (holder.out has ready)")
    report_gpus(d, rows, names, min((r[0]["unix_ms"] for r in rows.values()), default=0))
    report_cost(d, rows, job_rate)
    print("%d checks, %d passed" % (len(CHECKS), sum(CHECKS)))
    return 0 if all(CHECKS) else 1


if __name__ == "__main__":
    sys.exit(main())
