#!/usr/bin/env python3
# test-exits.py: every process counts.  croft-probe + croft-sampler (0.5 s
# polls) watch a few hundred short processes (some ioctl-ing a stand-in GPU
# node, some in a cgroup made to look like a Docker container's), long ones
# that exit mid-poll and some killed; each is reaped with wait4, whose
# rusage is the reference.  Every process started has rows and one last
# row; its rows' cpu_cores x span_ms add up to its CPU time (1%), per
# process and per cgroup; its exit code or signal is what wait4 said.  A
# clean stop then writes the idle processes' rows up to the stop.  Short
# processes exec'd with an argv the built-in catalog's cmdline rules match
# (or not; longer than the probe keeps; hostile bytes), and children forked
# without an exec: a between-polls row's framework is the one those rules
# give the argv the probe kept (worked out here from the catalog file),
# left out for the forked.  Runs as root (real probe, real cgroups).
# test-exits.py CROFT_PROBE PROBE_WORK CROFT_SAMPLER
import json
import os
import signal
import subprocess
import sys
import time

from probetest import Tap, require_bpf, skip, wait_for
from rowtest import Stack, proc_key, rows_of_key
from cgroupfs import cgroup_mounts  # tests/lib, on the path probetest gives
from wire import PROBE_ARGV_BYTES

CONTAINER_ID = 'c0ffee' * 10 + 'beef'
SHORT, IN_CONTAINER, GPU_USERS, FAILING, LONG = 160, 60, 40, 20, 6
CATALOG = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'catalog',
                       'frameworks.json')  # the built-in one, as the build embeds it
ARGV_TRIES = 5  # of each: a poll may catch one alive
# forks ARGV_TRIES children that exit at once, no exec; prints each one's pid and start
FORKER = r"""
import os, sys
for _ in range(int(sys.argv[1])):
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    with open('/proc/%d/stat' % pid) as f:  # a zombie until the wait
        print(pid, f.read().rsplit(')', 1)[1].split()[19], flush=True)
    os.waitpid(pid, 0)
"""


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


def argv_cases():
    """(what, argv) of short processes whose argv alone can tell their framework."""
    cut = b'x' * (PROBE_ARGV_BYTES - len(b'/bin/true\0') - 8)  # its word's first 8 kept
    return [('spark-class\'s launcher', [b'/bin/true', b'-Xmx128m', b'-cp', b'/opt/spark/jars/*',
                                          b'org.apache.spark.launcher.Main']),
            ('pyspark\'s daemon', [b'/bin/true', b'-m', b'pyspark.daemon']),
            ('no word of the catalog\'s (one across two arguments)',
             [b'/bin/true', b'spark', b'org.apache', b'.spark']),
            ('its word, then twice the bound', [b'/bin/true', b'pyspark',
                                                 b'x' * 2 * PROBE_ARGV_BYTES]),
            ('its word past the bound', [b'/bin/true', b'x' * PROBE_ARGV_BYTES, b'pyspark']),
            ('its word cut by the bound', [b'/bin/true', cut + b'org.apache.spark.deploy']),
            ('hostile bytes and its word', [b'/bin/true', b'a\nb"c\\d\xff\xfe\t',
                                            b'\x1b[31m pyspark \xc3\x28']),
            ('hostile bytes, no word', [b'/bin/true', b'\n"\xff\xfe', b'pys\xffpark\n'])]


def catalog_framework(argv):
    """The framework croft-frameworks(5)'s cmdline rules give what the probe keeps of
    argv (its first PROBE_ARGV_BYTES bytes, a NUL after each argument): the first entry
    with a word inside one argument, else None."""
    kept = b''.join(a + b'\0' for a in argv)[:PROBE_ARGV_BYTES].split(b'\0')
    with open(CATALOG) as f:
        for entry in json.load(f):
            if any(w.encode() in a for w in entry.get('cmdline', ()) for a in kept):
                return entry['name']
    return None


def spawn_short(st):
    """Every argv case ARGV_TRIES times, then children forked by a process whose own
    argv the catalog matches: {proc_key: (what, framework its between-polls row gets)}."""
    want = {}
    for what, argv in argv_cases():
        for _ in range(ARGV_TRIES):
            pid = os.posix_spawn(argv[0], argv, {})
            want[proc_key(pid)] = (what, catalog_framework(argv))
            os.waitpid(pid, 0)
    forker = st.spawn([sys.executable, '-c', FORKER, str(ARGV_TRIES), 'pyspark'],
                      stdout=subprocess.PIPE, text=True)
    for line in forker.stdout:
        pid, ticks = (int(x) for x in line.split())
        want[proc_key(pid, ticks)] = ('forked, its exec not seen', None)
    forker.wait()
    return want


def check_frameworks(st, tap):
    """Between-polls rows of the short processes: the framework their argv tells."""
    want = spawn_short(st)
    try:
        wait_for(lambda: all(any('exited' in r for r in rows_of_key(st.rows.of, k))
                             for k in want), 60, 'a last row for each short process')
    except TimeoutError:
        pass  # the check below says which
    seen, wrong = set(), {}
    for key, (what, framework) in want.items():
        for r in rows_of_key(st.rows.of, key):  # every line JSON (Rows), hostile bytes too
            if r.get('exited') != 'between_polls':
                continue  # a poll caught it alive: /proc's cmdline and maps tell it
            seen.add(what)
            if r['process'].get('framework') != framework:
                wrong[key] = (what, framework, r['process'].get('framework'))
    cases = {w for w, _ in want.values()}
    tap.ok(not wrong and seen == cases and
           {f for _, f in want.values()} == {'spark', None},
           'born and gone between polls: the framework the catalog gives the argv its exec '
           'was given (cut at %d bytes), none where it tells none or no exec was seen' %
           PROBE_ARGV_BYTES,
           json.dumps(dict(wrong=list(wrong.values())[:6],
                           without_such_row=sorted(cases - seen))))


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
        # those processes end "vanished"; so does one the kernel freed (where the probe
        # takes its final) past the wait, 1 in 200-400 at load 6-10 here: 5% at most
        lost = st.sampler_status()['probe_link']['answers_lost']
        late = sum(1 for v in last.values() if v and v[0]['exited'] == 'vanished')
        tap.ok(all(len(v) == 1 and v[0]['exited'] in ('probe', 'between_polls', 'vanished') and
                   v == rs[-1:] for v, rs in zip(last.values(), rows.values())) and
               (lost or late <= len(done) // 20),
               'each of %d processes has rows and exactly one last row, from the probe '
               '(%d answers lost; %d vanished)' % (len(done), lost, late),
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
        # a group no poll read, whose final never came, is known by its exit record
        # alone: comm, no cgroup, no workload (sampler/core/exits.c)
        tap.ok(all(rs and 'comm' in rs[-1]['process'] and
                   ('cgroup' in rs[-1]['process'] or 'workload' not in rs[-1])
                   for rs in rows.values()), 'last rows name comm and cgroup',
               json.dumps([rs[-1] for rs in rows.values()
                           if rs and 'cgroup' not in rs[-1]['process']][:2]))
        check_frameworks(st, tap)
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
