#!/usr/bin/env python3
# test-concern-fail.py: one concern that does not load never takes croft-probe
# down.  Each concern in turn is made to fail for real (CROFT_PROBE_FAIL: its
# drops map sized 0, refused by the kernel's map creation): the probe starts
# with the rest, says once in its log why, reports degraded with libbpf's
# reason under failed and every field of it under left_out, clears that
# concern's flag in its answers, and the others still count what a workload
# did.  Root, real eBPF.
import os
import platform
import subprocess
import sys
import tempfile

from probetest import Probe, Tap, require_bpf
from wire import (PROBE_END_FINALS, PROBE_END_GPUFILE, PROBE_END_IOCTL, PROBE_END_NET,  # noqa: E402
                  PROBE_END_SCHED, PROBE_END_SYSCALLS)

GETPPID_NR = {'x86_64': 110, 'aarch64': 173, 'riscv64': 173}
END_FLAG = {'net': PROBE_END_NET, 'syscalls': PROBE_END_SYSCALLS, 'ioctl': PROBE_END_IOCTL,
            'sched': PROBE_END_SCHED, 'exit': PROBE_END_FINALS, 'gpufile': PROBE_END_GPUFILE}
FIELDS = {
    'syscalls': {'syscalls'},
    'ioctl': {'ioctl_count', 'since_last_gpu_ioctl_ms'},
    'sched': {'usage.ctx_voluntary_s', 'usage.ctx_involuntary_s', 'usage.runqueue_s'},
    'proc': set(),
    'net': {'usage.network_rx_bytes_s', 'usage.network_tx_bytes_s'},
    'exit': {'exit_ms', 'exit_code', 'exit_signal'},
    'gpufile': {'gpu_wait_count', 'gpu_mmap_count', 'gpu_blocked_threads'},
}
# syscalls' program is what calls ioctl's and gpufile's: without it they are out too;
# gpufile counts threads inside GPU ioctls by ioctl's marks: without ioctl it is out
GOES_WITH = {'syscalls': {'syscalls', 'ioctl', 'gpufile'}, 'ioctl': {'ioctl', 'gpufile'}}


def counts(probe, work, node):
    """5 000 getppid, 300 ioctls on the stand-in GPU node and 200 sleeps,
    answered once all three exited: (what was counted of each, the flags)."""
    c = probe.client()
    c.poll()  # baseline
    g = subprocess.Popen([work, 'getppid', '5000', '0'])
    i = subprocess.Popen([work, 'ioctl', node, '300', '0'])
    s = subprocess.Popen([work, 'sleeps', '200', '1'])
    for w in (g, i, s):
        w.wait()
    a = c.poll()
    got = {'getppid': 0, 'gpu_ioctls': 0, 'switches': 0}
    for tgid, p in a['procs'].items():
        if tgid == g.pid:
            got['getppid'] += p['syscalls'].get(GETPPID_NR[platform.machine()], 0)
        if tgid == s.pid:
            got['switches'] += p['ctx_voluntary']
        if tgid == i.pid:
            got['gpu_ioctls'] += p['gpu_ioctls']
    return got, a['end']['flags']


def check_one(tap, probe_bin, work, node, concern):
    probe = Probe(probe_bin, conf='[probe]\ngpu_devices = 1:7\n',
                  env={'CROFT_PROBE_FAIL': concern})
    try:
        env = probe.envelope()
        st = env['figures']
        out = GOES_WITH.get(concern, {concern})
        tap.ok(probe.proc.poll() is None and env['state'] == 'degraded' and
               concern in (env['why'] or ''),
               '%s failing: the probe runs, degraded' % concern,
               '%s: %s' % (env['state'], env['why']))
        why = st['failed'].get(concern, '')
        tap.ok(set(st['failed']) == out and 'Invalid argument' in why and 'libbpf: ' in why,
               '%s failing: failed names it with libbpf\'s reason' % concern, st['failed'])
        tap.ok(all(st['programs'][c] is None for c in out) and
               all(st['programs'][c] for c in st['programs'] if c not in out | {'net'}),
               '%s failing: only its programs are missing' % concern, st['programs'])
        want_out = set().union(*(FIELDS[c] for c in out))
        if not st['net']['available']:
            want_out |= FIELDS['net']
        tap.ok(set(st['left_out']) == want_out and
               all(st['left_out'][f].startswith(c + ': ') for c in out for f in FIELDS[c]),
               '%s failing: left_out lists its fields and why' % concern, st['left_out'])
        lines = [ln for ln in probe.logtext().splitlines()
                 if '%s: not loaded, its fields are left out' % concern in ln]
        tap.ok(len(lines) == 1, '%s failing: said once in the log' % concern,
               '\n'.join(lines) or probe.logtext()[-2000:])
        got, flags = counts(probe, work, node)
        cleared = {c for c, bit in END_FLAG.items() if not flags & bit}
        tap.ok(cleared & set(FIELDS) == (out & set(END_FLAG)) | ({'net'} if not
                                                                  st['net']['available']
                                                                  else set()),
               '%s failing: its answers flag only the rest as counted' % concern,
               'flags %#x' % flags)
        tap.ok((got['getppid'] == 5000) == ('syscalls' not in out) and
               (got['gpu_ioctls'] == 300) == ('ioctl' not in out) and
               (got['switches'] >= 100) == ('sched' not in out),
               '%s failing: the others count what the workloads did' % concern, got)
    finally:
        probe.close()


def main():
    require_bpf()
    probe_bin, work = sys.argv[1], sys.argv[2]
    tap = Tap()
    with tempfile.TemporaryDirectory(prefix='croft-concern-fail.') as d:
        node = os.path.join(d, 'gpu0')
        os.mknod(node, 0o666 | 0o020000, os.makedev(1, 7))
        for concern in ('syscalls', 'ioctl', 'sched', 'proc', 'net', 'exit', 'gpufile'):
            check_one(tap, probe_bin, work, node, concern)
        # all of them: nothing to serve, a clear error rather than an empty probe
        conf = os.path.join(d, 'croft.conf')
        open(conf, 'w').close()
        p = subprocess.run([probe_bin, '-c', conf, '-r', os.path.join(d, 'run')],
                           env=dict(os.environ,
                                    CROFT_PROBE_FAIL='syscalls,ioctl,sched,proc,net,exit,gpufile'),
                           capture_output=True, text=True, timeout=60)
        tap.ok(p.returncode != 0 and 'no concern loaded' in p.stderr,
               'every concern failing: the probe exits with why', p.stderr[-1500:])
    tap.done()


if __name__ == '__main__':
    main()
