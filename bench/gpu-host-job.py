#!/usr/bin/env python3
# gpu-host-job.py: the PyTorch workloads of bench/gpu-host.sh, on the real
# GPU host (its python3 and torch; nothing installed).  Each prints JSON
# lines {"event", "pid", "unix_ms", ...} that the report lines croft's rows
# up against.
#   job COMPUTE_S IDLE_S  computes on cuda:0 for COMPUTE_S, then holds its
#                         context idle for IDLE_S, then exits
#   hold                  opens the GPU (a context on cuda:0) and holds it
#                         until stdin closes: the process croft finds open
#                         at start
import json
import os
import sys
import time

import torch


def say(event, **more):
    print(json.dumps({"event": event, "pid": os.getpid(), "unix_ms": int(time.time() * 1000),
                      **more}), flush=True)


def compute(seconds):
    """Matrix products, each waited for; every half second the cached memory
    is given back (the next product takes it again), which the driver does
    with ioctls: kernel launches alone may make none."""
    x = torch.randn(2048, 2048, device="cuda")
    products = frees = 0
    end = time.monotonic() + seconds
    next_free = time.monotonic()
    while time.monotonic() < end:
        y = x @ x
        torch.cuda.synchronize()
        products += 1
        if time.monotonic() >= next_free:
            del y
            torch.cuda.empty_cache()
            frees += 1
            next_free += 0.5
    return products, frees


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "job":
        compute_s, idle_s = float(sys.argv[2]), float(sys.argv[3])
        torch.zeros(1, device="cuda")  # the context, before the clock starts
        say("compute", device=torch.cuda.get_device_name(0))
        products, frees = compute(compute_s)
        say("idle", products=products, frees=frees)
        time.sleep(idle_s)  # the context stays: GPU files open, no ioctl
        say("end")
        return 0
    if len(sys.argv) == 2 and sys.argv[1] == "hold":
        torch.zeros(1, device="cuda")
        say("ready")
        sys.stdin.read()
        say("end")
        return 0
    print("usage: gpu-host-job.py job COMPUTE_S IDLE_S | hold", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
