#!/usr/bin/env python3
# test-gpu-ioctl.py: GPU ioctls without a GPU.  A device node made here
# (char 1:7, like /dev/full) is the GPU set (gpu_devices = 1:7): M ioctls
# on it are counted exactly, ioctls on /dev/null (1:3) are not, until a
# reload puts 1:3 in the set without reloading programs.  Root, real eBPF.
import os
import subprocess
import sys
import time

from probetest import Probe, Tap, drain, require_bpf
from wire import MT_CTL_RELOAD


def main():
    require_bpf()
    probe_bin, work = sys.argv[1], sys.argv[2]
    tap = Tap()
    probe = Probe(probe_bin, conf='[probe]\ngpu_devices = 1:7\n')
    try:
        node = os.path.join(probe.dir, 'gpu0')
        os.mknod(node, 0o666 | 0o020000, os.makedev(1, 7))
        tap.ok(probe.status()['gpu_rules'] == 1, 'status shows the configured GPU rule')
        c = probe.client()
        m = 1234
        before = time.clock_gettime_ns(time.CLOCK_BOOTTIME)
        g = subprocess.Popen([work, 'ioctl', node, str(m), '0'])
        n = subprocess.Popen([work, 'ioctl', '/dev/null', '500', '0'])
        totals, _, _ = drain(c, {g.pid, n.pid}, {g.pid, n.pid})
        after = time.clock_gettime_ns(time.CLOCK_BOOTTIME)
        got = totals.get(g.pid, {}).get('gpu_ioctls', 0)
        tap.ok(got == m, 'ioctls on the GPU node counted exactly', 'got %d want %d' % (got, m))
        last = totals.get(g.pid, {}).get('last_gpu_ioctl_boot_ns', 0)
        tap.ok(before < last < after, 'last GPU ioctl time is CLOCK_BOOTTIME within the run')
        tap.ok(totals.get(n.pid, {}).get('gpu_ioctls', 0) == 0, '/dev/null ioctls not counted')
        with open(probe.conf, 'w') as f:
            f.write('[probe]\ngpu_devices = 1:7, 1:3\n')
        status, text = probe.ctl_request(MT_CTL_RELOAD)
        tap.ok(status == 0 and probe.status()['gpu_rules'] == 2, 'reload updates the device set',
               text)
        n = subprocess.Popen([work, 'ioctl', '/dev/null', '500', '0'])
        totals, _, _ = drain(c, {n.pid}, {n.pid})
        tap.ok(totals.get(n.pid, {}).get('gpu_ioctls', 0) == 500,
               '/dev/null ioctls counted after the reload')
        with open(probe.conf, 'w') as f:
            f.write('[probe]\ngpu_devices = 1:nonsense\n')
        status, text = probe.ctl_request(MT_CTL_RELOAD)
        tap.ok(status != 0 and probe.status()['gpu_rules'] == 2,
               'a bad gpu_devices is refused and the old set kept', text)
    finally:
        probe.close()
    tap.done()


if __name__ == '__main__':
    main()
