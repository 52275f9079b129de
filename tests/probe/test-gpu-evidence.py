#!/usr/bin/env python3
# test-gpu-evidence.py: waits on, mmaps of and threads blocked on GPU files,
# without a GPU, each against the workload's own count.  Stand-ins
# (gpu_devices = 5:2, 1:5): /dev/ptmx (5:2) is the GPU file waited on (a pty
# master with no slave writing polls "nothing yet" until the timeout, as a
# GPU's event file does while work is outstanding); /dev/zero (1:5) is the
# GPU file mapped.  Then finding 10: with maps of 2 entries and more
# processes than that, answers whose maps filled flag none of those
# concerns' figures as counted (the sampler leaves them out).  Root, real
# eBPF; run as tp_btf and, forced, raw_tp.
import subprocess
import sys
import time

from probetest import Probe, Tap, require_bpf, wait_for
from wire import PROBE_END_GPUFILE, PROBE_END_IOCTL, PROBE_END_SCHED, PROBE_END_SYSCALLS

CONF = '[probe]\ngpu_devices = 5:2, 1:5\n'
WAITED, MAPPED = '/dev/ptmx', '/dev/zero'


class Work:
    """gpufile-work: 'ready' once the file is open, then told to go; 'done N' after N calls;
    holds it until closed."""

    def __init__(self, binary, *args):
        self.proc = subprocess.Popen([binary] + [str(a) for a in args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == 'ready'
        self.pid = self.proc.pid
        self.proc.stdin.write('go\n')
        self.proc.stdin.flush()

    def line(self):
        return self.proc.stdout.readline().strip()

    def done(self):
        """The calls it says it made (blocks until it made them)."""
        line = self.line()
        return int(line.split()[1]) if line.startswith('done ') else -1

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


class Sums:
    """Each work's figures summed over every answer since the baseline."""

    def __init__(self, client, works):
        self.client = client
        self.got = {w.pid: {'gpu_waits': 0, 'gpu_mmaps': 0, 'gpu_ioctls': 0} for w in works}

    def poll(self):
        a = self.client.poll()
        for t, p in a['procs'].items():
            for k in self.got.get(t, {}):
                self.got[t][k] += p[k]
        return a

    def close(self, works, settle=3):
        """Once every work exited, `settle` more answers."""
        for w in works:
            w.close()
        for _ in range(settle):
            time.sleep(0.3)
            self.poll()
        return self.got


def test_counts(tap, probe, work):
    c = probe.client()
    c.poll()  # baseline: what follows is counted from here
    calls = {'poll': 40, 'ppoll': 30, 'select': 25, 'pselect': 20, 'epoll': 35}
    waits = {m: Work(work, m, WAITED, n, 10) for m, n in calls.items()}
    other = Work(work, 'epoll-pipe', WAITED, 20, 10)
    mapped = Work(work, 'mmap', MAPPED, 333)
    idle = Work(work, 'hold', WAITED)
    made = {m: w.done() for m, w in waits.items()}
    made_maps, _, _ = mapped.done(), other.done(), idle.done()
    works = list(waits.values()) + [other, mapped, idle]
    sums = Sums(c, works)
    idle_seen = [sums.poll()['procs'].get(idle.pid) for _ in range(3)]
    got = sums.close(works)
    for m, w in waits.items():
        tap.ok(got[w.pid]['gpu_waits'] == made[m] == calls[m],
               '%s on the GPU file: every wait counted' % m,
               'counted %d, made %d' % (got[w.pid]['gpu_waits'], made[m]))
    tap.ok(got[other.pid]['gpu_waits'] == 0,
           'epoll on a set without the GPU file (held open beside it): no GPU wait', got[other.pid])
    tap.ok(got[mapped.pid]['gpu_mmaps'] == made_maps == 333 and got[mapped.pid]['gpu_waits'] == 0,
           'mmaps of the GPU file counted exactly', got[mapped.pid])
    tap.ok(got[idle.pid] == {'gpu_waits': 0, 'gpu_mmaps': 0, 'gpu_ioctls': 0} and
           all(p is None or p['gpu_blocked_threads'] == 0 for p in idle_seen),
           'a process doing nothing on its GPU file: no wait, mmap or blocked thread',
           [got[idle.pid], idle_seen])


def test_blocked(tap, probe, work):
    c = probe.client()
    c.poll()
    w = Work(work, 'block', WAITED, 10000)
    assert w.line() == 'blocking'
    seen = []  # its record in each answer, None when it had none

    def blocked():
        seen.append(c.poll()['procs'].get(w.pid))
        return (seen[-1] or {}).get('gpu_blocked_threads', 0)

    wait_for(lambda: blocked(), 8, 'the blocked thread')
    during = []
    for _ in range(4):
        time.sleep(0.5)
        during.append(blocked())
    tap.ok(during == [1] * 4, 'a thread blocked 10 s in poll on the GPU file: 1 blocked thread '
           'in every answer while it blocks', during)
    assert w.done() == 1
    after = [blocked() for _ in range(2)]
    tap.ok(after[-1] == 0, 'none blocked once the poll returned', after)
    tap.ok(sum((p or {}).get('gpu_waits', 0) for p in seen) == 1,
           'its wait counted once', seen)
    w.close()


def test_full_maps(tap, probe_bin, work):
    """Finding 10: a full map makes the answer's figures of that concern unknown, not 0."""
    probe = Probe(probe_bin, conf=CONF, args=['--map-entries', '2'])
    try:
        c = probe.client()
        c.poll()
        ws = [Work(work, 'poll', WAITED, 20, 5) for _ in range(6)]
        for w in ws:
            w.done()
        a = c.poll()
        for w in ws:
            w.close()
        flags, drops = a['end']['flags'], a['end']['drops']
        for name, bit, drop in (('gpufile', PROBE_END_GPUFILE, 'gpufile_map_full'),
                                ('syscalls', PROBE_END_SYSCALLS, 'syscall_map_full'),
                                ('sched', PROBE_END_SCHED, 'sched_map_full')):
            tap.ok(drops[drop] > 0 and not flags & bit,
                   'a full %s map: the answer leaves its figures out' % name,
                   'flags %#x drops %s' % (flags, drops))
        tap.ok(bool(flags & PROBE_END_IOCTL) == (drops['ioctl_map_full'] == 0),
               'ioctl\'s figures are left out only if its own map filled',
               'flags %#x drops %s' % (flags, drops))
        st = probe.status()['maps']
        tap.ok(st['gpufile']['fields_left_out_answers'] >= 1,
               'status counts the answers that left them out', st['gpufile'])
    finally:
        probe.close()


def main():
    require_bpf()
    probe_bin, work = sys.argv[1], sys.argv[2]
    tap = Tap()
    probe = Probe(probe_bin, conf=CONF)
    try:
        test_counts(tap, probe, work)
        test_blocked(tap, probe, work)
    finally:
        probe.close()
    test_full_maps(tap, probe_bin, work)
    tap.done()


if __name__ == '__main__':
    main()
