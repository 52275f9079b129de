#!/usr/bin/env python3
# test-rows.py: croft-probe's fields in croft-sampler's finished rows.
# Exact getppid counts (rate x span_ms sums to K within 0.5%); GPU ioctls on
# a device node made here (ioctl_count, no-gpu -> gpu-onset -> gpu-held,
# since_last_gpu_ioctl_ms, /dev/null not counted, a holder gpu-held from its
# first row, GPU users gone between polls counted); voluntary switches,
# run-queue wait and loopback TCP rates; the probe SIGKILLed and restarted
# mid-run.  Root, real eBPF.
import json
import os
import signal
import subprocess
import sys
import time

from probetest import Tap, require_bpf, wait_for
from rowtest import POLL_MS, Stack, syscall_rate

ONSET_S = 2.0


def row_spans(rows):
    """(row, the seconds its rates cover: span_ms) for every row, the first
    included, as croft stats sums them (the poll times between rows differ
    from the spans by how late each process was read in its poll)."""
    return [(r, r['span_ms'] / 1000.0) for r in rows]


def finish(st, p, more_rows=2, pred=None):
    """Waits for the workload's "done", then for more_rows rows after it (and pred); ends it."""
    p.stdout.readline()
    done_ms = time.time() * 1000
    rows = st.wait_rows(p.pid, lambda rs: len([r for r in rs if r['unix_ms'] > done_ms]) >=
                        more_rows and (pred is None or pred(rs)), timeout=180)
    p.stdin.close()
    p.wait()
    return rows


def t_getppid(tap, st, work):
    k = 100000
    w = st.spawn([work, 'getppid', str(k), '8', '1.5', '-1'], stdin=subprocess.PIPE,
                 stdout=subprocess.PIPE, text=True)
    rows = finish(st, w)
    total = sum(syscall_rate(r, 'getppid') * dt for r, dt in row_spans(rows))
    tap.ok(abs(total - k) <= 0.005 * k, 'rows: getppid rate x span sums to K (0.5%)',
           '%.0f of %d over %d rows' % (total, k, len(rows)))
    top = [r['syscalls'][0]['name'] for r in rows if r.get('syscalls') and
           syscall_rate(r, 'getppid') > 1000]
    tap.ok(top and all(n == 'getppid' for n in top), 'syscalls are named and sorted by rate')


def t_gpu(tap, st, work, node, holder):
    m = 777
    pipes = dict(stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    g = st.spawn([work, 'ioctl', node, str(m), '-1', '1.2'], **pipes)
    n = st.spawn([work, 'ioctl', '/dev/null', '500', '-1', '1.2'], **pipes)
    # past the onset window, and some polls more for since_last_gpu_ioctl_ms
    def held_a_while(rs):
        states = [r['workload'] for r in rs]
        return 'gpu-onset' in states and states[states.index('gpu-onset'):].count('gpu-held') >= 5

    rows = finish(st, g, pred=held_a_while)
    finish(st, n)
    states = [r['workload'] for r in rows]
    got = sum(r.get('ioctl_count', 0) for r in rows)
    tap.ok(got == m, 'rows: ioctl_count sums to M', '%d of %d' % (got, m))
    order = [s for i, s in enumerate(states) if i == 0 or states[i - 1] != s]
    # a poll may fall between the open() and the first ioctl: the file is then
    # held without an ioctl yet, which the sampler calls gpu-held for that poll
    tap.ok(order in (['no-gpu', 'gpu-onset', 'gpu-held'],
                     ['no-gpu', 'gpu-held', 'gpu-onset', 'gpu-held']),
           'no-gpu -> gpu-onset -> gpu-held', ' '.join(order))
    onset = [r['unix_ms'] for r in rows if r['workload'] == 'gpu-onset']
    held = [r['unix_ms'] for r in rows if r['workload'] == 'gpu-held' and onset and
            r['unix_ms'] > onset[0]]
    span = (held[0] - onset[0]) / 1000.0 if onset and held else 0
    tap.ok(abs(span - ONSET_S) <= POLL_MS / 1000 + 0.05, 'gpu-held comes onset_window after '
           'gpu-onset (to a poll: the first ioctl is known to its poll interval)', '%.2fs' % span)
    # after the last ioctl it grows by each poll's interval (the rows' own clock)
    since = [(r['unix_ms'], r['since_last_gpu_ioctl_ms']) for r in rows
             if 'since_last_gpu_ioctl_ms' in r][1:]
    steps = [(b[1] - a[1], b[0] - a[0]) for a, b in zip(since, since[1:])]
    tap.ok(len(steps) >= 4 and all(abs(d - dt) <= 40 and abs(dt - POLL_MS) <= POLL_MS / 2
                                   for d, dt in steps),
           'since_last_gpu_ioctl_ms grows by the poll interval', str(steps))
    nrows = st.rows.of(n.pid)
    tap.ok(nrows and all(r['workload'] == 'no-gpu' and 'ioctl_count' not in r for r in nrows),
           '/dev/null ioctls: no-gpu, no ioctl_count')
    hrows = st.rows.of(holder.pid)
    tap.ok(hrows and hrows[0]['workload'] == 'gpu-held', 'a holder from before start is '
           'gpu-held in its first row', hrows and hrows[0]['workload'])
    before = st.sampler_status()
    ghosts = [st.spawn([work, 'ioctl', node, '10', '0']) for _ in range(5)]
    for p in ghosts:
        p.wait()
    # their finals reach the sampler with the probe's next answer: three polls on
    wait_for(lambda: st.sampler_status()['polls'] >= before['polls'] + 3, 30, 'three polls')
    last = {p.pid: (st.rows.of(p.pid) or [{}])[-1] for p in ghosts}
    tap.ok(all(r.get('exited') in ('between_polls', 'probe') and r.get('exit_code') == 0 and
               'exit_ms' in r for r in last.values()),
           'GPU users gone between polls: each has a last row with its exit code',
           json.dumps(last))
    tap.ok(all(sum(r.get('ioctl_count', 0) for r in st.rows.of(p.pid)) == 10 for p in ghosts),
           'GPU users gone between polls: their rows hold their 10 GPU ioctls each')


def steady(rows, key, sub='usage'):
    """A figure over the rows of a workload's middle (first two and last
    dropped): rate x span summed over the spans summed."""
    mid = [r for r in rows[2:-1] if key in r.get(sub, {})]
    span_ms = sum(r['span_ms'] for r in mid)
    return sum(r[sub][key] * r['span_ms'] for r in mid) / span_ms if span_ms else float('nan')


def t_sched_net(tap, st, work):
    # the sleeper reports its own voluntary switches (getrusage) at exit:
    # the pace a timer gives 1 ms sleeps is the host's, not the test's
    s_born = time.monotonic()
    s = st.spawn([work, 'sleeps', '1000', '5'], stderr=subprocess.PIPE, text=True,
                 env=dict(os.environ, PROBE_WORK_REPORT='1'))
    a = st.spawn([work, 'spin', '0', '5'])
    b = st.spawn([work, 'spin', '0', '5'])
    r = st.spawn([work, 'recv', '0'], stdout=subprocess.PIPE, text=True)
    port = r.stdout.readline().split()[1]
    w = st.spawn([work, 'send', port, '1000000', '5'])
    s.wait()
    s_lived = time.monotonic() - s_born
    for p in (a, b, w, r):
        p.wait()
    time.sleep(2 * POLL_MS / 1000)
    v = steady(st.rows.of(s.pid), 'ctx_voluntary_s')
    rep = [x for x in s.stderr.read().splitlines() if x.startswith('report ')][-1]
    k = {a: int(b) for a, b in (f.split('=') for f in rep.split()[1:])}
    own = k['nvcsw'] / s_lived
    tap.ok(abs(v - own) <= 0.05 * own, 'rows: 1000 sleeps/s -> ctx_voluntary_s = its own rate '
           '(getrusage, 5%)', '%.1f, its own %.1f' % (v, own))
    for p in (a, b):
        q = steady(st.rows.of(p.pid), 'runqueue_s')
        tap.ok(abs(q - 0.5) <= 0.1, 'rows: two loops on one CPU -> runqueue_s ~ 0.5', '%.3f' % q)
    tx = steady(st.rows.of(w.pid), 'network_tx_bytes_s')
    rx = steady(st.rows.of(r.pid), 'network_rx_bytes_s')
    tap.ok(abs(tx - 1e6) <= 5e4, 'rows: sender network_tx_bytes_s ~ 1 MB/s (5%)', '%.0f' % tx)
    tap.ok(abs(rx - 1e6) <= 5e4, 'rows: receiver network_rx_bytes_s ~ 1 MB/s (5%)', '%.0f' % rx)


def t_restart(tap, st, work):
    rate, secs = 10000.0, 20
    t0_ms = time.time() * 1000
    w = st.spawn([work, 'getppid', str(int(rate * secs)), str(secs), '1', '1'])
    st.wait_rows(w.pid, lambda rs: any(syscall_rate(r, 'getppid') > 0 for r in rs))
    st.probe.kill(signal.SIGKILL)
    killed_ms = time.time() * 1000
    wait_for(lambda: 'not connected' in st.sampler_status()['probe'], 10, 'probe state')
    tap.ok(True, 'status says why while the probe is down', st.sampler_status()['probe'])
    time.sleep(1.5)
    st.probe.start()
    back_ms = time.time() * 1000
    rows = st.wait_rows(w.pid, lambda rs: any(r['unix_ms'] > back_ms + 3 * POLL_MS for r in rs))
    down = [r for r in rows if killed_ms + POLL_MS < r['unix_ms'] < back_ms]
    tap.ok(down and all('syscalls' not in r and 'runqueue_s' not in r['usage'] for r in down),
           'probe down: rows go on without its fields', '%d rows' % len(down))
    after = [r for r in rows if r['unix_ms'] > back_ms]
    first = next((r for r in after if 'syscalls' in r), None)
    tap.ok(first is not None and first['unix_ms'] <= after[0]['unix_ms'] + 2 * POLL_MS,
           'probe back: fields return within two polls')
    calls_end_ms = t0_ms + (1 + secs) * 1000
    rates = [syscall_rate(r, 'getppid') for r in after
             if 'syscalls' in r and r['unix_ms'] < calls_end_ms - POLL_MS]
    tap.ok(rates and all(abs(x - rate) <= 0.25 * rate for x in rates),
           'no rate spans the gap', ' '.join('%.0f' % x for x in rates[:6]))
    w.wait()


def main():
    require_bpf()
    probe_bin, work, sampler_bin = sys.argv[1], sys.argv[2], sys.argv[3]
    tap = Tap()
    st = Stack(probe_bin, sampler_bin,
               'idle_every = 1\nonset_window = %gs\n[probe]\ngpu_devices = 1:7\n' % ONSET_S)
    try:
        node = os.path.join(st.probe.dir, 'gpu0')
        os.mknod(node, 0o666 | 0o020000, os.makedev(1, 7))
        holder = st.spawn([work, 'ioctl', node, '0', '60'])
        time.sleep(0.3)
        st.start_sampler()
        t_getppid(tap, st, work)
        t_gpu(tap, st, work, node, holder)
        t_sched_net(tap, st, work)
        t_restart(tap, st, work)
    finally:
        if tap.failed:
            st.print_logs()
        st.close()
    tap.done()


if __name__ == '__main__':
    main()
