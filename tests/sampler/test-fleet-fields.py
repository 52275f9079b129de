#!/usr/bin/env python3
# test-fleet-fields.py: the rows' host, process.start_ms and span_ms, each
# against an instrument of its own: uname and croft.conf for host, ps's
# lstart and the test's own fork time for start_ms (also after a sampler
# restart), the rows' own clock and the kernel's CPU time of a process for
# span_ms.  Real croft-sampler, real processes; needs root (privilege drop).
# TAP on stdout.  usage: test-fleet-fields.py SAMPLER HELPER LIBTORCH BUILD_DIR
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_sampler as ts  # noqa: E402  (its harness: the same arguments)

POLL_MS = ts.POLL_MS


def lstart_s(pid):
    """ps -o lstart: the start as procps computes it (btime + starttime), seconds."""
    out = subprocess.run(['ps', '-o', 'lstart=', '-p', str(pid)], capture_output=True,
                         text=True, env=dict(os.environ, LC_ALL='C'), check=True).stdout
    return int(time.mktime(time.strptime(out.strip(), '%a %b %d %H:%M:%S %Y')))


def schedstat_ns(pid):
    with open('/proc/%d/schedstat' % pid) as f:
        return int(f.read().split()[0])


def t_host_default(h):
    rows = h.rows.wait(lambda: len(h.rows.rows) > 20 and h.rows.rows)
    names = {r.get('host') for r in rows}
    want = os.uname().nodename
    return None if names == {want} else 'hosts %s, not {%r} (uname -n)' % (names, want)


def start_problems(h, p, rows, name):
    starts = {r['process'].get('start_ms') for r in rows}
    if len(starts) != 1 or None in starts:
        return ['%s: start_ms %s in its %d rows, not one value' % (name, starts, len(rows))]
    start = starts.pop()
    problems = []
    # btime is a whole second: start_ms may be up to 1 s before the fork
    if hasattr(p, 't0_ms') and not p.t0_ms - 1010 <= start <= p.ready_ms:
        problems.append('%s: start_ms %d outside its fork %d..ready %d' %
                        (name, start, p.t0_ms, p.ready_ms))
    pid = p.pid if hasattr(p, 'pid') else p
    if start // 1000 != lstart_s(pid):
        problems.append('%s: start_ms %d, ps lstart %d s' % (name, start, lstart_s(pid)))
    print('# %s: start_ms %d, ps lstart %d s' % (name, start, lstart_s(pid)))
    return problems


def t_start_ms(h):
    sleeper = h.spawn(['sleep', 'croft-fl-sleep'])
    h.sleeper = sleeper
    rows = h.rows.wait(lambda: len(h.rows.of(h.busy)) >= 5 and len(h.rows.of(sleeper)) >= 2 and
                       h.rows.of(sleeper), 60)
    if not rows:
        return 'no rows of the sleeper'
    problems = start_problems(h, h.busy, h.rows.of(h.busy), 'busy helper')
    problems += start_problems(h, sleeper, rows, 'sleeper')
    # a process started long before the sampler: init
    init = h.rows.wait(lambda: h.rows.of(1), 60)
    problems += start_problems(h, 1, init, 'pid 1') if init else ['no rows of pid 1']
    return '; '.join(problems) or None


def t_span_ms(h):
    problems = []
    # idle rows too: the sleeper's come every idle_every polls
    if not h.rows.wait(lambda: len(h.rows.of(h.sleeper)) >= 4, 90):
        return 'fewer than 4 rows of the sleeper in 90 s'
    busy = h.rows.of(h.busy)
    if busy[0]['span_ms'] != POLL_MS:
        problems.append('first row of a new process: span_ms %d, not the poll interval %d' %
                        (busy[0]['span_ms'], POLL_MS))
    for name, rows in (('busy', busy), ('sleeper', h.rows.of(h.sleeper))):
        # the wall clock kept pace here: a row's span is the time since its previous row
        off = [(b['unix_ms'] - a['unix_ms'], b['span_ms']) for a, b in zip(rows, rows[1:])
               if b['span_ms'] != b['unix_ms'] - a['unix_ms']]
        if off:
            problems.append('%s: %d spans are not the time since the previous row: %s' %
                            (name, len(off), off[:3]))
        # the spans summed reach back from its last row to its birth: a process
        # born since the last poll is counted from one poll interval before
        # its first row, and the test forked it within that interval
        start = rows[-1]['unix_ms'] - sum(r['span_ms'] for r in rows)
        p = h.busy if name == 'busy' else h.sleeper
        if not start - POLL_MS <= p.t0_ms <= start + POLL_MS:
            problems.append('%s: its spans reach back to %d, forked at %d' %
                            (name, start, p.t0_ms))
        print('# %s: spans summed reach back to %d ms, forked at %d' % (name, start, p.t0_ms))
    idle = [r['span_ms'] for r in h.rows.of(h.sleeper)[1:]]
    print('# sleeper spans %s ms' % idle)
    return '; '.join(problems) or None


def t_span_cpu(h):
    """A process that burns 400 ms of CPU, then sleeps: the sum of cpu_cores x
    span_ms over its rows is its CPU time as the scheduler counts it."""
    p = subprocess.Popen([ts.HELPER, 'bursts', '400'], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE)
    h.children.append(p)
    if not p.stdout.readline().startswith(b'ready'):
        return 'the burst helper did not start'
    h.rows.wait(lambda: len(h.rows.of(p.pid)) >= 2, 30)
    p.stdin.write(b'cpu\n')
    p.stdin.flush()
    if p.stdout.readline() != b'burned\n':
        return 'the helper did not burn'
    cpu_ns = schedstat_ns(p.pid)
    # two rows after its CPU time stopped moving: every ns of it is in a row
    t_done = int(time.time() * 1000)
    rows = h.rows.wait(lambda: [r for r in h.rows.of(p.pid)
                                if r['unix_ms'] > t_done + 2 * POLL_MS], 60)
    if not rows:
        return 'no row after the burst'
    rows = h.rows.of(p.pid)
    summed = sum(r['usage']['cpu_cores'] * r['span_ms'] / 1000 for r in rows)
    truth = cpu_ns / 1e9
    print('# burst: sum cpu_cores x span_ms %.4f s over %d rows; schedstat %.4f s' %
          (summed, len(rows), truth))
    # rates carry 4 decimals: at most 0.00005 x span per row off
    slack = sum(0.00005 * r['span_ms'] / 1000 for r in rows) + 0.002
    return None if abs(summed - truth) <= slack else \
        'sum %.4f s, schedstat %.4f s (slack %.4f)' % (summed, truth, slack)


def t_restart_same_start(h):
    before = {n: h.rows.of(p)[-1]['process']['start_ms'] for n, p in
              (('busy', h.busy), ('sleeper', h.sleeper))}
    h.sampler.send_signal(signal.SIGTERM)
    h.sampler.wait(30)
    t_restart = int(time.time() * 1000)
    h.start_sampler()
    problems = []
    for n, p in (('busy', h.busy), ('sleeper', h.sleeper)):
        rows = h.rows.wait(lambda: [r for r in h.rows.of(p) if r['unix_ms'] > t_restart], 90)
        if not rows:
            problems.append('%s: no row after the restart' % n)
        elif {r['process']['start_ms'] for r in rows} != {before[n]}:
            problems.append('%s: start_ms %s after the restart, %d before' %
                            (n, {r['process']['start_ms'] for r in rows}, before[n]))
    return '; '.join(problems) or None


def t_host_reload(h):
    h.write_conf('host = fleet-node-7\n')
    t_reload = int(time.time() * 1000)
    h.sampler.send_signal(signal.SIGHUP)
    rows = h.rows.wait(lambda: [r for r in h.rows.of(h.busy)
                                if r['unix_ms'] > t_reload + 2 * POLL_MS][:3], 30)
    names = {r.get('host') for r in rows}
    return None if rows and names == {'fleet-node-7'} else \
        'rows after the reload say host %s' % names


def main():
    if os.geteuid() != 0:
        ts.skip_all('needs root (privilege drop to nobody)')
    h = ts.Harness()
    h.writer.start()
    h.start_sampler()
    tests = [('host: the kernel\'s node name by default', t_host_default),
             ('process.start_ms: ps lstart, within the fork', t_start_ms),
             ('span_ms: a first row the poll interval, then the time since the previous row',
              t_span_ms),
             ('span_ms x cpu_cores summed = the CPU time schedstat counts', t_span_cpu),
             ('process.start_ms the same after a sampler restart', t_restart_same_start),
             ('host from croft.conf, taken at reload', t_host_reload)]
    print('1..%d' % len(tests))
    failed = 0
    try:
        h.busy = h.spawn(['busy', 'croft-fl-busy'])
        for n, (name, fn) in enumerate(tests, 1):
            try:
                why = fn(h)
            except Exception as e:  # a broken test is a failure, with the reason
                why = '%s: %s' % (type(e).__name__, e)
            failed += bool(why)
            print('%s %d - %s%s' % ('not ok' if why else 'ok', n, name,
                                     ' # ' + why if why else ''))
            sys.stdout.flush()
    finally:
        h.cleanup()
        if failed:
            print('# sampler log: %s/sampler.log' % h.tmp)
        else:
            shutil.rmtree(h.tmp, ignore_errors=True)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
