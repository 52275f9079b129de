#!/usr/bin/env python3
# test-exits.py: every process counts.  croft-probe + croft-sampler (0.5 s
# polls) watch a few hundred short processes (some ioctl-ing a stand-in GPU
# node, some in a cgroup made to look like a Docker container's), long ones
# that exit mid-poll and some killed; each is reaped with wait4, whose
# rusage is the reference.  Every process started has rows and one last
# row; its rows' cpu_cores x span_ms add up to its CPU time (1%), per
# process and per cgroup; its exit code or signal is what wait4 said.  A
# clean stop then writes the idle processes' rows up to the stop.
# Runs as root (real probe, real cgroups).
# test-exits.py CROFT_PROBE PROBE_WORK CROFT_SAMPLER
import json
import os
import signal
import sys
import time

from probetest import Tap, require_bpf, skip, wait_for
from rowtest import Stack, proc_key, rows_of_key
from cgroupfs import cgroup_mounts  # tests/lib, on the path probetest gives

CONTAINER_ID = 'c0ffee' * 10 + 'beef'
SHORT, IN_CONTAINER, GPU_USERS, FAILING, LONG = 160, 60, 40, 20, 6


def container_cgroups():
    """A cgroup where Docker makes its scopes (system.slice/docker-<id>.scope),
    in the memory hierarchy and cgroup2 (what rows name on hybrid and v2
    hosts): [the dirs made, outermost first], [the scopes]."""
    made, scopes = [], []
    mounts = cgroup_mounts()
    for mount in (mounts.get('memory'), mounts.get('v2')):
        if not mount:
            continue
        scopes.append(os.path.join(mount, 'system.slice', 'docker-%s.scope' % CONTAINER_ID))
        for d in (os.path.dirname(scopes[-1]), scopes[-1]):
            if not os.path.isdir(d):
                os.mkdir(d)
                made.append(d)
    if not scopes:
        skip('no cgroup hierarchy mounted')
    return made, scopes


def joiner(scopes):
    def join():
        for d in scopes:
            with open(os.path.join(d, 'cgroup.procs'), 'w') as f:
                f.write('0')
    return join


def run_all(st, work, node, scope):
    """Starts every process, reaps each with wait4: {proc_key: (status, cpu_s, in_container)}."""
    done, running, reaped = {}, {}, set()

    def reap(pid):
        key = proc_key(pid)
        _, status, ru = os.wait4(pid, 0)
        done[key] = (status, ru.ru_utime + ru.ru_stime, running.pop(pid))
        reaped.add(pid)

    jobs = ([([work, 'burn', '0.03'], False) for i in range(SHORT)] +
            [([work, 'burn', '0.03'], True) for i in range(IN_CONTAINER)] +
            [([work, 'ioctl', node, '5000', '0'], False) for _ in range(GPU_USERS)] +
            [([work, 'no-such-mode'], False) for _ in range(FAILING)])
    longs = [st.spawn([work, 'burn', '1.3'], preexec_fn=joiner(scope) if i % 2 else None)
             for i in range(LONG)]
    running.update((p.pid, bool(i % 2)) for i, p in enumerate(longs))
    shorts = []
    for n, (args, contained) in enumerate(jobs):
        p = st.spawn(args, preexec_fn=joiner(scope) if contained else None,
                     stdout=open(os.devnull, 'w'), stderr=open(os.devnull, 'w'))
        running[p.pid] = contained
        shorts.append(p.pid)
        if n == len(jobs) // 3:
            for lp in longs[:2]:  # mid-poll, by a signal
                lp.send_signal(signal.SIGKILL)
        while len(shorts) > 4:  # the oldest first: wait4(-1) could take the daemons' exits
            reap(shorts.pop(0))
    for pid in shorts + [p.pid for p in longs]:
        reap(pid)
    for p in st.children:  # reaped above: Popen must not wait for them again
        if p.pid in reaped:
            p.returncode = 0
    return done


def rmdir_done(d):
    try:
        os.rmdir(d)
        return True
    except OSError:
        return False


def cpu_of(rows):
    return sum(r['usage']['cpu_cores'] * r['span_ms'] for r in rows) / 1000.0


def rounding_of(rows):
    """What cpu_cores' 4 decimals (croft-dataset(5)) can lose over the rows: half a unit each."""
    return sum(0.00005 * r['span_ms'] for r in rows) / 1000.0


def main():
    require_bpf()
    probe_bin, work, sampler_bin = sys.argv[1:4]
    tap = Tap()
    made, scope = container_cgroups()
    st = Stack(probe_bin, sampler_bin, conf='[probe]\ngpu_devices = 1:7\n')
    try:
        node = os.path.join(st.probe.dir, 'gpu0')
        os.mknod(node, 0o666 | 0o020000, os.makedev(1, 7))
        sleepers = [st.spawn(['sleep', '600']) for _ in range(3)]
        st.start_sampler()
        time.sleep(1.5)  # the probe's baseline answer is behind us
        done = run_all(st, work, node, scope)
        try:
            wait_for(lambda: all(any('exited' in r for r in rows_of_key(st.rows.of, k)) for k in done),
                     60, 'a last row for each process')
        except TimeoutError:
            pass  # the checks below say which
        rows = {k: rows_of_key(st.rows.of, k) for k in done}
        last = {pid: [r for r in rs if 'exited' in r] for pid, rs in rows.items()}
        # an answer the sampler did not have in time takes its finals with it (counted):
        # those processes end "vanished"
        lost = st.sampler_status()['probe_link']['answers_lost']
        from_probe = ('probe', 'between_polls') + (('vanished',) if lost else ())
        tap.ok(all(len(v) == 1 and v[0]['exited'] in from_probe and
                   v == rs[-1:] for v, rs in zip(last.values(), rows.values())),
               'each of %d processes has rows and exactly one last row, from the probe '
               '(%d answers lost)' % (len(done), lost),
               json.dumps([st.probe.status()['finals'],
                           {p: [r.get('exited') for r in rs] for p, rs in rows.items()
                            if len(last[p]) != 1 or last[p][0]['exited'] not in
                            ('probe', 'between_polls')}])[:1500])
        kinds = [v[0]['exited'] for v in last.values() if v]
        print('# last rows: %d probe, %d between_polls' %
              (kinds.count('probe'), kinds.count('between_polls')))
        bad = {}
        for pid, (status, cpu_s, _) in done.items():
            if last[pid] and last[pid][0]['exited'] == 'vanished':
                continue  # what it did after its last reading is unknown
            got = cpu_of(rows[pid])
            if abs(got - cpu_s) > 0.01 * cpu_s + rounding_of(rows[pid]):
                bad[pid] = (round(got, 6), round(cpu_s, 6), [r['span_ms'] for r in rows[pid]])
        tap.ok(not bad, 'per process: rows\' cpu_cores x span_ms = wait4\'s CPU time (1%, and '
               'the 4 decimals\' rounding)',
               json.dumps(dict(list(bad.items())[:8])))
        whole = {p: d for p, d in done.items()
                 if not last[p] or last[p][0]['exited'] != 'vanished'}
        ours = [r for pid in whole for r in rows[pid]
                if r['process'].get('container_id') == CONTAINER_ID]
        want = sum(cpu for _, cpu, contained in whole.values() if contained)
        # a row read between its fork and its joining names the cgroup it was in:
        # the container's rows are those of its processes, and hold their CPU time
        tap.ok(abs(cpu_of(ours) - want) <= 0.01 * want + rounding_of(ours) and
               {k for k in whole if any(r in ours for r in rows[k])} ==
               {k for k, d in whole.items() if d[2]},
               'per cgroup: the container\'s rows hold its processes\' CPU time (1%)',
               '%.4f of %.4f s; %s' % (cpu_of(ours), want, json.dumps(
                   [rows[p][-1]['process'] for p, d in done.items() if d[2] and rows[p]][:2])))
        wrong = {}
        for pid, (status, _, _) in done.items():
            lr = last[pid][0] if last[pid] else {}
            want = (('exit_signal', os.WTERMSIG(status)) if os.WIFSIGNALED(status) else
                    ('exit_code', os.WEXITSTATUS(status)))
            if lr.get('exited') == 'vanished':
                continue
            if lr.get(want[0]) != want[1] or 'exit_ms' not in lr:
                wrong[pid] = (want, lr.get('exit_code'), lr.get('exit_signal'))
        killed = sum(os.WIFSIGNALED(d[0]) for d in done.values())
        tap.ok(not wrong and killed, 'exit codes and signals are what wait4 said (%d killed)' %
               killed, json.dumps(wrong)[:800])
        gpu = [pid for pid in done if any(r.get('ioctl_count') for r in rows[pid])]
        tap.ok(len(gpu) == GPU_USERS and
               all(sum(r.get('ioctl_count', 0) for r in rows[p]) == 5000 for p in gpu),
               'GPU users: every ioctl in their rows', '%d of %d' % (len(gpu), GPU_USERS))
        tap.ok(all(rs and 'cgroup' in rs[-1]['process'] and 'comm' in rs[-1]['process']
                   for rs in rows.values()), 'last rows name comm and cgroup')
        # a clean stop: the idle sleepers (a row every 15 polls) are written up to it
        t_stop = int(time.time() * 1000)
        st.sampler.terminate()
        st.sampler.wait(30)
        ends = [max([r['unix_ms'] for r in st.rows.of(p.pid)] or [0]) for p in sleepers]
        tap.ok(st.sampler.returncode == 0 and all(e >= t_stop for e in ends),
               'a clean stop writes every idle process\'s row up to the stop',
               'stopped at %d, last rows %s' % (t_stop, ends))
    finally:
        if tap.failed:
            st.print_logs()
        st.close()
        for d in reversed(made):  # a cgroup its last tasks just left may be busy a moment
            wait_for(lambda: rmdir_done(d), 10, 'rmdir ' + d)
    tap.done()


if __name__ == '__main__':
    main()
