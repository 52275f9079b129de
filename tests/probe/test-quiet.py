#!/usr/bin/env python3
# test-quiet.py: what a process does in quiet polls (less than a clock tick
# of CPU, no disk bytes) reaches the dataset, under the default idle_every:
# over a process's rows, rate x (the time the row stands for, as croft stats
# counts it: since the process's previous row, a first row one poll) is
# what it did.  getppid() bursts and trickles through `croft stats --tgid`;
# voluntary switches, loopback bytes and CPU from the rows against the
# workload's own getrusage, byte count and CLOCK_PROCESS_CPUTIME_ID; a
# process burning ~1 ms per poll reads ~0.002 cores in every row (0.5 s
# polls).  Root, real eBPF.
import json
import socket
import subprocess
import sys
import time

from probetest import Tap, require_bpf, wait_for
from rowtest import POLL_MS, Stack, syscall_rate


def free_port():
    """A loopback port free now: a fixed one collides with another checkout's run of this test."""
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def did(line):
    """The workload's "done calls=.. bytes=.. cpu_ns=.. nvcsw=.." line as a dict."""
    words = line.split()
    if not words or words[0] != 'done':
        raise RuntimeError('workload said %r' % line)
    return {k: int(v) for k, v in (w.split('=') for w in words[1:])}


def weighted(rows, key):
    """Sum of rate x the time each row stands for (the first: one poll), as croft stats."""
    total, prev = 0.0, None
    for r in rows:
        ms = POLL_MS if prev is None else r['unix_ms'] - prev
        total += key(r) * ms / 1000.0
        prev = r['unix_ms']
    return total


def stats_calls(st, croft, pid, name):
    out = subprocess.run([croft, 'stats', '--config', st.probe.conf, '--tgid', str(pid),
                          '--json', st.rows.path], capture_output=True, text=True, check=True)
    return sum(s['calls'] for s in json.loads(out.stdout)['syscalls'] if s['name'] == name)


def main():
    require_bpf()
    probe_bin, work, sampler_bin, croft = sys.argv[1:5]
    tap = Tap()
    st = Stack(probe_bin, sampler_bin)  # idle_every: the default 15
    try:
        st.start_sampler()
        # born after the sampler's first poll: their rows hold all they did (the
        # processes a sampler finds at its start are a baseline there)
        wait_for(lambda: st.sampler_status()['polls'] >= 2, 20, 'two polls')
        pipes = dict(stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        # name: (args, getppid calls expected); each starts 1.5 s in, seen by then
        specs = {'burst': (['10000', '1', '1000', '10', '0'], 10010),  # 10 000, then 1 a second
                 'steady': (['0', '250', '100', '80', '0'], 20000),   # 2 500/s for 8 s
                 'sleeps': (['0', '0', '50', '100', '0'], 0),         # 20 sleeps a second
                 'cpu': (['0', '0', '100', '80', '200'], 0)}          # 0.2 ms CPU every 100 ms
        start_ms = time.time() * 1000
        procs = {n: st.spawn([work, 'paced', '1500'] + a, **pipes) for n, (a, _) in specs.items()}
        port = free_port()
        recv = st.spawn([work, 'recv', str(port)], **pipes)
        recv.stdout.readline()
        send = st.spawn([work, 'sendpaced', str(port), '100', '100', '80'], **pipes)
        done = {n: did(p.stdout.readline()) for n, p in list(procs.items()) + [('send', send)]}
        done_ms = time.time() * 1000
        every = list(procs.values()) + [send, recv]
        # the poll after "done" has a row (it wrote): the rows then cover all it did
        for p in every:
            st.wait_rows(p.pid, lambda rs: any(r['unix_ms'] > done_ms for r in rs))
        rows = {n: st.rows.of(p.pid) for n, p in list(procs.items()) + [('send', send)]}
        rows['recv'] = st.rows.of(recv.pid)

        for name in ('burst', 'steady'):
            want = specs[name][1]
            got = stats_calls(st, croft, procs[name].pid, 'getppid')
            rowsum = weighted(rows[name], lambda r: syscall_rate(r, 'getppid'))
            tap.ok(done[name]['calls'] == want and abs(got - want) <= 1,
                   '%s: croft stats --tgid counts every getppid of quiet polls' % name,
                   'stats %d, rows %.1f, workload %d' % (got, rowsum, done[name]['calls']))

        for name in ('burst', 'steady', 'sleeps', 'cpu'):
            v = weighted(rows[name], lambda r: r['usage'].get('ctx_voluntary_s', 0))
            # one more after "done": the read that holds it
            want = done[name]['nvcsw']
            tap.ok(want <= round(v) <= want + 2, '%s: voluntary switches of quiet polls kept' % name,
                   'rows %.1f, getrusage %d at done' % (v, want))

        for name, key in (('send', 'network_tx_bytes_s'), ('recv', 'network_rx_bytes_s')):
            v = weighted(rows[name], lambda r: r['usage'].get(key, 0))
            tap.ok(abs(v - 8000) <= 1, '%s: loopback bytes of quiet polls kept' % name,
                   '%s: rows %.1f of %d sent' % (key, v, done['send']['bytes']))

        cpu_rows = rows['cpu']
        cpu_s = weighted(cpu_rows, lambda r: r['usage']['cpu_cores'])
        own_s = done['cpu']['cpu_ns'] / 1e9
        tap.ok(abs(cpu_s - own_s) <= max(0.03 * own_s, 0.0005),
               'cpu: rows sum to the process\'s own CPU clock',
               'rows %.4f s, CLOCK_PROCESS_CPUTIME_ID %.4f s' % (cpu_s, own_s))
        # rows whose span lies within the 8 s of burning
        burn0, burn1 = start_ms + 1500 + 200, start_ms + 1500 + 8000 - 200
        mid = [r['usage']['cpu_cores'] for q, r in zip(cpu_rows, cpu_rows[1:])
               if q['unix_ms'] > burn0 and r['unix_ms'] < burn1]
        tap.ok(len(mid) >= 8 and all(0.001 <= c <= 0.0035 for c in mid),
               'cpu: ~1 ms per poll reads ~0.002 cores in every row, in ns not ticks',
               ' '.join('%g' % c for c in mid))
    finally:
        if tap.failed:
            st.print_logs()
        st.close()
    tap.done()


if __name__ == '__main__':
    main()
