#!/usr/bin/env python3
# test-gpu-rows.py: the GPU evidence in finished rows (croft-probe +
# croft-sampler + a fake writer).  Stand-ins (gpu_devices = 5:2, 1:5):
# /dev/ptmx (5:2) is the GPU file waited on (a pty master polls "nothing
# yet" until the timeout); /dev/zero (1:5) the one mapped.  A thread
# blocked 10 s in poll shows gpu_blocked_threads in the rows of every poll
# it blocks through (and those rows are written: a process blocked on the
# GPU is not idle); waits and mmaps sum to the workload's own counts; a
# holder doing nothing shows 0, 0, 0; then a probe with maps of 2 entries
# makes rows leave the fields out rather than write 0 (finding 10).  Root,
# real eBPF.
import subprocess
import sys

from probetest import Tap, require_bpf
from rowtest import Stack

CONF = '[probe]\ngpu_devices = 5:2, 1:5\n'
FIELDS = ('gpu_wait_count', 'gpu_mmap_count', 'gpu_blocked_threads')


def ready(st, work, *args):
    """A workload that has its file open and a first row written (so its rows cover all it
    does once told to go)."""
    w = st.spawn([work] + [str(a) for a in args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                 text=True)
    assert w.stdout.readline().strip() == 'ready'
    st.wait_rows(w.pid, lambda rs: len(rs) >= 1)
    return w


def go(w):
    w.stdin.write('go\n')
    w.stdin.flush()
    return w


def start(st, work, *args):
    return go(ready(st, work, *args))


def finish(st, w):
    """Its calls made (its own count) and its rows up to two polls after it said so (they
    cover every call); then it exits."""
    made = int(w.stdout.readline().split()[1])
    n = len(st.rows.of(w.pid))
    rows = st.wait_rows(w.pid, lambda rs: len(rs) >= n + 2)
    w.stdin.close()
    w.wait()
    return made, rows


def t_blocked(tap, st, work):
    w = start(st, work, 'block', '/dev/ptmx', 10000)
    assert w.stdout.readline().strip() == 'blocking'
    rows = st.wait_rows(w.pid, lambda rs: sum(r.get('gpu_blocked_threads', 0) for r in rs) >= 5)
    run = [r.get('gpu_blocked_threads') for r in rows][-5:]
    tap.ok(run == [1] * 5 and all(r['workload'] != 'no-gpu' for r in rows[-5:]),
           'a thread blocked in poll on the GPU file: gpu_blocked_threads 1 in the rows of '
           'every poll while it blocks', [r.get('gpu_blocked_threads') for r in rows])
    made, rows = finish(st, w)
    tap.ok(sum(r.get('gpu_wait_count', 0) for r in rows) == made == 1 and
           rows[-1].get('gpu_blocked_threads') == 0,
           'its one wait counted once; none blocked after it returned',
           [(r.get('gpu_wait_count'), r.get('gpu_blocked_threads')) for r in rows])


def t_counts(tap, st, work):
    p = start(st, work, 'poll', '/dev/ptmx', 60, 20)
    e = start(st, work, 'epoll', '/dev/ptmx', 45, 20)
    m = start(st, work, 'mmap', '/dev/zero', 500)
    for name, w in (('poll', p), ('epoll', e)):
        made, rows = finish(st, w)
        got = sum(r.get('gpu_wait_count', 0) for r in rows)
        tap.ok(got == made, '%s: gpu_wait_count sums to the waits made' % name,
               '%d of %d' % (got, made))
    made, rows = finish(st, m)
    got = sum(r.get('gpu_mmap_count', 0) for r in rows)
    tap.ok(got == made == 500, 'mmap: gpu_mmap_count sums to the mmaps made',
           '%d of %d' % (got, made))


def t_idle(tap, st, work):
    h = start(st, work, 'hold', '/dev/ptmx')
    made, rows = finish(st, h)
    held = [r for r in rows if r['workload'] != 'no-gpu']
    tap.ok(held and all(all(r.get(f) == 0 for f in FIELDS) for r in held),
           'a holder doing nothing: 0 waits, 0 mmaps, 0 blocked (written, not left out)',
           [[r.get(f) for f in FIELDS] for r in rows])


def t_full_maps(tap, probe_bin, sampler_bin, work):
    st = Stack(probe_bin, sampler_bin, 'idle_every = 1\n' + CONF, probe_args=('--map-entries', '2'))
    try:
        st.start_sampler()
        # four at once in maps of two tgids
        ws = [go(w) for w in [ready(st, work, 'poll', '/dev/ptmx', 40, 50) for _ in range(4)]]
        rows = []
        for w in ws:
            rows += finish(st, w)[1]
        held = [r for r in rows if r['workload'] != 'no-gpu']
        out = [r for r in held if not any(f in r for f in FIELDS)]
        written = [r for r in held if any(f in r for f in FIELDS)]
        tap.ok(out and all(all(f in r for f in FIELDS) for r in written) and
               sum(r.get('gpu_wait_count', 0) for r in rows) < 4 * 40,
               'maps of 2 entries: rows of polls whose map filled leave the GPU evidence out, '
               'never a 0 for what was lost',
               '%d rows left out, %d written, waits written %d of %d' % (
                   len(out), len(written), sum(r.get('gpu_wait_count', 0) for r in rows), 160))
    finally:
        st.close()


def main():
    require_bpf()
    probe_bin, work, sampler_bin = sys.argv[1], sys.argv[2], sys.argv[3]
    tap = Tap()
    st = Stack(probe_bin, sampler_bin, CONF)
    try:
        st.start_sampler()
        t_blocked(tap, st, work)
        t_counts(tap, st, work)
        t_idle(tap, st, work)
    except BaseException:
        st.print_logs()
        raise
    finally:
        st.close()
    t_full_maps(tap, probe_bin, sampler_bin, work)
    tap.done()


if __name__ == '__main__':
    main()
