#!/usr/bin/env python3
# test-verdict.py CROFT: croft stats and croft profile on rows of this
# round, figures computed by hand: GPU-held time split by the rows' verdict
# (busy, idle, unknown; older rows, which have none, unknown), per user
# (process.uid, named from /etc/passwd), processes that exited (a last row;
# one born and gone between polls is a process of one row), hostile strings
# escaped on the table, and the --svg chart's phase band, SM panel and round
# ticks.  Prints TAP.  Test process, no privilege.
import json
import os
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from readers_lib import *  # noqa: E402,F403 (croft, figures, row, test, TAP)

H = 3600000.0
C = {"comm": "python", "exe": "/usr/bin/python3", "cgroup": "/system.slice/docker-cccc1111.scope",
     "container_id": "cccc1111", "cwd": "/c", "start_ms": T0 - 5000, "uid": 0}
U = {"comm": "train", "exe": "/opt/train", "cgroup": "/user.slice", "cwd": "/home/u",
     "start_ms": T0 - 1000, "uid": 4000000}


def held(dt, tgid, proc, activity, span, cpu=0.0, sm=None, **extra):
    """A gpu-held row of this round: its verdict as the sampler writes it."""
    r = json.loads(row(dt, tgid, proc, "gpu-held", cpu, 1000, 2))
    r = {"unix_ms": r["unix_ms"], "span_ms": span, "tgid": tgid, "host": "h1", "process": proc,
         "workload": "gpu-held", "ioctl_count": 0, "gpu_activity": activity,
         "gpu_activity_source": "nvml_process" if sm is not None else "none"}
    if sm is not None:
        r["gpu_sm_percent"] = sm
    r |= {"gpus": [0], "usage": json.loads(row(0, 0, {}, "no-gpu", cpu, 1000, 2))["usage"]} | extra
    return json.dumps(r, separators=(",", ":"))


# C: busy 4 s (NVML 90%), idle 6 s (NVML 0), then 2 s with no verdict (NVML
# gone), its ioctl_count 0 throughout: the old rule called all 12 s idle.
# U: a user the host does not name, idle 4 s.
ROWS = [
    held(2000, 10, C, "busy", 2000, 1.0, 90.0), held(4000, 10, C, "busy", 2000, 1.0, 90.0),
    held(7000, 10, C, "idle", 3000, 0.0, 0.0), held(10000, 10, C, "idle", 3000, 0.0, 0.0),
    held(12000, 10, C, "unknown", 2000, 0.5),
    held(4000, 20, U, "idle", 4000),
]


def acc(held_ms, busy, idle, unknown):
    return {"gpu_held_hours": round(held_ms / H, 6), "busy_gpu_held_hours": round(busy / H, 6),
            "idle_gpu_held_hours": round(idle / H, 6), "unknown_gpu_held_hours": round(unknown / H, 6)}


@test
def gpu_held_time_by_verdict():
    p = write_lines(path("verdict", "croft-dataset.jsonl"), ROWS)
    got, _ = figures("stats", p)
    # the most idle first
    subset(got["gpu_held_by_container"], [{"container_id": "cccc1111", **acc(12000, 4000, 6000, 2000)},
                                          {"container_id": None, **acc(4000, 0, 4000, 0)}])
    subset(got["gpu_held_by_gpu"], [{"gpu": 0, **acc(16000, 4000, 10000, 2000)}])
    subset(got["hosts"], [{"host": "h1", **acc(16000, 4000, 10000, 2000)}])
    out = croft("stats", p, expect=0).stdout
    cols = {l.split()[0]: l.split()[1:] for l in out.splitlines() if l.strip()}
    assert cols["cccc1111"] == ["0.003", "0.001", "0.002", "0.001", "50.0%"], cols["cccc1111"]


@test
def older_rows_have_no_verdict_so_are_unknown():
    """The same rows as a sampler before the verdict wrote them: no
    gpu_activity.  Held time is all unknown, none idle (the old rule,
    ioctl_count 0, is gone)."""
    old = [json.dumps({k: v for k, v in json.loads(r).items()
                       if k not in ("gpu_activity", "gpu_activity_source", "gpu_sm_percent")},
                      separators=(",", ":")) for r in ROWS]
    got, _ = figures("stats", write_lines(path("old", "croft-dataset.jsonl"), old))
    subset(got["gpu_held_by_gpu"], [{"gpu": 0, **acc(16000, 0, 0, 16000)}])
    prof, _ = figures("profile", "--tgid", "10", path("old", "croft-dataset.jsonl"))
    assert prof["gpu_phase_seconds"] == {"onset": 0.0, "busy": 0.0, "idle": 0.0, "unknown": 12.0}, prof


@test
def gpu_held_time_per_user():
    p = write_lines(path("verdict", "croft-dataset.jsonl"), ROWS)
    got, _ = figures("stats", p)
    # root is named on every host (from /etc/passwd); 4000000 by no one: its number
    subset(got["gpu_held_by_user"], [{"uid": 0, "user": "root", **acc(12000, 4000, 6000, 2000)},
                                     {"uid": 4000000, "user": None, **acc(4000, 0, 4000, 0)}])
    out = croft("stats", p, expect=0).stdout
    assert "GPU-held hours by user" in out and "root (0) " in out, out
    assert any(l.split()[:1] == ["4000000"] for l in out.splitlines()), out
    # rows without process.uid (older datasets): no such ranking, as before
    old = [json.dumps(dict(json.loads(r), process={k: v for k, v in json.loads(r)["process"].items()
                                                     if k != "uid"}), separators=(",", ":"))
           for r in ROWS]
    got, _ = figures("stats", write_lines(path("nouid", "croft-dataset.jsonl"), old))
    assert "gpu_held_by_user" not in got, got.keys()
    assert "by user" not in croft("stats", path("nouid", "croft-dataset.jsonl"), expect=0).stdout


def proc_row(dt, tgid, proc, span, cpu, exited=None):
    """A no-gpu row; exited: a last row's kind (probe, between_polls)."""
    r = json.loads(row(dt, tgid, proc, "no-gpu", cpu, 1000, 1))
    r = {"unix_ms": r["unix_ms"], "span_ms": span, "tgid": tgid, "host": "h1"} | \
        {k: v for k, v in r.items() if k not in ("unix_ms", "tgid")}
    if exited:
        r |= {"exit_ms": T0 + dt - 300, "exit_code": 0, "exited": exited}
    return json.dumps(r, separators=(",", ":"))


W = {"comm": "loader", "exe": "/usr/bin/python3", "cgroup": "/user.slice", "cwd": "/w",
     "framework": "pytorch", "start_ms": T0 - 4000, "uid": 1000}


@test
def exited_processes_count():
    """Tgid 30 lives two polls, then its last row (the probe's) covers the
    700 ms to its exit; tgids 31..33 were born and gone between two polls:
    a row each (between_polls), a process each, their span counted; tgid 31
    again later is another process (another start)."""
    rows = [proc_row(0, 30, W, 2000, 1.0), proc_row(2000, 30, W, 2000, 1.0),
            proc_row(4000, 30, W, 1700, 2.0, "probe")]
    for i, tgid in enumerate((31, 32, 33)):
        rows.append(proc_row(2000, tgid, dict(W, start_ms=T0 + 500 + i), 700, 0.5, "between_polls"))
    rows.append(proc_row(4000, 31, dict(W, start_ms=T0 + 2500), 400, 0.5, "between_polls"))
    p = write_lines(path("exits", "croft-dataset.jsonl"), rows)
    got, _ = figures("stats", p)
    ms = 2000 + 2000 + 1700 + 3 * 700 + 400
    assert got["processes"] == 5 and got["rows"] == 7, got
    subset(got["workloads"][2], {"workload": "no-gpu", "rows": 7, "processes": 5,
                                 "process_hours": round(ms / H, 6)})
    cpu_ms = 1.0 * 2000 + 1.0 * 2000 + 2.0 * 1700 + 0.5 * (3 * 700 + 400)
    subset(got["frameworks"], [{"framework": "pytorch", "processes": 5, "cpu_hours": round(cpu_ms / H, 6)}])
    prof, _ = figures("profile", "--tgid", "32", p)
    assert (prof["rows"], prof["processes"], prof["polls"]) == (1, 1, 1), prof
    assert prof["cpu_cores"]["max"] == 0.5, prof["cpu_cores"]
    prof, _ = figures("profile", "--tgid", "31", p)
    assert (prof["rows"], prof["processes"]) == (2, 2), prof
    prof, _ = figures("profile", "--framework", "pytorch", p)
    assert prof["exited"] == {"probe": 1, "between_polls": 4, "vanished": 0}, prof.get("exited")
    assert "exited           5 (probe 1, between polls 4, vanished 0)" in \
        croft("profile", "--framework", "pytorch", p, expect=0).stdout


@test
def label_sources_are_told():
    """croft profile --label says whose word the label is: croftctl (root),
    env (CROFT_LABEL: any process may claim it), or not said (older rows)."""
    rows = []
    for i, src in enumerate(("croftctl", "croftctl", "env", None)):
        r = json.loads(proc_row(2000 * i, 60 + i, W, 2000, 0.1))
        r["label"] = "exp-9"
        if src:
            r["label_source"] = src
        rows.append(json.dumps(r))
    p = write_lines(path("labels", "croft-dataset.jsonl"), rows)
    prof, _ = figures("profile", "--label", "exp-9", p)
    assert prof["labelled_rows"] == {"env": 1, "croftctl": 2, "not_said": 1}, prof.get("labelled_rows")
    out = croft("profile", "--label", "exp-9", p, expect=0).stdout
    assert "labelled rows    croftctl 2, env 1, not said 1" in out, out


@test
def hostile_strings_are_escaped_on_the_table():
    """A cwd, container id, host, framework and syscall name with terminal
    controls (an OSC title, a screen clear, CR LF, DEL, a C1 CSI) print as
    \\xNN: nothing from a row reaches the terminal raw."""
    evil = "\u001b]0;OWNED\u0007\u001b[2J\u001b[Hfake\r\nline2\u007f\u009b31m"
    proc = dict(C, cwd="/tmp/" + evil, container_id="c" + evil, framework="fw" + evil)
    r = json.loads(held(2000, 40, proc, "idle", 2000))
    r["host"] = "h" + evil
    r["syscalls"] = [{"name": "sys" + evil, "rate_per_sec": 1.0}]
    p = write_lines(path("evil", "croft-dataset.jsonl"), [json.dumps(r)])
    # the syscall's name is cut at its column's width; the others are whole
    for cmd, whole in ((["stats"], True), (["profile", "--tgid", "40"], False),
                       (["profile", "--container", "c" + evil], True)):
        out = croft(*cmd, p, expect=0).stdout
        bad = sorted({c for c in out if (ord(c) < 0x20 and c != "\n") or 0x7f <= ord(c) < 0xa0})
        assert not bad, (cmd, bad, out)
        assert "\\x1b]0;OWNED\\x07\\x1b[" in out, (cmd, out)
        assert not whole or "\\x0d\\x0aline2\\x7f\\xc2\\x9b31m" in out, (cmd, out)
    # a file named so, with a line that is not a row: its skip on stderr
    d = os.path.dirname(path("evil-name", "x"))
    with open(os.path.join(d, "croft-dataset-\x1b]0;OWNED\x07.jsonl"), "w") as f:
        f.write("not a row\n")
    err = croft("stats", d).stderr
    assert "\x1b" not in err and "\x07" not in err and "\\x1b]0;OWNED\\x07" in err, err
    # --json is JSON: jansson escapes them there
    got, _ = figures("stats", p)
    assert got["gpu_held_by_cwd"][0]["cwd"] == "/tmp/" + evil, got["gpu_held_by_cwd"]


@test
def svg_band_sm_panel_and_round_ticks():
    """C's phases as a band (busy, idle, unknown), NVML's SM % as a fourth
    panel, ticks at round times; without gpu_sm_percent, three panels."""
    rows = [held(dt * 1000, 50, C, a, 15000, 0.5, sm) for dt, a, sm in
            ((15, "busy", 80.0), (30, "busy", 70.0), (45, "idle", 0.0), (60, "idle", 0.0),
             (75, "unknown", None), (300, "unknown", None), (450, "busy", 50.0))]
    p = write_lines(path("svg", "croft-dataset.jsonl"), rows)
    out = path("svg", "c.svg")
    croft("profile", "--tgid", "50", "--svg", out, p, expect=0)
    root = ET.parse(out).getroot()
    ns = "{http://www.w3.org/2000/svg}"
    lines = {e.get("id") for e in root.iter(ns + "polyline")}
    assert lines == {"cpu", "rss", "gpu-ioctls", "gpu-sm"}, lines
    band = [e.get("class").split()[1] for e in root.iter(ns + "rect")
            if (e.get("class") or "").startswith("phase ")]
    assert band == ["phase-busy", "phase-idle", "phase-unknown", "phase-busy"], band
    # 14:00:00 .. 14:07:30: a tick every minute, on the minute
    ticks = [t.text for t in root.iter(ns + "text") if t.get("class") == "tick" and ":" in (t.text or "")
             and " " not in t.text]
    assert ticks[:8] == ["14:00", "14:01", "14:02", "14:03", "14:04", "14:05", "14:06", "14:07"], ticks
    plain_rows = [json.dumps({k: v for k, v in json.loads(r).items() if k != "gpu_sm_percent"}) for r in rows]
    croft("profile", "--tgid", "50", "--svg", out,
          write_lines(path("svg2", "croft-dataset.jsonl"), plain_rows), expect=0)
    lines = {e.get("id") for e in ET.parse(out).getroot().iter(ns + "polyline")}
    assert lines == {"cpu", "rss", "gpu-ioctls"}, lines
    # the table and --json say the same stretches, and NVML's SM % where rows had it
    got, _ = figures("profile", "--tgid", "50", p)
    assert [ph["phase"] for ph in got["gpu_phases"]] == ["busy", "idle", "unknown", "busy"], got["gpu_phases"]
    assert got["gpu_sm_percent"]["max"] == 80.0, got["gpu_sm_percent"]


if __name__ == "__main__":
    sys.exit(main())
