#!/usr/bin/env python3
# test-fleet.py CROFT GEN: croft stats and croft profile over a fleet's
# datasets read together.  Three generated hosts, two of them identical
# nodes (one seed: the same processes and tgids, their own container ids;
# every 30th poll a vanished row without workload), each cut into time segments as the writer rotates them.  Read as one
# folder in four layouts (a folder per host, all side by side, every row of
# the three merged in time order into one file, that file cut into pieces
# in nested folders), stats gives exactly the sum of the hosts read one by
# one, figure by figure; its "hosts" entries are each host's own figures;
# --host gives one host's figures, for stats and profile.  TAP on stdout.
# Test process, no privilege.
import json
import os
import shutil
import subprocess
import sys
import tempfile

CROFT, GEN = sys.argv[1], sys.argv[2]
TMP = tempfile.mkdtemp(prefix="croft-fleet-test-")
HOSTS = (("node-a", 1, 60), ("node-b", 1, 60), ("node-c", 2, 45))  # name, seed, processes
POLLS = 450  # 15 minutes of 2 s polls
SEGMENTS = 3  # files per host, as rotation cuts them
HOURS_SLACK = 5e-7  # --json rounds hours to 6 decimals: half a unit per summand
TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


def path(*parts):
    p = os.path.join(TMP, *parts)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    return p


def write(p, lines, compress):
    data = "".join(l + "\n" for l in lines).encode()
    if compress:
        subprocess.run(["zstd", "-q", "-3", "-o", p + ".zst"], input=data, check=True)
    else:
        with open(p, "wb") as f:
            f.write(data)


def stats(*args):
    out = subprocess.run([CROFT, "stats", "--json", "--config", CONF] + list(args),
                         capture_output=True, text=True)
    assert out.returncode == 0, (args, out.returncode, out.stderr[-500:])
    return json.loads(out.stdout)


def profile(*args):
    out = subprocess.run([CROFT, "profile", "--json", "--config", CONF] + list(args),
                         capture_output=True, text=True)
    assert out.returncode == 0, (args, out.returncode, out.stderr[-500:])
    return json.loads(out.stdout)


def identity(e):
    """What names an entry of a ranking: its strings (and nulls), lists and its GPU."""
    return tuple(sorted((k, json.dumps(v)) for k, v in e.items()
                        if k == "gpu" or not isinstance(v, (int, float)) or isinstance(v, bool)))


def add_entries(total, entries):
    for e in entries:
        key = identity(e)
        t = total.setdefault(key, {k: 0 for k in e if (k, json.dumps(e[k])) not in key})
        for k in t:
            t[k] += e[k]


def summed(results):
    """The hosts' figures added up the way one reading of all of them must give them."""
    total = {"rows": 0, "processes": 0, "containers": 0, "first": None, "last": None}
    tables = {}
    for r in results:
        for k in ("rows", "processes", "containers"):
            total[k] += r[k]
        span = r["time_span"]
        total["first"] = min(filter(None, (total["first"], span["first_ms"])))
        total["last"] = max(filter(None, (total["last"], span["last_ms"])))
        for k, v in r.items():
            if isinstance(v, list) and k != "syscalls":
                add_entries(tables.setdefault(k, {}), v)
    return total, tables


def close(a, b, slack):
    return abs(a - b) <= slack + 1e-9


def compare(whole, parts):
    """Every figure of whole against the sum of parts; [] when they agree."""
    total, tables = summed(parts)
    n = len(parts)
    bad = [k for k in ("rows", "processes", "containers") if whole[k] != total[k]]
    span = whole["time_span"]
    if (span["first_ms"], span["last_ms"]) != (total["first"], total["last"]):
        bad.append("time_span")
    for k, v in whole.items():
        if not isinstance(v, list) or k == "syscalls":
            continue
        mine = {}
        add_entries(mine, v)
        if set(mine) != set(tables.get(k, {})):
            bad.append("%s: entries %d vs %d summed" % (k, len(mine), len(tables.get(k, {}))))
            continue
        for key, figs in mine.items():
            for f, x in figs.items():
                y = tables[k][key][f]
                if isinstance(x, int) and isinstance(y, int) and f != "calls":
                    ok = x == y
                else:
                    ok = close(x, y, n * HOURS_SLACK)
                if not ok:
                    bad.append("%s %s %s: %s vs %s summed" % (k, dict(key), f, x, y))
    # the top syscalls: each name every host lists, to the call (each rounds its own)
    calls = [{s["name"]: s["calls"] for s in r["syscalls"]} for r in parts]
    for s in whole["syscalls"]:
        if all(s["name"] in c for c in calls):
            y = sum(c[s["name"]] for c in calls)
            if abs(s["calls"] - y) > n:
                bad.append("syscall %s: %d calls vs %d summed" % (s["name"], s["calls"], y))
    return bad


def without(r, *keys):
    return {k: v for k, v in r.items() if k not in keys}


@test
def hosts_one_by_one_add_up_in_every_layout():
    problems = []
    for layout in LAYOUTS:
        for extra in ([], ["--threads", "1"], ["--threads", "2"]):
            whole = stats(*extra, os.path.join(TMP, layout))
            problems += ["%s %s: %s" % (layout, extra, b) for b in compare(whole, REF)]
    assert not problems, "; ".join(problems[:8])


@test
def the_jansson_path_adds_up_too():
    bad = compare(stats("--jansson", os.path.join(TMP, "merged")), REF)
    assert not bad, bad[:8]


@test
def identical_nodes_are_two_hosts():
    whole = stats(os.path.join(TMP, "merged"))
    a, b = REF[0], REF[1]
    assert a["processes"] == b["processes"] and a["rows"] == b["rows"], (a["rows"], b["rows"])
    assert whole["processes"] == sum(r["processes"] for r in REF), whole["processes"]
    print("# processes: %s one by one, %d read together" %
          ([r["processes"] for r in REF], whole["processes"]))


@test
def hosts_key_is_each_hosts_own_figures():
    whole = stats(os.path.join(TMP, "merged"))
    own = [r["hosts"][0] for r in REF]
    assert whole["hosts"] == own, (whole["hosts"], own)
    for r in REF:
        h = r["hosts"][0]
        assert h["rows"] == r["rows"] and h["processes"] == r["processes"], h
        assert close(h["process_hours"], sum(w["process_hours"] for w in r["workloads"]),
                     3 * HOURS_SLACK), h


@test
def host_filter_gives_one_hosts_figures():
    for (name, _, _), ref in zip(HOSTS, REF):
        got = stats("--host", name, os.path.join(TMP, "pieces"))
        assert without(got, "input") == without(ref, "input"), name
    none = stats("--host", "no-such-node", os.path.join(TMP, "merged"))
    assert none["rows"] == 0 and "hosts" not in none, none["rows"]


@test
def framework_filter_adds_up():
    # a process's last framework, on each host its own: the same tgid on the
    # identical nodes is two processes here too
    fw = max((f for f in REF[0]["frameworks"] if f["framework"]), key=lambda f: f["processes"])
    name = fw["framework"]
    parts = [stats("--framework", name, os.path.join(TMP, "host", h)) for h, _, _ in HOSTS]
    bad = compare(stats("--framework", name, os.path.join(TMP, "merged")), parts)
    assert not bad and parts[0]["processes"] == fw["processes"], (name, bad[:8])


@test
def profile_host_filter_gives_one_hosts_process():
    # a tgid on both identical nodes, and one the generator reused for another process
    tgids = sorted(REUSED) [:1] + [1000]
    for tgid in tgids:
        for name, _, _ in HOSTS[:2]:
            got = profile("--host", name, "--tgid", str(tgid), os.path.join(TMP, "merged"))
            ref = profile("--tgid", str(tgid), os.path.join(TMP, "host", name))
            assert without(got, "input") == without(ref, "input"), (name, tgid)
    assert REUSED, "the generator reused no tgid"


def pods_with_containers(folder, *extra):
    return [p for p in stats(*extra, folder).get("gpu_by_pod", []) if len(p["containers"]) > 1]


@test
def a_pods_containers_are_sorted_whatever_the_read_order():
    # met in file order with one thread, in whichever order the workers
    # happen to read the files with more: listed sorted, so runs agree.
    # The same rows again with a pod's two container ids swapped: in one of
    # the two the first met is not the first sorted.
    lines = subprocess.run([GEN, "--processes", "400", "--polls", "40", "--seed", "3"],
                           stdout=subprocess.PIPE, check=True, text=True).stdout.splitlines()
    for i in range(4):
        write(path("pods", "a", "croft-dataset-%d.jsonl" % i), lines[i::4], False)
    several = pods_with_containers(os.path.join(TMP, "pods", "a"))
    assert several, "no pod with two containers: nothing to check"
    x, y = several[0]["containers"][:2]
    swapped = [l.replace(x, "\0").replace(y, x).replace("\0", y) for l in lines]
    for i in range(4):
        write(path("pods", "b", "croft-dataset-%d.jsonl" % i), swapped[i::4], False)
    for folder in ("a", "b"):
        for extra in ([], ["--threads", "1"]):
            for p in pods_with_containers(os.path.join(TMP, "pods", folder), *extra):
                assert p["containers"] == sorted(p["containers"]), (folder, extra, p)


def build():
    global CONF, REF, LAYOUTS, REUSED
    CONF = path("empty.conf")
    open(CONF, "w").close()
    per_host = {}
    REUSED = set()
    for name, seed, procs in HOSTS:
        lines = subprocess.run([GEN, "--processes", str(procs), "--polls", str(POLLS),
                                "--seed", str(seed), "--host", name, "--vanished-unread", "30"],
                               stdout=subprocess.PIPE, check=True, text=True).stdout.splitlines()
        per_host[name] = lines
        starts = {}
        for l in lines:
            r = json.loads(l)
            starts.setdefault(r["tgid"], set()).add(r["process"]["start_ms"])
        REUSED |= {t for t, s in starts.items() if len(s) > 1}
        cut = len(lines) // SEGMENTS
        for i in range(SEGMENTS):
            part = lines[i * cut:(i + 1) * cut if i < SEGMENTS - 1 else None]
            stamp = "20261020T14%02d00Z" % (i * 5)
            write(path("host", name, "croft-dataset-%s.jsonl" % stamp), part, i < SEGMENTS - 1)
            write(path("flat", "%s-croft-dataset-%s.jsonl" % (name, stamp)), part, True)
    # every row of the three in one file, in time order, hosts interleaved
    merged = sorted((l for ls in per_host.values() for l in ls),
                    key=lambda l: json.loads(l)["unix_ms"])
    write(path("merged", "croft-dataset.jsonl"), merged, True)
    cut = len(merged) // 4
    for i in range(4):
        write(path("pieces", *["d%d" % j for j in range(i + 1)], "croft-dataset-%d.jsonl" % i),
              merged[i * cut:(i + 1) * cut if i < 3 else None], i % 2 == 0)
    LAYOUTS = ("host", "flat", "merged", "pieces")
    REF = [stats(os.path.join(TMP, "host", name)) for name, _, _ in HOSTS]


def main():
    build()
    print("1..%d" % len(TESTS))
    failed = 0
    for i, fn in enumerate(TESTS, 1):
        try:
            fn()
            print("ok %d - %s" % (i, fn.__name__))
        except Exception as e:  # a failed check or a crash: both fail the test
            failed += 1
            print("not ok %d - %s" % (i, fn.__name__))
            for line in (str(e) or repr(e)).splitlines()[:20]:
                print("# " + line)
    shutil.rmtree(TMP, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
