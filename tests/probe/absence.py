# absence.py: what tests/probe/test-exits-probekill.py (the probe killed on
# the test's own stack) and test-exits-run.py (killed under croft run) both
# do: short processes one after another, each reaped with wait4, and the
# checks of what the rows say around the probe's absence.
import json
import os
import threading
import time

from probetest import wait_for
from rowtest import POLL_MS, proc_key, rows_of_key


def burn_for(spawn, work, seconds, out):
    """Short processes one after another for `seconds`, each started by
    spawn(args) (a Popen); out[proc_key] = (born, ended, status, cpu_s), wall ms."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        born = time.time() * 1000
        p = spawn([work, 'burn', '0.02'])
        key = proc_key(p.pid)
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = 0  # reaped here: Popen must not wait for it again
        out[key] = (born, time.time() * 1000, status, ru.ru_utime + ru.ru_stime)


# The kernel frees a reaped task (sched_process_free, where the probe takes
# its final figures) an RCU grace period after the reap: 8-32 ms measured
# with bpftrace here.
FREE_MS = 250


class AnswerWatch(threading.Thread):
    """The sampler's count of answers from the probe (status
    probe_link.answers, from answers()), read over and over while the test's
    processes run, to tell how far the answers applied before the kill
    reach."""

    def __init__(self, answers):
        super().__init__(daemon=True)
        self.answers, self.reads, self.stopping = answers, [], threading.Event()
        self.start()

    def run(self):
        while not self.stopping.wait(0.05):  # a reading every 50 ms, not a wait
            t = time.time() * 1000
            self.reads.append((t, self.answers()))

    def cut(self):
        """A time before which every reap is in an answer the sampler has
        applied, read just before the kill.  Polls ask one after another:
        answer n was asked after answer n - 1 was applied, which was after
        the last reading still showing n - 2 or fewer."""
        self.stopping.set()
        self.join()
        n, now = self.answers(), time.time() * 1000
        cut = max((t for t, seen in self.reads if seen <= n - 2), default=0)
        print('# %d answers applied, reaching at least %.0f ms before the kill' % (n, now - cut))
        return cut


def check_rows(tap, done, of, vanished, cut_ms, back_ms):
    """The rows of the processes in done (of: a pid's rows) around the probe's
    absence, from cut_ms (AnswerWatch.cut, read before the kill) to back_ms
    (the sampler back on a new probe); vanished() gives (the sampler's count
    of vanished last rows, those in the dataset, its count of those written
    from the probe's exit record alone).  Adds the TAP lines."""
    margin = 2 * POLL_MS  # a poll after the restart, for its baseline answer

    def probe_saw(p):  # reaped within the answers applied before the kill, or began after
        return done[p][1] < cut_ms - FREE_MS or done[p][0] > back_ms + margin
    # vanished rows come 3 polls and at least 10 s after the last sight; the
    # last processes' finals come with the next answer
    try:
        wait_for(lambda: all(any('exited' in r for r in rows_of_key(of, p))
                             for p in done if probe_saw(p) or rows_of_key(of, p)),
                 60, 'last rows')
    except TimeoutError:
        pass  # the checks below say which
    try:  # the rows counted must have reached the writer
        wait_for(lambda: vanished()[0] == vanished()[1], 10, 'the count and the rows agree')
    except TimeoutError:
        pass  # the check says how they differ
    counted, written, unread_counted = vanished()
    rows = {p: rows_of_key(of, p) for p in done}
    last = {p: [r for r in rs if 'exited' in r] for p, rs in rows.items()}
    seen = [p for p in done if rows[p]]
    kinds = [last[p][0]['exited'] for p in seen if last[p]]
    print('# %d processes: %d probe, %d between_polls, %d vanished, %d without a row' %
          (len(done), kinds.count('probe'), kinds.count('between_polls'),
           kinds.count('vanished'), len(done) - len(seen)))
    tap.ok(counted == written and kinds.count('vanished') <= written,
           'the sampler counts every vanished row (status last_rows.vanished)',
           'status %s, rows %d (ours %d)' % (counted, written, kinds.count('vanished')))
    tap.ok(all(len(last[p]) == 1 and last[p] == rows[p][-1:] for p in seen),
           'each of %d processes with rows has exactly one last row, its last' % len(seen),
           json.dumps({p: [r.get('exited') for r in rows[p]] for p in seen
                       if len(last[p]) != 1 or last[p] != rows[p][-1:]})[:800])
    bad = {}
    for p in seen:
        if last[p] and last[p][0]['exited'] == 'vanished':
            continue  # what it did after its last reading went with the probe
        got = sum(r['usage']['cpu_cores'] * r['span_ms'] for r in rows[p]) / 1000.0
        rounding = sum(0.00005 * r['span_ms'] for r in rows[p]) / 1000.0
        if abs(got - done[p][3]) > 0.01 * done[p][3] + rounding:
            bad[p] = (round(got, 6), round(done[p][3], 6))
    tap.ok(not bad, 'the rest hold wait4\'s CPU time (1%, and the 4 decimals\' rounding)',
           json.dumps(dict(list(bad.items())[:8])))
    before_after = [p for p in done if probe_saw(p)]

    def from_probe(p):
        return last[p] and last[p][0]['exited'] in ('probe', 'between_polls')

    def late(p):  # its final never came in time: the kernel had not freed it
        return last[p] and last[p][0]['exited'] == 'vanished'
    late_ours = [p for p in before_after if late(p)]
    unread_ours = [p for p in late_ours if rows[p] == last[p] and last[p][0]['span_ms'] == 0]
    # the kernel's free lagged past the wait for 1 in 200-400 processes at load 6-10 here
    tap.ok(before_after and all(from_probe(p) or late(p) for p in before_after) and
           len(late_ours) <= len(before_after) // 20 and len(unread_ours) <= unread_counted,
           'with the probe there, before the kill and after the restart, every one of %d '
           'has its last row from the probe, or vanished where the kernel did not free it in '
           'time (%d, 5%% at most; %d no poll read, written from the exit record: status '
           'last_rows.vanished_unread %d)'
           % (len(before_after), len(late_ours), len(unread_ours), unread_counted),
           json.dumps({p: [r.get('exited') for r in rows[p]] for p in before_after
                       if not from_probe(p)})[:800])
    outside = [p for p in done if not rows[p] and probe_saw(p)]
    tap.ok(not outside, 'a process without a row lived wholly while the probe was away',
           'answered until %d, back %d ms; %s' % (cut_ms, back_ms,
                                   json.dumps({p: done[p][:2] for p in outside})[:600]))
    for p in outside[:4]:  # what its pid has, whatever the start
        print('# rows of pid %s: %s' % (p, json.dumps([
            (r['process'].get('start_ms'), r['unix_ms'], r.get('exited'))
            for r in of(int(p.split('@')[0]))])[:600]))
