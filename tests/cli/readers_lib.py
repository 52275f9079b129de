# readers_lib.py: what the readers' tests share: the croft command run
# with an empty config, a scratch folder, rows written by hand, their
# --json figures compared key by key, and the TAP runner.  Test process,
# no privilege.
import json
import os
import shutil
import subprocess
import sys
import tempfile

CROFT = sys.argv[1]
GEN = sys.argv[2] if len(sys.argv) > 2 else None
SCHEMA = sys.argv[3] if len(sys.argv) > 3 else None
T0 = 1792504800000          # 2026-10-20T14:00:00Z
TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


def row(dt, tgid, proc, workload, cpu, rss, threads, ioctl=None, net=None, wr=0.0, sys_=None, label=None):
    r = {"unix_ms": T0 + dt, "tgid": tgid, "process": proc, "workload": workload}
    if ioctl is not None:
        r["ioctl_count"] = ioctl
        # the verdict, as the kernel's evidence would say it here (rows
        # without an ioctl count have none: unknown)
        r["gpu_activity"] = "busy" if ioctl else "idle"
        r["gpu_activity_source"] = "kernel"
    rx, tx = net or (0.0, 0.0)
    r["usage"] = {"cpu_cores": cpu, "rss_bytes": rss, "threads": threads, "ctx_voluntary_s": 1.5,
                  "ctx_involuntary_s": 0.0, "read_bytes_s": 0.0, "write_bytes_s": wr,
                  "network_rx_bytes_s": rx, "network_tx_bytes_s": tx, "runqueue_s": 0.0}
    r["cgroup_usage"] = {"cpu_cores": 0.5, "memory_bytes": 1 << 20, "oom_kills": 0}
    r["syscalls"] = [{"name": n, "rate_per_sec": v} for n, v in (sys_ or [])]
    if label:
        r["label"] = label
    return json.dumps(r, separators=(",", ":"), ensure_ascii=False)


TMP = tempfile.mkdtemp(prefix="croft-test-%s-" % os.path.basename(sys.argv[0]).split(".")[0])
# the defaults: an empty file (a named file that is missing is refused)
NO_CONF = os.path.join(TMP, "empty.conf")
open(NO_CONF, "w").close()


def path(*parts):
    p = os.path.join(TMP, *parts)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    return p


def write_lines(p, lines, extra=b""):
    with open(p, "wb") as f:
        f.write("".join(l + "\n" for l in lines).encode() + extra)
    return p


def zstd_bytes(data):
    return subprocess.run(["zstd", "-q", "-c", "-3"], input=data, stdout=subprocess.PIPE, check=True).stdout


def frame(lines):
    return zstd_bytes("".join(l + "\n" for l in lines).encode())


def croft(*args, expect=None):
    p = subprocess.run([CROFT, *args, "--config", NO_CONF],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if expect is not None and p.returncode != expect:
        raise AssertionError(f"croft {' '.join(args)}: exit {p.returncode}, wanted {expect}\n{p.stderr}")
    return p


def figures(*args, expect=0):
    p = croft(*args, "--json", expect=expect)
    if expect is None and p.returncode not in (0, 3):
        raise AssertionError(f"croft {' '.join(args)}: exit {p.returncode}\n{p.stderr}")
    out = json.loads(p.stdout)
    return out, out.pop("input")


def subset(got, want):
    """Every key of want has the same value in got."""
    if isinstance(want, dict):
        for k, v in want.items():
            if k not in got:
                raise AssertionError(f"missing key {k}")
            try:
                subset(got[k], v)
            except AssertionError as e:
                raise AssertionError(f"{k}: {e}")
    elif isinstance(want, list):
        if len(got) != len(want):
            raise AssertionError(f"{len(got)} entries, wanted {len(want)}: {got}")
        for i, (g, w) in enumerate(zip(got, want)):
            subset(g, w)
    elif got != want:
        raise AssertionError(f"{got!r}, wanted {want!r}")


class Skip(Exception):
    pass


def main():
    print(f"1..{len(TESTS)}")
    failed = 0
    for i, fn in enumerate(TESTS, 1):
        try:
            fn()
            print(f"ok {i} - {fn.__name__}")
        except Skip as e:
            if os.environ.get("CI") == "true":
                failed += 1
                print(f"not ok {i} - {fn.__name__} # skip not allowed under CI=true: {e}")
            else:
                print(f"ok {i} - {fn.__name__} # SKIP {e}")
        except Exception as e:     # a failed check or a crash: both fail the test
            failed += 1
            print(f"not ok {i} - {fn.__name__}")
            for line in str(e).splitlines() or [repr(e)]:
                print(f"# {line}")
    shutil.rmtree(TMP, ignore_errors=True)
    return 1 if failed else 0
