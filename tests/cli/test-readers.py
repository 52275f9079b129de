#!/usr/bin/env python3
# test-readers.py CROFT: croft stats and croft profile on a small dataset
# written here by hand, every figure computed by hand below; the same rows as
# .jsonl, .jsonl.zst, multi-frame .zst and split across files and folders;
# a corrupt frame, a truncated segment, garbage lines and an empty file; the
# --svg chart parsed as XML.  Prints TAP.  Test process, no privilege.
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from readers_lib import *  # noqa: E402,F403 (croft, figures, row, test, TAP)

A = {"comm": "python", "exe": "/usr/bin/python3", "cgroup": "/system.slice/docker-aaaa1111.scope",
     "container_id": "aaaa1111", "cwd": "/work", "framework": "pytorch"}
# Not valid UTF-8 on the host: U+FFFD and the raw bytes (the scanner leaves such rows to jansson).
B = {"comm": "sleep", "exe": "/usr/bin/sl\ufffdep", "exe_b64": "L3Vzci9iaW4vc2z/ZXA=",
     "cgroup": "/user.slice", "cwd": "/home/u"}
# An escaped quote: jansson again.
C = {"comm": "tr\"ain", "exe": "/opt/train", "cgroup": "/system.slice/docker-bbbb2222.scope",
     "container_id": "bbbb2222", "cwd": "/srv", "framework": "tensorflow"}


# A: tgid 100, onset then held (active, then idle); its last row is an idle
# row 20 s after the one before.  B: idle host process (rows 30 s apart).
# C: held and idle, then active.  D: tgid 100 again after 164 s: a new process.
ROWS = [
    row(0, 100, A, "gpu-onset", 1.5, 1000, 4, 10, (100.0, 50.0), 10.0, [("ioctl", 5.0), ("futex", 2.0)], "exp1"),
    row(0, 200, B, "no-gpu", 0.0, 500, 1, None, None, 0.0, [("nanosleep", 1.0)]),
    row(0, 300, C, "gpu-held", 0.0, 500, 8, 0),
    row(2000, 100, A, "gpu-onset", 2.5, 2000, 4, 20, (100.0, 50.0), 0.0, [("ioctl", 10.0)], "exp1"),
    row(4000, 100, A, "gpu-held", 1.0, 3000, 5, 30, (100.0, 50.0), 0.0, [("ioctl", 15.0), ("futex", 1.0)], "exp1"),
    row(6000, 100, A, "gpu-held", 0.5, 3000, 5, 0, (100.0, 50.0), 0.0, None, "exp1"),
    row(26000, 100, A, "gpu-held", 0.0, 3000, 5, 0, (100.0, 50.0), 0.0, [("futex", 0.5)], "exp1"),
    row(30000, 200, B, "no-gpu", 0.0, 500, 1, None, None, 0.0, [("nanosleep", 1.0)]),
    row(30000, 300, C, "gpu-held", 0.0, 500, 8, 0),
    row(34000, 300, C, "gpu-held", 3.0, 600, 8, 5, None, 0.0, [("ioctl", 2.5)]),
    row(200000, 100, A, "no-gpu", 0.25, 4000, 2, None, None, 0.0, None, "exp2"),
    row(202000, 100, A, "no-gpu", 0.75, 4000, 2, None, None, 0.0, None, "exp2"),
]

H = 3600000.0
EXPECTED_STATS = {
    "time_span": {"first_ms": T0, "last_ms": T0 + 202000, "first": "2026-10-20T14:00:00Z",
                  "last": "2026-10-20T14:03:22Z", "hours": round(202000 / H, 6)},
    "rows": 12, "processes": 4, "containers": 2,
    "workloads": [
        {"workload": "gpu-onset", "rows": 2, "processes": 1, "process_hours": round(4000 / H, 6)},
        {"workload": "gpu-held", "rows": 6, "processes": 2, "process_hours": round(60000 / H, 6)},
        {"workload": "no-gpu", "rows": 4, "processes": 2, "process_hours": round(36000 / H, 6)},
    ],
    "gpu_held_by_container": [
        {"container_id": "bbbb2222", "gpu_held_hours": round(36000 / H, 6), "busy_gpu_held_hours": round(4000 / H, 6),
         "idle_gpu_held_hours": round(32000 / H, 6), "unknown_gpu_held_hours": 0.0},
        {"container_id": "aaaa1111", "gpu_held_hours": round(24000 / H, 6), "busy_gpu_held_hours": round(2000 / H, 6),
         "idle_gpu_held_hours": round(22000 / H, 6), "unknown_gpu_held_hours": 0.0},
    ],
    "gpu_held_by_cwd": [
        {"cwd": "/srv", "gpu_held_hours": round(36000 / H, 6), "idle_gpu_held_hours": round(32000 / H, 6)},
        {"cwd": "/work", "gpu_held_hours": round(24000 / H, 6), "idle_gpu_held_hours": round(22000 / H, 6)},
    ],
    "frameworks": [
        {"framework": "pytorch", "processes": 2, "cpu_hours": round(13000 / H, 6)},
        {"framework": "tensorflow", "processes": 1, "cpu_hours": round(12000 / H, 6)},
        {"framework": None, "processes": 1, "cpu_hours": 0.0},
    ],
    "syscalls": [{"name": "ioctl", "calls": 70}, {"name": "nanosleep", "calls": 32}, {"name": "futex", "calls": 16}],
}

EXPECTED_PROFILE_TGID = {
    "selector": {"tgid": 100}, "rows": 7, "processes": 2, "polls": 7,
    "time_span": {"first_ms": T0, "last_ms": T0 + 202000, "first": "2026-10-20T14:00:00Z",
                  "last": "2026-10-20T14:03:22Z", "duration_s": 202.0},
    "cpu_cores": {"mean": round(6.5 / 7, 4), "p50": 0.75, "p95": 2.5, "max": 2.5},
    "rss_bytes": {"mean": round(20000 / 7, 1), "p50": 3000.0, "p95": 4000.0, "max": 4000.0},
    "threads": {"mean": round(27 / 7, 2), "max": 5.0},
    "network": {"rx_bytes_s": {"mean": round(500 / 7, 2), "max": 100.0},
                "tx_bytes_s": {"mean": round(250 / 7, 2), "max": 50.0}},
    "disk": {"read_bytes_s": {"mean": 0.0, "max": 0.0},
             "write_bytes_s": {"mean": round(10 / 7, 2), "max": 10.0}},
    "gpu_phase_seconds": {"onset": 4.0, "busy": 2.0, "idle": 22.0, "unknown": 0.0},
    "gpu_phases": [
        {"tgid": 100, "phase": "onset", "start_ms": T0 - 2000, "end_ms": T0 + 2000,
         "start": "2026-10-20T13:59:58Z", "end": "2026-10-20T14:00:02Z", "length_s": 4.0},
        {"tgid": 100, "phase": "busy", "start_ms": T0 + 2000, "end_ms": T0 + 4000,
         "start": "2026-10-20T14:00:02Z", "end": "2026-10-20T14:00:04Z", "length_s": 2.0},
        {"tgid": 100, "phase": "idle", "start_ms": T0 + 4000, "end_ms": T0 + 26000,
         "start": "2026-10-20T14:00:04Z", "end": "2026-10-20T14:00:26Z", "length_s": 22.0},
    ],
    "gpu_phases_total": 3,
    "syscalls": [{"name": "ioctl", "calls": 60, "share": round(60 / 76, 4)},
                 {"name": "futex", "calls": 16, "share": round(16 / 76, 4)}],
}

# C's rows at 0, 30 and 34 s; the files hold polls at 0, 2, 4, 6, 26, 30 and 34 s
# while C lives: its RSS (500) holds until its row at 34 s (600); its row at
# 30 s (0.0 cores) covers the polls after 0 s, the one at 34 s (3.0) the poll at 34 s.
EXPECTED_PROFILE_CONTAINER = {
    "rows": 3, "processes": 1, "polls": 7,
    "cpu_cores": {"mean": round(3.0 / 7, 4), "p50": 0.0, "p95": 3.0, "max": 3.0},
    "rss_bytes": {"mean": round((6 * 500 + 600) / 7, 1), "p50": 500.0, "p95": 600.0, "max": 600.0},
    "gpu_phase_seconds": {"onset": 0.0, "busy": 4.0, "idle": 32.0, "unknown": 0.0},
    "gpu_phases": [
        {"tgid": 300, "phase": "idle", "start_ms": T0 - 2000, "end_ms": T0 + 30000,
         "start": "2026-10-20T13:59:58Z", "end": "2026-10-20T14:00:30Z", "length_s": 32.0},
        {"tgid": 300, "phase": "busy", "start_ms": T0 + 30000, "end_ms": T0 + 34000,
         "start": "2026-10-20T14:00:30Z", "end": "2026-10-20T14:00:34Z", "length_s": 4.0},
    ],
    "syscalls": [{"name": "ioctl", "calls": 10, "share": 1.0}],
}

def plain():
    return write_lines(path("plain", "croft-dataset.jsonl"), ROWS)


@test
def stats_json_by_hand():
    got, inp = figures("stats", plain())
    subset(got, EXPECTED_STATS)
    assert inp["rows_read"] == 12 and inp["bad_lines"] == 0 and inp["files"] == 1, inp


@test
def stats_table_by_hand():
    out = croft("stats", plain(), expect=0).stdout
    lines = {l.split()[0]: l.split() for l in out.splitlines() if l.strip()}
    assert lines["rows"][1] == "12" and lines["processes"][1] == "4" and lines["containers"][1] == "2", out
    assert lines["gpu-onset"][1:] == ["2", "1", "0.001"], lines["gpu-onset"]
    assert lines["gpu-held"][1:] == ["6", "2", "0.017"], lines["gpu-held"]
    assert lines["no-gpu"][1:] == ["4", "2", "0.010"], lines["no-gpu"]
    # held, busy, idle, unknown, idle share
    assert lines["bbbb2222"][1:] == ["0.010", "0.001", "0.009", "0.000", "88.9%"], lines["bbbb2222"]
    assert lines["aaaa1111"][1:] == ["0.007", "0.001", "0.006", "0.000", "91.7%"], lines["aaaa1111"]
    assert lines["/srv"][1:] == ["0.010", "0.001", "0.009", "0.000", "88.9%"], lines["/srv"]
    assert lines["pytorch"][1:] == ["2", "0.004"] and lines["tensorflow"][1:] == ["1", "0.003"], out
    assert lines["(none)"][1:] == ["1", "0.000"], out
    assert lines["ioctl"][1] == "70" and lines["nanosleep"][1] == "32" and lines["futex"][1] == "16", out
    assert "2026-10-20T14:00:00Z .. 2026-10-20T14:03:22Z" in out, out
    assert "skipped      nothing" in out, out


@test
def stats_filters():
    p = plain()
    for args, rows, procs in ((["--label", "exp1"], 5, 1), (["--tgid", "200"], 2, 1),
                              (["--framework", "tensorflow"], 3, 1), (["--container", "aaaa"], 7, 2),
                              (["--since", "2026-10-20T14:01:40Z"], 2, 1),
                              (["--until", str(T0 + 30000)], 7, 3),
                              (["--since", str(T0 + 2000), "--until", "2026-10-20T14:00:06Z"], 2, 1)):
        got, _ = figures("stats", *args, p)
        assert (got["rows"], got["processes"]) == (rows, procs), (args, got["rows"], got["processes"])


# E (tgid 400) maps libtorch first, vllm's extension later: its rows say
# pytorch, then vllm.  F (tgid 500) is pytorch throughout.  Split over two
# files with E's change between them.
E = dict(A, cwd="/serve", container_id="cccc3333", cgroup="/system.slice/docker-cccc3333.scope")
F = dict(A, cwd="/train", container_id="dddd4444", cgroup="/system.slice/docker-dddd4444.scope")
UPGRADE = [
    row(0, 400, E, "no-gpu", 1.0, 100, 1),
    row(0, 500, F, "no-gpu", 0.5, 100, 1),
    row(2000, 400, E, "no-gpu", 1.0, 100, 1),
    row(4000, 400, dict(E, framework="vllm"), "no-gpu", 2.0, 100, 1),
    row(6000, 400, dict(E, framework="vllm"), "no-gpu", 2.0, 100, 1),
    row(6000, 500, F, "no-gpu", 0.5, 100, 1),
]


@test
def a_process_counts_under_its_last_framework():
    d1 = write_lines(path("upgrade", "a", "croft-dataset-20261020T140000Z.jsonl"), UPGRADE[:3])
    write_lines(path("upgrade", "b", "croft-dataset.jsonl"), UPGRADE[3:])
    d = os.path.dirname(os.path.dirname(d1))
    got, _ = figures("stats", d)
    subset(got["frameworks"], [
        {"framework": "vllm", "processes": 1, "cpu_hours": round((2 + 2 + 4 + 4) * 1000 / H, 6)},
        {"framework": "pytorch", "processes": 1, "cpu_hours": round(0.5 * 8000 / H, 6)}])
    for fw, rows in (("vllm", 4), ("pytorch", 2)):
        got, _ = figures("stats", "--framework", fw, d)
        assert (got["rows"], got["processes"]) == (rows, 1), (fw, got["rows"], got["processes"])
        prof, _ = figures("profile", "--framework", fw, d)
        assert (prof["rows"], prof["processes"]) == (rows, 1), (fw, prof["rows"], prof["processes"])


@test
def config_poll_interval_and_idle_every():
    """poll_interval 10 s, idle_every 1: a first row stands for 10 s and a
    gap over 20 s starts a new process (B and C split in two)."""
    conf = path("conf", "croft.conf")
    with open(conf, "w") as f:
        f.write("[sampler]\npoll_interval = 10s\nidle_every = 1\n")
    p = subprocess.run([CROFT, "stats", "--json", "--config", conf, plain()], stdout=subprocess.PIPE,
                       text=True, check=True)
    got = json.loads(p.stdout)
    assert got["processes"] == 6, got["processes"]
    subset(got["workloads"], [
        {"workload": "gpu-onset", "rows": 2, "processes": 1, "process_hours": round(12000 / H, 6)},
        {"workload": "gpu-held", "rows": 6, "processes": 3, "process_hours": round(48000 / H, 6)},
        {"workload": "no-gpu", "rows": 4, "processes": 3, "process_hours": round(32000 / H, 6)},
    ])


@test
def profile_tgid_json_by_hand():
    got, _ = figures("profile", "--tgid", "100", plain())
    subset(got, EXPECTED_PROFILE_TGID)


@test
def profile_container_json_by_hand():
    got, _ = figures("profile", "--container", "bbbb2222", plain())
    subset(got, EXPECTED_PROFILE_CONTAINER)


# Idle processes have a row every idle_every polls; a container's per-poll
# sums must not swing with that cadence.  Container cccc3333, polls every 2 s
# from 0 to 60 s: P busy (a row each poll: 1.0 cores, 1000 B, 2 threads); Q
# idle (rows at 0, 30, 60 s: 0.25 cores, 5000 B, 10 threads); R idle (rows at
# 10 and 40 s: 0.1 then 0.5 cores, 3000 B, 3 threads).  Per poll: RSS 6000
# (15 polls) or 9000 while R lives (10..40 s, 16 polls); threads 12 or 15;
# CPU 1.25 (15 polls), 1.35 at 10 s (R's first row covers its own poll),
# 1.75 at 12..40 s (R's 0.5 covers the 15 polls since its row at 10 s).
IDLE_CADENCE = {"comm": "w", "exe": "/usr/bin/w", "cgroup": "/system.slice/docker-cccc3333.scope",
                "container_id": "cccc3333", "cwd": "/"}


def idle_cadence_rows():
    rows = []
    for t in range(0, 62, 2):
        rows.append((t, row(t * 1000, 1, IDLE_CADENCE, "no-gpu", 1.0, 1000, 2)))
    for t in (0, 30, 60):
        rows.append((t, row(t * 1000, 2, IDLE_CADENCE, "no-gpu", 0.25, 5000, 10)))
    for t, cpu in ((10, 0.1), (40, 0.5)):
        rows.append((t, row(t * 1000, 3, IDLE_CADENCE, "no-gpu", cpu, 3000, 3)))
    return [r for _, r in sorted(rows, key=lambda x: x[0])]


@test
def profile_levels_hold_and_rates_cover_their_span():
    want_cpu = [1.25] * 5 + [1.35] + [1.75] * 15 + [1.25] * 10
    want = {
        "rows": 36, "processes": 3, "polls": 31,
        "cpu_cores": {"mean": round(sum(want_cpu) / 31, 4), "p50": 1.35, "p95": 1.75, "max": 1.75},
        "rss_bytes": {"mean": round((15 * 6000 + 16 * 9000) / 31, 1), "p50": 9000.0, "p95": 9000.0,
                      "max": 9000.0},
        "threads": {"mean": round((15 * 12 + 16 * 15) / 31, 2), "max": 15.0},
    }
    rows = idle_cadence_rows()
    one = write_lines(path("cadence", "one", "croft-dataset.jsonl"), rows)
    got, _ = figures("profile", "--container", "cccc3333", one)
    subset(got, want)
    # cut into files mid-process (Q's and R's rows in different files): the same
    cut = os.path.join(TMP, "cadence", "cut")
    write_lines(path("cadence", "cut", "croft-dataset-20261020T140000Z.jsonl"), rows[:13])
    with open(path("cadence", "cut", "croft-dataset-20261020T140024Z.jsonl.zst"), "wb") as f:
        f.write(frame(rows[13:27]))
    write_lines(path("cadence", "cut", "croft-dataset.jsonl"), rows[27:])
    got, _ = figures("profile", "--container", "cccc3333", "--threads", "3", cut)
    subset(got, want)
    # the chart draws the same sums: RSS flat but for R's life
    svg = path("cadence", "c.svg")
    croft("profile", "--container", "cccc3333", "--svg", svg, one, expect=0)
    ns = "{http://www.w3.org/2000/svg}"
    lines = {e.get("id"): e for e in ET.parse(svg).getroot().iter(ns + "polyline")}
    ys = [float(p.split(",")[1]) for p in lines["rss"].get("points").split()]
    assert len(ys) == 31 and len(set(ys[:5] + ys[21:])) == 1 and len(set(ys[5:21])) == 1, ys


@test
def profile_table_by_hand():
    out = croft("profile", "--tgid", "100", plain(), expect=0).stdout
    lines = {" ".join(l.split()[:2]): l.split() for l in out.splitlines() if l.strip()}
    assert lines["CPU cores"][2:] == ["0.9286", "0.7500", "2.5000", "2.5000"], lines["CPU cores"]
    assert "7 rows, 2 processes, 7 polls" in out, out
    assert "(202.0 s)" in out, out
    phases = [l.split() for l in out.splitlines() if l.split()[:1] == ["100"]]
    assert [(p[1], p[2], p[3], p[4]) for p in phases] == [
        ("onset", "2026-10-20T13:59:58Z", "2026-10-20T14:00:02Z", "4.0"),
        ("busy", "2026-10-20T14:00:02Z", "2026-10-20T14:00:04Z", "2.0"),
        ("idle", "2026-10-20T14:00:04Z", "2026-10-20T14:00:26Z", "22.0")], phases
    assert lines["ioctl 60"][2] == "78.9%", lines["ioctl 60"]


# Per GPU: tgid 400 holds GPUs 0 and 1 (active, then idle, an idle row 30 s on,
# then GPU 1 closed); tgid 800 holds only files naming no GPU ("gpus": []), then
# GPU 3 without the probe (no ioctl_count, no verdict: unknown).  System holders: the
# NVIDIA persistence daemon by exe, rocm-smi (a Python script) by comm, DCGM's
# host engine by an exe replaced on disk.
G = {"comm": "python", "exe": "/usr/bin/python3", "cgroup": "/system.slice/docker-cccc3333.scope",
     "container_id": "cccc3333", "cwd": "/g"}
D = {"comm": "infer", "exe": "/opt/infer", "cgroup": "/system.slice/docker-dddd4444.scope",
     "container_id": "dddd4444", "cwd": "/d"}
PERSIST = {"comm": "nvidia-persiste", "exe": "/usr/bin/nvidia-persistenced", "cgroup": "/system.slice", "cwd": "/"}
ROCM = {"comm": "rocm-smi", "exe": "/usr/bin/python3.12", "cgroup": "/user.slice", "cwd": "/h"}
DCGM = {"comm": "hostengine-x", "exe": "/usr/bin/nv-hostengine (deleted)", "cgroup": "/system.slice", "cwd": "/"}


def grow(dt, tgid, proc, ioctl, gpus):
    r = json.loads(row(dt, tgid, proc, "gpu-held", 0.0, 100, 1, ioctl))
    if gpus is not None:
        r = {k: v for k, v in r.items() if k != "usage"} | {"gpus": gpus, "usage": r["usage"]}
    return json.dumps(r, separators=(",", ":"))


GPU_ROWS = [
    grow(0, 400, G, 5, [0, 1]), grow(2000, 400, G, 0, [0, 1]), grow(32000, 400, G, 0, [0, 1]),
    grow(34000, 400, G, 0, [0]),
    grow(0, 500, PERSIST, 0, [0, 1]), grow(30000, 500, PERSIST, 0, [0, 1]),
    grow(0, 600, ROCM, 0, [1]), grow(2000, 600, ROCM, 0, [1]),
    grow(0, 700, DCGM, 3, None),
    grow(0, 800, D, 0, []), grow(2000, 800, D, None, [3]),
]


def hours(held, idle, unknown=0):
    return {"gpu_held_hours": round(held / H, 6), "idle_gpu_held_hours": round(idle / H, 6),
            "unknown_gpu_held_hours": round(unknown / H, 6),
            "busy_gpu_held_hours": round((held - idle - unknown) / H, 6)}


@test
def stats_per_gpu_and_system_holders_by_hand():
    p = write_lines(path("gpus", "croft-dataset.jsonl"), GPU_ROWS)
    got, _ = figures("stats", p)
    subset(got["gpu_held_by_gpu"], [{"gpu": 0, **hours(36000, 34000)}, {"gpu": 1, **hours(34000, 32000)},
                                    {"gpu": None, **hours(2000, 2000)}, {"gpu": 3, **hours(2000, 0, 2000)}])
    subset(got["gpu_held_by_container_gpu"], [
        {"container_id": "cccc3333", "gpu": 0, **hours(36000, 34000)},
        {"container_id": "cccc3333", "gpu": 1, **hours(34000, 32000)},
        {"container_id": "dddd4444", "gpu": None, **hours(2000, 2000)},
        {"container_id": "dddd4444", "gpu": 3, **hours(2000, 0, 2000)}])
    subset(got["gpu_held_system"], [{"holder": "nvidia-persistenced", **hours(32000, 32000)},
                                    {"holder": "rocm-smi", **hours(4000, 4000)},
                                    {"holder": "nv-hostengine", **hours(2000, 0)}])
    # the system holders are in no workload ranking, but keep their rows
    subset(got["gpu_held_by_container"], [{"container_id": "cccc3333", **hours(36000, 34000)},
                                          {"container_id": "dddd4444", **hours(4000, 2000, 2000)}])
    assert [e["cwd"] for e in got["gpu_held_by_cwd"]] == ["/g", "/d"], got["gpu_held_by_cwd"]
    assert got["rows"] == 11 and got["processes"] == 5, got
    # gpu_system_holders empty: they are workloads again, host processes
    conf = path("gpus", "none.conf")
    with open(conf, "w") as f:
        f.write("[sampler]\ngpu_system_holders =\n")
    none = json.loads(subprocess.run([CROFT, "stats", "--json", "--config", conf, p], check=True,
                                     stdout=subprocess.PIPE, text=True).stdout)
    assert none["gpu_held_system"] == [], none["gpu_held_system"]
    subset(none["gpu_held_by_container"][0], {"container_id": None, **hours(38000, 36000)})
    subset(none["gpu_held_by_gpu"][:2], [{"gpu": 1, **hours(70000, 68000)}, {"gpu": 0, **hours(68000, 66000)}])
    out = croft("stats", p, expect=0).stdout
    assert "GPU 0   cccc3333" in out and "system holders" in out and "nvidia-persistenced" in out, out


@test
def profile_phases_name_their_gpus():
    p = write_lines(path("gpus", "croft-dataset.jsonl"), GPU_ROWS)
    got, _ = figures("profile", "--tgid", "400", p)
    subset(got["gpu_phases"], [
        {"phase": "busy", "start_ms": T0 - 2000, "end_ms": T0, "gpus": [0, 1]},
        {"phase": "idle", "start_ms": T0, "end_ms": T0 + 32000, "gpus": [0, 1]},
        {"phase": "idle", "start_ms": T0 + 32000, "end_ms": T0 + 34000, "gpus": [0]}])
    assert got["gpus"] == [0, 1], got["gpus"]
    got, _ = figures("profile", "--container", "dddd4444", p)
    assert [ph["gpus"] for ph in got["gpu_phases"]] == [[], [3]], got["gpu_phases"]
    got, _ = figures("profile", "--tgid", "700", p)
    assert got["gpu_phases"][0]["gpus"] is None and got["gpus"] is None, got
    out = croft("profile", "--tgid", "400", p, expect=0).stdout
    assert "GPUs held        0-1" in out, out


def layouts():
    """The same rows, stored five ways: (name, paths)."""
    out = [("plain", [plain()])]
    zst = path("zst", "croft-dataset-20261020T140000Z.jsonl.zst")
    with open(zst, "wb") as f:
        f.write(frame(ROWS))
    out.append(("zst", [zst]))
    multi = path("multi", "croft-dataset-20261020T140000Z.jsonl.zst")
    with open(multi, "wb") as f:
        f.write(frame(ROWS[:4]) + frame(ROWS[4:8]) + frame(ROWS[8:]))
    out.append(("multi-frame", [multi]))
    # split mid-process (A's rows at 4 s / 6 s and B's idle row) over files and folders
    write_lines(path("split", "d1", "croft-dataset-20261020T140000Z.jsonl"), ROWS[:5])
    with open(path("split", "d2", "sub", "croft-dataset-20261020T140005Z.jsonl.zst"), "wb") as f:
        f.write(frame(ROWS[5:9]))
    write_lines(path("split", "d2", "croft-dataset.jsonl"), ROWS[9:])
    out.append(("split", [os.path.join(TMP, "split", "d1"), os.path.join(TMP, "split", "d2")]))
    return out


@test
def same_figures_whatever_the_layout():
    ref, _ = figures("stats", plain())
    pref, _ = figures("profile", "--tgid", "100", plain())
    for name, paths in layouts():
        for extra in ([], ["--jansson"], ["--threads", "1"], ["--threads", "3"]):
            got, inp = figures("stats", *extra, *paths)
            assert got == ref, (name, extra, got)
            assert inp["rows_read"] == 12 and sum(inp["skipped"].values()) == 0, (name, inp)
            pgot, _ = figures("profile", "--tgid", "100", *extra, *paths)
            assert pgot == pref, (name, extra, pgot)


@test
def segment_caught_mid_compression_is_read_once():
    """X.jsonl and X.jsonl.zst side by side (the writer renames the .zst in
    before it removes the .jsonl): the rows count once."""
    d = os.path.join(TMP, "twins")
    write_lines(path("twins", "croft-dataset-20261020T140000Z.jsonl"), ROWS)
    with open(path("twins", "croft-dataset-20261020T140000Z.jsonl.zst"), "wb") as f:
        f.write(frame(ROWS))
    got, inp = figures("stats", d)
    assert got == figures("stats", plain())[0] and inp["files"] == 1, inp


def clean_run_of(rows):
    p = write_lines(path("clean-" + str(len(rows)), "croft-dataset.jsonl"), rows)
    return figures("stats", p)[0], figures("profile", "--tgid", "100", p)[0]


def damaged_run(paths, parser):
    return (figures("stats", *parser, *paths, expect=3), figures("profile", "--tgid", "100", *parser, *paths, expect=3))


@test
def corrupt_frame_in_the_middle():
    f1, f2, f3 = frame(ROWS[:4]), bytearray(frame(ROWS[4:8])), frame(ROWS[8:])
    for i in range(len(f2) // 2, len(f2) // 2 + 6):
        f2[i] ^= 0x5a
    p = path("corrupt", "croft-dataset-20261020T140000Z.jsonl.zst")
    with open(p, "wb") as f:
        f.write(f1 + bytes(f2) + f3)
    want = clean_run_of(ROWS[:4] + ROWS[8:])
    for parser in ([], ["--jansson"]):
        (got, inp), (pgot, _) = damaged_run([p], parser)
        assert got == want[0] and pgot == want[1], (got, want[0])
        assert inp["skipped"]["corrupt frame"] == 1, inp
        assert inp["skips"][0]["offset"] == len(f1) and inp["skips"][0]["file"] == p, inp["skips"]


@test
def truncated_segment():
    f1, f2, f3 = frame(ROWS[:4]), frame(ROWS[4:8]), frame(ROWS[8:])
    p = path("truncated", "croft-dataset-20261020T140000Z.jsonl.zst")
    with open(p, "wb") as f:
        f.write(f1 + f2 + f3[: len(f3) // 2])
    want = clean_run_of(ROWS[:8])
    (got, inp), (pgot, _) = damaged_run([p], [])
    assert got == want[0] and pgot == want[1], got
    assert inp["skipped"]["truncated"] == 1 and inp["skips"][0]["offset"] == len(f1) + len(f2), inp


@test
def garbage_lines_and_an_empty_file():
    lines = ROWS[:6] + ["this is not JSON", '{"unix_ms":1,"tgid":2,"workload":"busy"}', ""] + ROWS[6:]
    d = os.path.join(TMP, "garbage")
    write_lines(path("garbage", "croft-dataset-20261020T140000Z.jsonl"), lines)
    open(path("garbage", "croft-dataset-20261020T150000Z.jsonl"), "wb").close()
    ref = figures("stats", plain())[0], figures("profile", "--tgid", "100", plain())[0]
    for parser in ([], ["--jansson"]):
        (got, inp), (pgot, _) = damaged_run([d], parser)
        assert got == ref[0] and pgot == ref[1], got
        assert inp["bad_lines"] == 3 and inp["skipped"]["empty file"] == 1, inp
        assert [s.get("line") for s in inp["skips"] if s["kind"] == "bad line"] == [7, 8, 9], inp["skips"]
    err = croft("stats", d).stderr
    assert "line 7: not JSON" in err and "line 8: not a croft row" in err and "empty file" in err, err


@test
def times_at_the_ends_of_int64():
    """unix_ms is never before the epoch (the schema's minimum 0): such a
    row is a bad line to both parsers, INT64_MIN too, where the time's
    arithmetic overflowed; a row at INT64_MAX is read, and its time printed
    as the calendar gives it."""
    def at(ms):
        return json.dumps({"unix_ms": ms, "span_ms": 2000, "tgid": 100, "workload": "no-gpu"})
    d = os.path.join(TMP, "int64-ends")
    write_lines(path("int64-ends", "croft-dataset-20261020T140000Z.jsonl"),
                ROWS[:6] + [at(-1), at(-2**63), at(2**63 - 1)] + ROWS[6:])
    for parser in ([], ["--jansson"]):
        (got, inp), (pgot, _) = damaged_run([d], parser)
        assert [s.get("line") for s in inp["skips"] if s["kind"] == "bad line"] == [7, 8], inp["skips"]
        span = got["time_span"]
        assert span["last_ms"] == 2**63 - 1 and span["last"] == "292278994-08-17T07:12:55.807Z", span
        assert pgot["time_span"]["last_ms"] == 2**63 - 1, pgot["time_span"]
    err = croft("stats", d).stderr
    assert "line 7: not a croft row (needs integer unix_ms, not before the epoch" in err, err


@test
def random_damage_is_reported_not_fatal():
    """Flipped bytes and cuts anywhere in a multi-frame segment and a plain
    file: croft still prints figures and exits 0 or 3, never crashes."""
    import random
    rnd = random.Random(7)
    clean_zst = frame(ROWS[:4]) + frame(ROWS[4:8]) + frame(ROWS[8:])
    clean_txt = "".join(l + "\n" for l in ROWS).encode()
    for i in range(60):
        data = bytearray(clean_zst if i % 2 == 0 else clean_txt)
        for _ in range(rnd.randint(1, 4)):
            data[rnd.randrange(len(data))] = rnd.randrange(256)
        if rnd.random() < 0.3:
            data = data[: rnd.randrange(1, len(data))]
        p = path("damage", f"croft-dataset-{i}.jsonl" + (".zst" if i % 2 == 0 else ""))
        with open(p, "wb") as f:
            f.write(bytes(data))
        for args in (["stats"], ["profile", "--tgid", "100"], ["stats", "--jansson"]):
            r = croft(*args, "--json", p)
            assert r.returncode in (0, 3), (i, args, r.returncode, r.stderr[-500:])
            json.loads(r.stdout)


@test
def a_healthy_live_file_exits_0():
    """An empty live file (as after every rotation) and one whose last line
    is still being appended are healthy: exit 0, nothing skipped; the same
    torn line in a closed segment, or an empty .zst segment, is damage."""
    d = os.path.dirname(write_lines(path("live", "croft-dataset-20261020T140000Z.jsonl"), ROWS[:6]))
    open(path("live", "croft-dataset.jsonl"), "wb").close()
    got, inp = figures("stats", d, expect=0)
    assert got["rows"] == 6 and sum(inp["skipped"].values()) == 0, inp
    write_lines(path("live", "croft-dataset.jsonl"), ROWS[6:], ROWS[0][: len(ROWS[0]) // 2].encode())
    got, inp = figures("stats", d, expect=0)
    assert got["rows"] == 12 and sum(inp["skipped"].values()) == 0, inp
    assert inp["live_tail_bytes"] == len(ROWS[0]) // 2, inp
    assert "still being written" in croft("stats", d, expect=0).stdout
    torn = write_lines(path("torn", "croft-dataset-20261020T140000Z.jsonl"), ROWS[:6], b'{"unix_ms":1')
    assert figures("stats", torn, expect=3)[1]["skipped"]["truncated"] == 1
    empty_zst = path("torn", "croft-dataset-20261020T150000Z.jsonl.zst")
    open(empty_zst, "wb").close()
    assert figures("stats", empty_zst, expect=3)[1]["skipped"]["truncated"] == 1


@test
def a_live_file_appended_while_read_exits_0():
    """A writer appending rows in pieces that end mid-line while croft stats
    reads the file again and again: every read exits 0 and sees whole rows."""
    import threading
    live = path("appending", "croft-dataset.jsonl")
    open(live, "wb").close()
    data = ("".join(l + "\n" for l in ROWS) * 400).encode()
    done = threading.Event()

    def append():
        with open(live, "ab", buffering=0) as f:
            for i in range(0, len(data), 777):
                f.write(data[i:i + 777])
        done.set()
    t = threading.Thread(target=append)
    t.start()
    reads = 0
    while not done.is_set() or reads < 3:
        got, inp = figures("stats", live, expect=0)
        assert sum(inp["skipped"].values()) == 0, inp
        reads += 1
    t.join()
    got, inp = figures("stats", live, expect=0)
    assert got["rows"] == 12 * 400 and inp["live_tail_bytes"] == 0, (got["rows"], inp)


@test
def since_and_until_forms():
    """ISO 8601, unix seconds (10 digits), milliseconds (13) select the same
    rows; -2h and 2h both mean two hours before now; anything else is a
    usage error (exit 2) naming the value."""
    p = plain()
    at = T0 + 30000
    iso = "2026-10-20T14:00:30Z"
    want = figures("stats", "--since", iso, p)[0]["rows"]
    assert want == 5, want
    for form in (str(at // 1000), str(at)):
        assert figures("stats", "--since", form, p)[0]["rows"] == want, form
        assert figures("stats", "--until", form, p)[0]["rows"] == 12 - want, form
    # the rows are of 2026-10-20: all before 2 hours ago, none after it
    for form in ("-2h", "2h", "30m", "1d12h"):
        assert figures("stats", "--until", form, p)[0]["rows"] == 12, form
        assert figures("stats", "--since", form, p)[0]["rows"] == 0, form
    recent = write_lines(path("recent", "croft-dataset.jsonl"),
                         [row(0, 1, A, "no-gpu", 0.0, 1, 1).replace(str(T0), str(int(time.time() * 1000) - 3600000))])
    assert figures("stats", "--since", "-2h", recent)[0]["rows"] == 1
    assert figures("stats", "--since", "30m", recent)[0]["rows"] == 0
    for bad in ("179250495", "17925049504731", "yesterday", "-", "2h-", "2026-13-01", "12", "-12"):
        r = croft("stats", "--since", bad, p, expect=2)
        assert f"--since '{bad}'" in r.stderr, (bad, r.stderr)
    r = croft("stats", "--until=soon", p, expect=2)
    assert "--until 'soon'" in r.stderr, r.stderr


@test
def exit_status_and_errors():
    assert croft("stats", os.path.join(TMP, "no-such-dir")).returncode == 1
    assert croft("stats", "--bogus").returncode == 2
    assert croft("profile", plain()).returncode == 2       # no selector
    assert croft("stats", "--help").returncode == 0


@test
def svg_is_xml_with_three_series():
    out = path("svg", "tgid100.svg")
    croft("profile", "--tgid", "100", "--svg", out, plain(), expect=0)
    root = ET.parse(out).getroot()
    ns = "{http://www.w3.org/2000/svg}"
    assert root.tag == ns + "svg", root.tag
    lines = {e.get("id"): e for e in root.iter(ns + "polyline")}
    assert set(lines) == {"cpu", "rss", "gpu-ioctls"}, lines.keys()
    for name, e in lines.items():
        pts = [tuple(map(float, p.split(","))) for p in e.get("points").split()]
        assert len(pts) == 7, (name, pts)
        assert pts == sorted(pts), (name, "x must grow with time")
    # cpu: the highest point (2.5 cores) is the 2nd poll, ioctls: the 3rd (30)
    ys = [p[1] for p in (tuple(map(float, p.split(","))) for p in lines["cpu"].get("points").split())]
    assert ys.index(min(ys)) == 1, ys
    ys = [p[1] for p in (tuple(map(float, p.split(","))) for p in lines["gpu-ioctls"].get("points").split())]
    assert ys.index(min(ys)) == 2, ys
    texts = " ".join(t.text or "" for t in root.iter(ns + "text"))
    for label in ("CPU (cores)", "RSS (MiB)", "GPU ioctls (per poll)", "time (UTC)", "14:00:00"):
        assert label in texts, (label, texts)
    if shutil.which("xmllint"):
        subprocess.run(["xmllint", "--noout", out], check=True)


@test
def generated_rows_across_buffer_refills():
    """~8 MB of generated rows (several 2 MiB read buffers, lines cut at
    every buffer end), a line longer than a buffer, plain and zstd, one and
    three files, scanner and jansson: the same figures."""
    if not GEN:
        raise Skip("no generator path given")
    text = subprocess.run([GEN, "--processes", "150", "--polls", "100"], stdout=subprocess.PIPE,
                          check=True).stdout
    lines = text.decode().splitlines()
    assert len(text) > 6 << 20, len(text)
    one = write_lines(path("gen", "one", "croft-dataset.jsonl"), lines)
    third = len(lines) // 3
    with open(path("gen", "three", "a", "croft-dataset-1.jsonl.zst"), "wb") as f:
        f.write(zstd_bytes("".join(l + "\n" for l in lines[:third]).encode()))
    write_lines(path("gen", "three", "b", "croft-dataset-2.jsonl"), lines[third:2 * third])
    with open(path("gen", "three", "croft-dataset-3.jsonl.zst"), "wb") as f:
        f.write(zstd_bytes("".join(l + "\n" for l in lines[2 * third:]).encode()))
    ref, inp = figures("stats", one, expect=None)
    assert inp["rows_read"] == len(lines) - inp["bad_lines"], inp
    for paths in ([one], [os.path.join(TMP, "gen", "three")]):
        for extra in ([], ["--jansson"], ["--threads", "2"]):
            got, _ = figures("stats", *extra, *paths, expect=None)
            assert got == ref, (paths, extra)
    long = write_lines(path("gen", "long", "croft-dataset.jsonl"),
                       lines[:1000] + ['{"junk":"' + "x" * (3 << 20) + '"}'] + lines[1000:])
    got, inp = figures("stats", long, expect=3)
    assert got == ref and inp["skipped"]["line too long"] == 1, inp["skipped"]


@test
def segments_longer_than_their_window():
    """zstd's output is read where it is decoded, and its window starts over
    many times in a long frame: one frame of ~8 MB with windows of 1 KiB to
    4 MiB, without a content size or a checksum, incompressible lines (raw
    blocks) and a skippable frame: what the plain text gives, text_bytes too."""
    if not GEN:
        raise Skip("no generator path given")
    text = subprocess.run([GEN, "--processes", "150", "--polls", "100"], stdout=subprocess.PIPE,
                          check=True).stdout
    import random
    junk = random.Random(5).randbytes(300000).replace(b"\n", b" ")
    text = text + b"".join(junk[i:i + 3000] + b"\n" for i in range(0, len(junk), 3000)) + text[:200000]
    plain = path("window", "plain", "croft-dataset.jsonl")
    with open(plain, "wb") as f:
        f.write(text)
    ref, ref_in = figures("stats", plain, expect=3)
    skippable = bytes.fromhex("502a4d18") + (5).to_bytes(4, "little") + b"notes"
    shapes = (["--zstd=wlog=10"], ["--zstd=wlog=17"], ["-1", "--no-check"], ["-12"], ["--zstd=wlog=22"])
    for i, args in enumerate(shapes):
        p = path("window", str(i), "croft-dataset-1.jsonl.zst")
        z = subprocess.run(["sh", "-c", "cat | zstd -q -c " + " ".join(args)], input=text,
                           stdout=subprocess.PIPE, check=True).stdout
        with open(p, "wb") as f:
            f.write(skippable + z if i % 2 else z)
        got, inp = figures("stats", p, expect=3)
        assert got == ref and inp["text_bytes"] == ref_in["text_bytes"], (args, inp)
        assert inp["bad_lines"] == ref_in["bad_lines"] > 0, (args, inp)


@test
def rows_match_the_json_schema():
    try:
        import jsonschema
    except ImportError:
        raise Skip("python3-jsonschema is not installed (make deps)")
    if not GEN or not SCHEMA:
        raise Skip("no generator or schema path given")
    schema = json.load(open(SCHEMA))
    jsonschema.Draft202012Validator.check_schema(schema)
    v = jsonschema.Draft202012Validator(schema)
    gen = subprocess.run([GEN, "--processes", "200", "--polls", "30"], stdout=subprocess.PIPE,
                         check=True, text=True).stdout.splitlines()
    for line in ROWS + gen:
        errors = sorted(v.iter_errors(json.loads(line)), key=str)
        assert not errors, (line[:200], errors[0].message)
    # and it refuses what is not a row
    for bad in ({"unix_ms": 1, "tgid": 2, "process": {}, "workload": "busy"},
                {"unix_ms": 1, "tgid": 2, "process": {}, "workload": "no-gpu", "usage": {"cpu_cores": -1}},
                {"unix_ms": 1, "tgid": 2, "workload": "no-gpu"}):
        assert list(v.iter_errors(bad)), bad


if __name__ == "__main__":
    sys.exit(main())
