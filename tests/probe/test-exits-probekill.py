#!/usr/bin/env python3
# test-exits-probekill.py: every process counts, and what cannot be counted
# is said, when croft-probe is SIGKILLed in the middle and started again (as
# croft run restarts it; here the test does, on the same socket).
# croft-probe + croft-sampler (0.5 s polls) watch short processes started
# one after another, each reaped with wait4, before, during and after the
# probe's absence.  Whatever was seen gets exactly one last row; those whose
# final figures went with the probe end "vanished", and the sampler's status
# counts each of them; the rest hold wait4's CPU time (1%).  A process with
# no row at all lived wholly while the probe was away.  Root, real eBPF.
# test-exits-probekill.py CROFT_PROBE PROBE_WORK CROFT_SAMPLER
import json
import os
import signal
import sys
import time

from probetest import Tap, require_bpf, wait_for
from rowtest import POLL_MS, Stack, proc_key, rows_of_key

PHASE_S = 3.0  # starting processes before the kill, while away, after the restart


def burn_for(st, work, seconds, out):
    """Short processes one after another for `seconds`;
    out[proc_key] = (born, ended, status, cpu_s), wall ms."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        born = time.time() * 1000
        p = st.spawn([work, 'burn', '0.02'])
        key = proc_key(p.pid)
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = 0  # reaped here: Popen must not wait for it again
        out[key] = (born, time.time() * 1000, status, ru.ru_utime + ru.ru_stime)


def probe_connected(st):
    return st.sampler_status()['probe'].startswith('connected')


def main():
    require_bpf()
    probe_bin, work, sampler_bin = sys.argv[1:4]
    tap = Tap()
    st = Stack(probe_bin, sampler_bin)
    try:
        st.start_sampler()
        wait_for(lambda: probe_connected(st), 30, 'the sampler connected to the probe')
        time.sleep(1.5)  # the probe's baseline answer is behind us
        done = {}
        burn_for(st, work, PHASE_S, done)
        killed_ms = time.time() * 1000
        st.probe.kill(signal.SIGKILL)
        burn_for(st, work, PHASE_S, done)
        st.probe.start()
        wait_for(lambda: probe_connected(st), 30, 'the sampler back on the new probe')
        back_ms = time.time() * 1000
        time.sleep(1.5)  # the new probe's baseline answer
        burn_for(st, work, PHASE_S, done)
        # around the absence: a poll either side, for the answer in flight
        margin = 2 * POLL_MS

        def probe_saw(p):  # ended before the kill or began after the restart
            return done[p][1] < killed_ms - margin or done[p][0] > back_ms + margin
        # vanished rows come 3 polls and at least 10 s after the last sight; the
        # last processes' finals come with the next answer
        try:
            wait_for(lambda: all(any('exited' in r for r in rows_of_key(st.rows.of, pid))
                                 for pid in done if probe_saw(pid) or rows_of_key(st.rows.of, pid)),
                     60, 'last rows')
        except TimeoutError:
            pass  # the checks below say which
        rows = {pid: rows_of_key(st.rows.of, pid) for pid in done}
        last = {pid: [r for r in rs if 'exited' in r] for pid, rs in rows.items()}
        seen = [pid for pid in done if rows[pid]]
        tap.ok(all(len(last[p]) == 1 and last[p] == rows[p][-1:] for p in seen),
               'each of %d processes with rows has exactly one last row, its last' % len(seen),
               json.dumps({p: [r.get('exited') for r in rows[p]] for p in seen
                           if len(last[p]) != 1 or last[p] != rows[p][-1:]})[:800])
        kinds = [last[p][0]['exited'] for p in seen if last[p]]
        print('# %d processes: %d probe, %d between_polls, %d vanished, %d without a row' %
              (len(done), kinds.count('probe'), kinds.count('between_polls'),
               kinds.count('vanished'), len(done) - len(seen)))

        # every vanished row on the host (the killed probe's own among them),
        # once the rows counted have reached the writer
        def vanished():
            return (st.sampler_status()['last_rows']['vanished'],
                    sum(r.get('exited') == 'vanished' for r in st.rows.refresh()))
        try:
            wait_for(lambda: vanished()[0] == vanished()[1], 10, 'the count and the rows agree')
        except TimeoutError:
            pass  # the check says how they differ
        counted, written = vanished()
        tap.ok(counted == written and kinds.count('vanished') <= written,
               'the sampler counts every vanished row (last_rows.vanished)',
               'status %d, rows %d (ours %d)' % (counted, written, kinds.count('vanished')))
        unseen = [p for p in done if not rows[p]]
        outside = [p for p in unseen if probe_saw(p)]
        tap.ok(not outside, 'a process without a row lived wholly while the probe was away',
               'away %d..%d ms; %s' % (killed_ms, back_ms,
                                       json.dumps({p: done[p][:2] for p in outside})[:600]))
        bad = {}
        for pid in seen:
            if last[pid] and last[pid][0]['exited'] == 'vanished':
                continue  # what it did after its last reading went with the probe
            got = sum(r['usage']['cpu_cores'] * r['span_ms'] for r in rows[pid]) / 1000.0
            rounding = sum(0.00005 * r['span_ms'] for r in rows[pid]) / 1000.0
            if abs(got - done[pid][3]) > 0.01 * done[pid][3] + rounding:
                bad[pid] = (round(got, 6), round(done[pid][3], 6))
        tap.ok(not bad, 'the rest hold wait4\'s CPU time (1%, and the 4 decimals\' rounding)',
               json.dumps(dict(list(bad.items())[:8])))
        before_after = [p for p in done if probe_saw(p)]
        tap.ok(before_after and all(last[p] and last[p][0]['exited'] in ('probe', 'between_polls')
                                    for p in before_after),
               'with the probe there, before the kill and after the restart, every one of %d '
               'has its last row from the probe' % len(before_after),
               json.dumps({p: [r.get('exited') for r in rows[p]] for p in before_after
                           if not last[p] or last[p][0]['exited'] not in
                           ('probe', 'between_polls')})[:800])
    finally:
        if tap.failed:
            st.print_logs()
        st.close()
    tap.done()


if __name__ == '__main__':
    main()
