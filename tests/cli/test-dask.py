#!/usr/bin/env python3
# test-dask.py CROFT GEN DASK_SCRIPT: share/croft/croft-dask.py on a real Dask
# cluster (Debian's python3-distributed: a scheduler and two workers on
# 127.0.0.1, started and stopped by pid here) gives croft stats' figures on
# a generated three-host fleet (two identical nodes; segments of one zstd
# frame, and one of two frames; every 40th poll a vanished row without
# workload, which croft stats counts as no-gpu), checked by fleet_check.py; both workers
# summed segments.  TAP on stdout; skips (a failure under CI=true) where
# Debian's dask, distributed or zstandard are missing.  Test process.
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

CROFT, GEN, SCRIPT = sys.argv[1:4]
HERE = os.path.dirname(os.path.abspath(__file__))
PY = "/usr/bin/python3"  # Debian's, with its python3-* modules
TMP = tempfile.mkdtemp(prefix="croft-dask-test-")
HOSTS = (("node-a", 1, 80), ("node-b", 1, 80), ("node-c", 4, 50))
started = []


def skip(reason):
    if os.environ.get("CI") == "true":
        print("Bail out! skip not allowed under CI=true: %s" % reason)
        sys.exit(1)
    print("1..0 # SKIP %s" % reason)
    sys.exit(0)


def start(args, log):
    p = subprocess.Popen(args, stdout=open(os.path.join(TMP, log), "wb"),
                         stderr=subprocess.STDOUT, cwd=TMP)
    started.append(p)
    return p


def wait_for(cond, what, timeout=90):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline or any(p.poll() is not None for p in started):
            raise RuntimeError("%s: not within %d s (logs in %s)" % (what, timeout, TMP))
        time.sleep(0.1)


def stop_all():
    for p in reversed(started):  # workers, then the scheduler
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in reversed(started):
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def build_fleet():
    for name, seed, procs in HOSTS:
        d = os.path.join(TMP, "fleet", name)
        os.makedirs(d)
        text = subprocess.run([GEN, "--processes", str(procs), "--polls", "600", "--seed", str(seed),
                               "--host", name, "--vanished-unread", "40"],
                              stdout=subprocess.PIPE, check=True).stdout
        lines = text.splitlines(keepends=True)
        if all(b'"workload"' in line for line in lines):
            raise RuntimeError("%s: no row without workload" % name)
        half = len(lines) // 2
        for i, part in enumerate((lines[:half], lines[half:])):
            out = os.path.join(d, "croft-dataset-20261020T14%02d00Z.jsonl.zst" % (i * 10))
            if name == "node-c" and i == 1:  # two frames in one file, as cat of two makes
                frames = [subprocess.run(["zstd", "-q", "-c"], input=b"".join(half_), check=True,
                                         stdout=subprocess.PIPE).stdout
                          for half_ in (part[:len(part) // 2], part[len(part) // 2:])]
                open(out, "wb").write(b"".join(frames))
            else:
                subprocess.run(["zstd", "-q", "-o", out], input=b"".join(part), check=True)


def main():
    probe = subprocess.run([PY, "-c", "import dask.bag, distributed, zstandard"],
                           capture_output=True, text=True)
    if probe.returncode:
        skip("Debian's python3-dask, python3-distributed or python3-zstandard is missing "
             "(make deps): %s" % probe.stderr.strip().splitlines()[-1:])
    build_fleet()
    conf = os.path.join(TMP, "empty.conf")
    open(conf, "w").close()
    croft = os.path.join(TMP, "croft.json")
    with open(croft, "w") as f:
        subprocess.run([CROFT, "stats", "--json", "--config", conf, os.path.join(TMP, "fleet")],
                       stdout=f, check=True)
    sched_file = os.path.join(TMP, "scheduler.json")
    common = ["--no-dashboard", "--host", "127.0.0.1"]
    start([PY, "-m", "distributed.cli.dask_scheduler", "--port", "0",
           "--scheduler-file", sched_file] + common, "scheduler.log")
    wait_for(lambda: os.path.exists(sched_file) and os.path.getsize(sched_file) > 0,
             "the scheduler's address file")
    for i in range(2):
        start([PY, "-m", "distributed.cli.dask_worker", "--scheduler-file", sched_file,
               "--nthreads", "1", "--no-nanny", "--name", "w%d" % i] + common, "worker%d.log" % i)
    out = subprocess.run([PY, SCRIPT, "--scheduler-file", sched_file, "--wait-workers", "2",
                          os.path.join(TMP, "fleet")], capture_output=True, text=True, timeout=300)
    print("# " + out.stderr.strip().replace("\n", "\n# ")[-1500:])
    if out.returncode:
        raise RuntimeError("croft-dask.py exit %d" % out.returncode)
    figures = os.path.join(TMP, "dask.json")
    open(figures, "w").write(out.stdout)
    print("1..23")
    sys.stdout.flush()
    status = subprocess.run([sys.executable, os.path.join(HERE, "fleet_check.py"), croft, figures,
                             "1"]).returncode
    workers = "on 2 workers" in out.stderr
    print("%s 23 - both workers summed segments" % ("ok" if workers else "not ok"))
    return 1 if status or not workers else 0


if __name__ == "__main__":
    try:
        rc = main()
    except Exception as e:  # a broken run is a failure, with the reason
        print("Bail out! %s" % e)
        rc = 1
    finally:
        stop_all()
    if rc == 0:
        shutil.rmtree(TMP, ignore_errors=True)
    sys.exit(rc)
