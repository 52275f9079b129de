#!/usr/bin/env python3
# test-kube-node.py CROFT: a Kubernetes GPU node as the kubelet and NVIDIA's
# driver leave it, recorded by `croft run` and read by `croft stats`.  Real
# cgroups in every layout the kubelet makes (systemd driver: burstable,
# besteffort and guaranteed pods under containerd, CRI-O and cri-dockerd;
# cgroupfs driver: the three classes), real processes placed in them before
# exec as a runtime places them, the kubelet's device-plugin checkpoint
# (DeviceIDs by NUMA node) and the driver's information and mig-minors files
# of a two-GPU node.  No NVIDIA GPU here: the device nodes are stand-ins
# with NVIDIA's numbers (major 195, nvidia-caps' major from a /proc/devices
# bound over the real one in a mount namespace of croft's own), held open
# with O_PATH as the GPU tests do.  Pod A is allocated GPU 0 and holds it
# idle, B is allocated GPU 1 and never opens it, C holds GPU 1 unallocated,
# D is on a MIG instance of GPU 0; croft stats --json is checked figure by
# figure against the time the test watched them.  Root (cgroups, mknod,
# mount namespaces).  Prints TAP.
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid

CROFT = sys.argv[1]
POLL_MS = 500
WATCH_S = 16
CI = os.environ.get("CI") == "true"
GPU_UUIDS = ["GPU-4a1e2c9b-6f0d-7e3a-b5c8-91d2e3f4a5b6", "GPU-b7c8d9e0-f1a2-43b4-85c6-d7e8f9a0b1c2"]
HOLDER = r"""
import os, sys
fds = [os.open(p, os.O_PATH) for p in sys.argv[1:]]
print("ready", flush=True)
sys.stdin.read()
"""
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'probe'))
from probetest import Tap, skip, wait_for  # noqa: E402 (TAP lines, skips, waiting)
from cgroupfs import cgroup_mounts  # noqa: E402 (tests/lib, on the path probetest gives)

TAP = Tap()
ok = TAP.ok


class Pod:
    """One container of a pod: its cgroup path in the kubelet's layout."""

    def __init__(self, name, driver, qos, runtime, opens=(), procs=1):
        self.name, self.driver, self.qos, self.opens, self.count = name, driver, qos, list(opens), procs
        self.uid = str(uuid.uuid4()) if qos else None
        self.container_id = os.urandom(32).hex()
        self.path = self.layout(driver, qos, runtime)
        self.procs = []

    def layout(self, driver, qos, runtime):
        cid = self.container_id
        if driver == "systemd":
            u = self.uid.replace("-", "_")
            scope = {"containerd": "cri-containerd-%s.scope", "crio": "crio-%s.scope",
                     "docker": "docker-%s.scope"}[runtime] % cid
            if qos == "guaranteed":
                return "/kubepods.slice/kubepods-pod%s.slice/%s" % (u, scope)
            return "/kubepods.slice/kubepods-%s.slice/kubepods-%s-pod%s.slice/%s" % (qos, qos, u, scope)
        if driver == "cgroupfs":
            leaf = ("crio-%s" if runtime == "crio" else "%s") % cid
            if qos == "guaranteed":
                return "/kubepods/pod%s/%s" % (self.uid, leaf)
            return "/kubepods/%s/pod%s/%s" % (qos, self.uid, leaf)
        return "/croft-test-host-%d" % os.getpid()


def make_dirs(roots, path, made):
    dirs = []
    for root in roots.values():
        parts, d = path.strip("/").split("/"), root
        for part in parts:
            d = os.path.join(d, part)
            if not os.path.isdir(d):
                os.mkdir(d)
                made.append(d)
        dirs.append(d)
    return dirs


def start(pod, dirs):
    def enter():
        for d in dirs:
            with open(os.path.join(d, "cgroup.procs"), "w") as f:
                f.write("0")
    for _ in range(pod.count):
        p = subprocess.Popen([sys.executable, "-c", HOLDER] + pod.opens, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, preexec_fn=enter)
        pod.procs.append(p)
        if p.stdout.readline() != b"ready\n":
            raise RuntimeError("holder of pod %s did not start" % pod.name)


def free_major():
    with open("/proc/devices") as f:
        used = {int(ln.split()[0]) for ln in f.read().split("Block devices:")[0].splitlines()[1:]
                if ln.strip()}
    return next(m for m in range(254, 200, -1) if m not in used)


def fake_node(base, caps_major):
    """/proc/devices, device nodes, the driver's files and the kubelet's checkpoint."""
    with open("/proc/devices") as f:
        char, block = f.read().split("Block devices:")
    names = {ln.split()[1] for ln in char.splitlines()[1:] if ln.strip()}
    extra = "".join("%s\n" % e for e in ("195 nvidia", "195 nvidiactl", "%d nvidia-caps" % caps_major)
                    if e.split()[1] not in names)
    with open(os.path.join(base, "devices"), "w") as f:
        f.write(char.rstrip("\n") + "\n" + extra + "\nBlock devices:" + block)
    dev = os.path.join(base, "dev")
    os.makedirs(os.path.join(dev, "nvidia-caps"))
    for name, (ma, mi) in {"nvidia0": (195, 0), "nvidia1": (195, 1), "nvidiactl": (195, 255),
                           "nvidia-caps/nvidia-cap12": (caps_major, 12),
                           "nvidia-caps/nvidia-cap13": (caps_major, 13)}.items():
        os.mknod(os.path.join(dev, name), 0o666 | 0o020000, os.makedev(ma, mi))
    drv = os.path.join(base, "driver")
    for minor, (pci, gpu_uuid) in enumerate(zip(("0000:07:00.0", "0000:0f:00.0"), GPU_UUIDS)):
        d = os.path.join(drv, "nvidia/gpus", pci)
        os.makedirs(d)
        with open(os.path.join(d, "information"), "w") as f:
            f.write("Model: \t\t NVIDIA A100-SXM4-40GB\nIRQ:   \t\t 180\nGPU UUID: \t %s\n"
                    "Video BIOS: \t 92.00.36.00.01\nBus Type: \t PCIe\nDMA Size: \t 47 bits\n"
                    "DMA Mask: \t 0x7fffffffffff\nBus Location: \t %s\nDevice Minor: \t %d\n"
                    "GPU Excluded:\t No\n" % (gpu_uuid, pci, minor))
    os.makedirs(os.path.join(drv, "nvidia-caps"))
    # the driver's numbering: config, monitor, then per GPU and GPU instance its
    # access file and its eight compute instances' (gpu0/gi1/access 12, gpu0/gi1/ci0/access 13)
    with open(os.path.join(drv, "nvidia-caps/mig-minors"), "w") as f:
        f.write("config 1\nmonitor 2\n" + "".join(
            "gpu%d/gi%d/access %d\n" % (g, i, 3 + g * 72 + i * 9) +
            "".join("gpu%d/gi%d/ci%d/access %d\n" % (g, i, c, 4 + g * 72 + i * 9 + c) for c in range(8))
            for g in range(2) for i in range(8)))
    return dev, drv


def checkpoint(path, pods):
    """As kubelets since 1.20 write it: DeviceIDs by NUMA node."""
    a, b, d = pods["A"], pods["B"], pods["D"]
    entries = [
        {"PodUID": a.uid, "ContainerName": "train", "ResourceName": "nvidia.com/gpu",
         "DeviceIDs": {"0": [GPU_UUIDS[0]]}, "AllocResp": "CiQKFk5WSURJQV9WSVNJQkxFX0RFVklDRVM="},
        {"PodUID": b.uid, "ContainerName": "serve", "ResourceName": "nvidia.com/gpu",
         "DeviceIDs": {"1": [GPU_UUIDS[1]]}, "AllocResp": ""},
        {"PodUID": d.uid, "ContainerName": "mig", "ResourceName": "nvidia.com/mig-1g.10gb",
         "DeviceIDs": {"0": ["MIG-5c9d3e1f-0a2b-5c4d-8e6f-7a8b9c0d1e2f"]}, "AllocResp": ""},
    ]
    with open(path, "w") as f:
        json.dump({"Data": {"PodDeviceEntries": entries,
                            "RegisteredDevices": {"nvidia.com/gpu": GPU_UUIDS}},
                   "Checksum": 3021745829}, f)
    os.chmod(path, 0o600)  # root's, as the kubelet leaves it: the sampler reads it by capability


def rows_in(data):
    rows = []
    for name in sorted(os.listdir(data) if os.path.isdir(data) else []):
        if name.endswith(".jsonl"):
            with open(os.path.join(data, name), "rb") as f:
                text = f.read()
            rows += [json.loads(ln) for ln in text[:text.rfind(b"\n") + 1].splitlines()]
    return rows


def check_rows(pods, rows):
    by = {p.name: [r for r in rows if r["tgid"] in {q.pid for q in p.procs}] for p in pods.values()}
    want = {"A": ([0], [0], None), "B": (None, [1], None), "C": ([1], [], None),
            "D": ([0], None, ["0/1/0"]), "E": (None, [], None), "F": (None, [], None),
            "G": (None, None, None)}
    for name, p in sorted(pods.items()):
        mine = by[name]
        proc = {k: mine[-1]["process"].get(k) for k in ("pod_uid", "pod_qos", "container_id")} \
            if mine else {}
        ok(mine and proc == {"pod_uid": p.uid, "pod_qos": p.qos,
                             "container_id": p.container_id if p.qos else None},
           "pod %s (%s %s): pod_uid, pod_qos, container_id" % (name, p.driver, p.qos or "host"),
           "%d rows, last %s, want %s %s" % (len(mine), proc, p.uid, p.qos))
        gpus, allocated, mig = want[name]
        got = {(r.get("gpus"), r.get("gpus_allocated"), r.get("mig")) and
               json.dumps([r.get("gpus"), r.get("gpus_allocated"), r.get("mig")]) for r in mine}
        ok(got == {json.dumps([gpus, allocated, mig])},
           "pod %s: gpus %s, gpus_allocated %s, mig %s in every row" % (name, gpus, allocated, mig),
           "got %s" % sorted(got))


def near(got_h, want_s, slack_s):
    return got_h is not None and abs(got_h * 3600 - want_s) <= slack_s


def check_stats(pods, stats, watched_s, evidence):
    slack = 2.5 * POLL_MS / 1000
    pg = {(e["pod_uid"], e["gpu"]): e for e in stats.get("gpu_by_pod_gpu", [])}
    pod = {e["pod_uid"]: e for e in stats.get("gpu_by_pod", [])}
    zero = {"allocated_not_held_hours": 0.0, "held_not_allocated_hours": 0.0}
    # A and C hold their GPUs idle: never busy; idle by the verdict where the
    # rows carry the kernel's evidence (the probe's GPU waits), else unknown
    idle = ("idle_gpu_held_hours",) if evidence else ()
    cases = [  # pod, GPU, the figure that is the watched time, the figures that are zero
        ("A", 0, ("gpu_held_hours",) + idle, dict(zero, busy_gpu_held_hours=0.0)),
        ("B", 1, ("allocated_not_held_hours",), {"gpu_held_hours": 0.0, "held_not_allocated_hours": 0.0}),
        ("C", 1, ("gpu_held_hours", "held_not_allocated_hours") + idle,
         {"allocated_not_held_hours": 0.0, "busy_gpu_held_hours": 0.0}),
        ("D", 0, ("gpu_held_hours",), zero),
    ]
    for name, gpu, watched, zeros in cases:
        e = pg.get((pods[name].uid, gpu), {})
        good = all(near(e.get(k), watched_s, slack) for k in watched) and \
            all(e.get(k) == v for k, v in zeros.items())
        ok(good, "pod %s x GPU %d: %s = the %.1f s watched (+-%.2f s), %s 0" % (
            name, gpu, ", ".join(watched), watched_s, slack, ", ".join(zeros)), json.dumps(e))
    # another test's pods may run on this machine meanwhile: only ours are judged
    ours = {p.uid for p in pods.values() if p.uid}
    others = [k for k in pg if k[0] in ours and
              k not in {(pods[n].uid, g) for n, g in (("A", 0), ("B", 1), ("C", 1), ("D", 0))}]
    ok(not others, "no other pod x GPU of ours", str(others))
    a = pod.get(pods["A"].uid, {})
    ok(a.get("pod_qos") == "burstable" and a.get("containers") == [pods["A"].container_id] and
       a.get("gpu_held_hours") == pg.get((pods["A"].uid, 0), {}).get("gpu_held_hours"),
       "per pod: qos, containers and the sum over its GPUs", json.dumps(a))
    b = pod.get(pods["B"].uid, {})
    ok(b.get("allocated_not_held_hours") == pg.get((pods["B"].uid, 1), {}).get("allocated_not_held_hours"),
       "per pod: allocated-but-not-held is its GPUs'", json.dumps(b))


def main():
    if os.geteuid() != 0:
        skip("needs root (cgroups, mknod, mount namespaces)")
    roots = cgroup_mounts()
    roots = {k: v for k, v in roots.items() if k in ("memory", "cpu")} or \
        ({"v2": roots["v2"]} if "v2" in roots else {})
    if not roots:
        skip("no cgroup hierarchy mounted")
    tmp = tempfile.mkdtemp(prefix="croft-kube-node.")
    os.chmod(tmp, 0o755)
    data, conf, run_dir = os.path.join(tmp, "data"), os.path.join(tmp, "croft.conf"), os.path.join(tmp, "run")
    dev, drv = fake_node(tmp, free_major())
    pods = {p.name: p for p in (
        Pod("A", "systemd", "burstable", "containerd", [dev + "/nvidia0", dev + "/nvidiactl"]),
        Pod("B", "systemd", "besteffort", "crio", procs=2),  # two processes: its time counted once
        Pod("C", "systemd", "guaranteed", "docker", [dev + "/nvidia1", dev + "/nvidiactl"]),
        Pod("D", "cgroupfs", "burstable", "containerd",
            [dev + "/nvidia0", dev + "/nvidiactl", dev + "/nvidia-caps/nvidia-cap12",
             dev + "/nvidia-caps/nvidia-cap13"]),
        Pod("E", "cgroupfs", "besteffort", "crio"),
        Pod("F", "cgroupfs", "guaranteed", "containerd"),
        Pod("G", "host", None, None))}
    checkpoint(os.path.join(tmp, "kubelet_internal_checkpoint"), pods)
    with open(conf, "w") as f:
        f.write("[sampler]\npoll_interval = %dms\nidle_every = 1\nkubelet_checkpoint = %s\n"
                "driver_dir = %s\n" % (POLL_MS, os.path.join(tmp, "kubelet_internal_checkpoint"), drv))
    os.chmod(conf, 0o644)
    made, run = [], None
    log = open(os.path.join(tmp, "run.log"), "w")
    try:
        for p in pods.values():
            start(p, make_dirs(roots, p.path, made))
        pids = {q.pid for p in pods.values() for q in p.procs}
        mounts = 'mount --bind "$1" /proc/devices && shift && exec "$@"'
        run = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sh", "-c", mounts, "sh",
                                os.path.join(tmp, "devices"), CROFT, "run", "--data-dir", data,
                                "--runtime-dir", run_dir, "--config", conf],
                               stdout=log, stderr=subprocess.STDOUT)
        wait_for(lambda: pids <= {r["tgid"] for r in rows_in(data)}, 120, "rows of every pod")
        first = min(r["unix_ms"] for r in rows_in(data) if r["tgid"] in pids)
        time.sleep(WATCH_S)  # the watched span: the figures are its length
        run.send_signal(signal.SIGINT)
        stopped = int(time.time() * 1000)
        ok(run.wait(60) == 0, "croft run stopped")
        rows = [r for r in rows_in(data) if r["tgid"] in pids]
        probe = any("ioctl_count" in r for r in rows)
        ok(probe or not CI, "the probe counted the GPU files' ioctls (rows carry ioctl_count)")
        check_rows(pods, rows)
        # what the test watched: from the poll before the first row (what a first
        # row stands for) to the stop
        watched_s = (stopped - first + POLL_MS) / 1000
        got = subprocess.run([CROFT, "stats", "--json", "--config", conf, data], stdout=subprocess.PIPE,
                             text=True)
        stats = json.loads(got.stdout)
        check_stats(pods, stats, watched_s, any("gpu_wait_count" in r for r in rows))
        one = json.loads(subprocess.run([CROFT, "stats", "--json", "--pod", pods["C"].uid, "--config", conf,
                                         data], stdout=subprocess.PIPE, text=True).stdout)
        ok([e["pod_uid"] for e in one.get("gpu_by_pod", [])] == [pods["C"].uid] and
           one["rows"] == sum(r["tgid"] == pods["C"].procs[0].pid for r in rows) and one["processes"] == 1,
           "--pod: that pod's rows only", "%s rows, %s processes" % (one["rows"], one["processes"]))
        prof = json.loads(subprocess.run([CROFT, "profile", "--json", "--pod", pods["A"].uid, "--config",
                                          conf, data], stdout=subprocess.PIPE, text=True).stdout)
        ok(prof.get("processes") == 1, "croft profile --pod", "processes %s" % prof.get("processes"))
    finally:
        if run and run.poll() is None:
            run.send_signal(signal.SIGINT)
            run.wait(60)
        for q in (q for p in pods.values() for q in p.procs):
            q.kill()
            q.wait()
        for d in reversed(made):
            for _ in range(50):
                try:
                    os.rmdir(d)
                    break
                except OSError:
                    time.sleep(0.1)
        TAP.tail_on_failure(log.name, 25)
        subprocess.run(["rm", "-rf", tmp])
    TAP.done()


if __name__ == "__main__":
    main()
