#!/usr/bin/env python3
# test-kube-join.py CROFT GEN_ROWS: docs/kubernetes.md's DuckDB query that joins rows
# to a `kubectl get pods -A -o json` dump by pod UID ("On a Kubernetes GPU
# node"), run on a generated node's dataset (.jsonl.zst) and a dump of its
# pods written as kubectl writes one (plus a pod of another node, with no
# rows), checked pod by pod against croft stats' gpu_by_pod.  DuckDB from
# npm (tests/cli/node_modules, make deps); without node or DuckDB it skips,
# saying why, and under CI=true that fails.  Any user.  Prints TAP.
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

CROFT, GEN = sys.argv[1:3]
HERE = os.path.dirname(os.path.abspath(__file__))
KUBERNETES_MD = os.path.join(HERE, "..", "..", "docs", "kubernetes.md")
MARKER = "<!-- tested: tests/cli/test-kube-join.py runs the sql block below -->"
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'probe'))
from probetest import Tap, skip  # noqa: E402 (TAP lines, skips)

TAP = Tap()
ok = TAP.ok


def pod_item(uid, qos, container_ids, i, node):
    """One item of `kubectl get pods -A -o json`, with the fields a real one has."""
    names = ["train-%d" % i, "sidecar"][:len(container_ids)]
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "job-%d-7d9f8" % i, "namespace": ["ml", "research"][i % 2], "uid": uid,
                     "creationTimestamp": "2026-10-20T13:02:11Z", "resourceVersion": str(48213 + i),
                     "labels": {"app": "job-%d" % i}, "generateName": "job-%d-" % i,
                     "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "job-%d" % i,
                                          "uid": "5f0c2a4e-1b6d-4e8f-9a3c-%012d" % i, "controller": True,
                                          "blockOwnerDeletion": True}]},
        "spec": {"nodeName": node, "restartPolicy": "Never", "schedulerName": "default-scheduler",
                 "containers": [{"name": n, "image": "nvcr.io/nvidia/pytorch:24.08-py3",
                                 "resources": {"limits": {"nvidia.com/gpu": "1"}}} for n in names]},
        "status": {"phase": "Running", "qosClass": {"guaranteed": "Guaranteed", "burstable": "Burstable",
                                                    "besteffort": "BestEffort"}.get(qos, "Burstable"),
                   "hostIP": "10.0.3.17", "podIP": "10.244.1.%d" % (10 + i),
                   "startTime": "2026-10-20T13:02:11Z",
                   "containerStatuses": [{"name": n, "containerID": "containerd://" + c, "ready": True,
                                          "restartCount": 0, "started": True,
                                          "state": {"running": {"startedAt": "2026-10-20T13:02:14Z"}}}
                                         for n, c in zip(names, container_ids)]},
    }


def main():
    node_bin = shutil.which("node")
    if not node_bin:
        skip("node is not installed (make deps installs nodejs and npm)")
    if not os.path.isdir(os.path.join(HERE, "node_modules", "@duckdb", "node-api")):
        skip("DuckDB is not installed: run make deps (npm ci --prefix tests/cli)")
    tmp = tempfile.mkdtemp(prefix="croft-kube-join.")
    try:
        data = os.path.join(tmp, "node-a")
        os.makedirs(data)
        rows_path = os.path.join(tmp, "rows.jsonl")
        with open(rows_path, "wb") as f:
            subprocess.run([GEN, "--processes", "120", "--polls", "600", "--seed", "5", "--host", "node-a"],
                           stdout=f, check=True)
        pods = {}
        with open(rows_path) as f:
            for line in f:
                p = json.loads(line)["process"]
                if "pod_uid" in p:
                    pods.setdefault(p["pod_uid"], (p.get("pod_qos"), set()))[1].add(p.get("container_id"))
        subprocess.run(["zstd", "-q", "--rm", rows_path, "-o",
                        os.path.join(data, "croft-dataset-20261020T140000Z.jsonl.zst")], check=True)
        items = [pod_item(uid, qos, sorted(c for c in cids if c), i, "node-a")
                 for i, (uid, (qos, cids)) in enumerate(sorted(pods.items()))]
        items.append(pod_item("e0d1c2b3-a495-4867-8a9b-0c1d2e3f4a5b", "burstable", ["ab" * 32], 99, "node-b"))
        dump = os.path.join(tmp, "pods.json")
        with open(dump, "w") as f:
            json.dump({"apiVersion": "v1", "items": items, "kind": "List",
                       "metadata": {"resourceVersion": ""}}, f, indent=4)
        text = open(KUBERNETES_MD).read()
        m = re.search(re.escape(MARKER) + r"\s*```sql\n(.*?)```", text, re.S)
        ok(m is not None, "docs/kubernetes.md's query is found")
        if not m:
            return
        sql = m.group(1).replace("/srv/croft/*/*.jsonl.zst", os.path.join(tmp, "*", "*.jsonl.zst")) \
                        .replace("'pods.json'", "'%s'" % dump)
        duck = subprocess.run([node_bin, os.path.join(HERE, "duckdb-check.mjs"), "--sql"], input=sql,
                              stdout=subprocess.PIPE, text=True)
        got = json.loads(duck.stdout) if duck.returncode == 0 else []
        conf = os.path.join(tmp, "empty.conf")
        open(conf, "w").close()
        stats = json.loads(subprocess.run([CROFT, "stats", "--json", "--config", conf, data],
                                          stdout=subprocess.PIPE, text=True).stdout)
        want = {e["pod_uid"]: e for e in stats.get("gpu_by_pod", []) if e["gpu_held_hours"] > 0}
        ok(len(want) >= 3, "croft stats: several pods hold GPUs", "%d" % len(want))
        by_uid = {r["pod_uid"]: r for r in got}
        ok(set(by_uid) == set(want), "the join names the pods croft stats ranks",
           "duckdb %s, croft %s" % (sorted(by_uid), sorted(want)))
        bad = {u: (r["gpu_held_hours"], r["idle_gpu_held_hours"], want[u]["gpu_held_hours"],
                   want[u]["idle_gpu_held_hours"]) for u, r in by_uid.items()
               if u in want and (abs(r["gpu_held_hours"] - want[u]["gpu_held_hours"]) > 1e-6 or
                                 abs(r["idle_gpu_held_hours"] - want[u]["idle_gpu_held_hours"]) > 1e-6)}
        ok(not bad and by_uid, "GPU-held and idle hours per pod: DuckDB = croft stats", json.dumps(bad))
        names = {it["metadata"]["uid"]: (it["metadata"]["namespace"], it["metadata"]["name"]) for it in items}
        ok(all((r["namespace"], r["pod"]) == names[r["pod_uid"]] and r["node"] == "node-a" for r in got),
           "each pod's namespace, name and node come from the dump", json.dumps(got[:2]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        print("1..%d" % TAP.n)
    sys.exit(1 if TAP.failed else 0)


if __name__ == "__main__":
    main()
