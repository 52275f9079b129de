#!/usr/bin/env python3
# test_prom.py: croft.prom through the real tools.  `croft run` (as root,
# with the probe; /dev/full stands in for a GPU through gpu_devices = 1:7)
# writes the file into a directory that Debian's prometheus-node-exporter
# reads with its textfile collector on 127.0.0.1; the test scrapes it over
# HTTP and holds the figures to what the workloads did: a stand-in GPU
# holder idle since before croft started, a container (a docker-named
# cgroup the test makes) that burns a known amount of CPU, and one whose
# processes burn and exit, some between two polls.  promtool finds
# nothing in the file; counters never go back over many polls and a
# SIGKILL of croft-writer; after the stop the file's figures equal croft
# stats on the dataset.  Root (cgroups, the probe).  TAP on stdout.
# usage: test_prom.py CROFT CROFTCTL NODE_EXPORTER PROMTOOL ALERT_RULES
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

from taplib import check, results, skip_all, wait

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
from cgroupfs import cgroup_mounts  # noqa: E402

CROFT, CROFTCTL, NODE_EXPORTER, PROMTOOL, RULES = sys.argv[1:6]
POLL_S, IDLE_EVERY = 1.0, 1  # a row each poll: the idle holder's seconds are exact
BURN_S = 3.0  # CPU seconds the container's process burns
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def parse(text):
    """The samples of an exposition: {series: value}, comments left out; a
    series is its name and its non-empty labels, sorted, as Prometheus sees
    it (node_exporter gives every series of a family all its label names)."""
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith('#'):
            series, _, value = line.rpartition(' ')
            name, _, labels = series.partition('{')
            pairs = sorted('%s="%s"' % kv for kv in LABEL.findall(labels) if kv[1])
            samples[name + ('{%s}' % ','.join(pairs) if pairs else '')] = float(value)
    return samples


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def v1_or_v2_mounts():
    """The mounts of cgroup2 and the v1 cpu, cpuacct and memory hierarchies, each once."""
    wanted = ('v2', 'cpu', 'cpuacct', 'memory')
    return list(dict.fromkeys(m for c, m in cgroup_mounts().items() if c in wanted))


def cgroup_cpu_ns(dirs):
    """The container's CPU time as its cgroup counts it (v1 cpuacct, else v2)."""
    for d in dirs:
        p = os.path.join(d, 'cpuacct.usage')
        if os.path.exists(p):
            return int(open(p).read())
    for d in dirs:
        p = os.path.join(d, 'cpu.stat')
        if os.path.exists(p):
            for line in open(p):
                if line.startswith('usage_usec '):
                    return int(line.split()[1]) * 1000
    return None


HOLDER = r'''
import os, sys
fd = os.open('/dev/full', os.O_RDONLY)  # no ioctl: it holds the "GPU" idle
print('ready', flush=True)
sys.stdin.read()
'''

BURNER = r'''
import sys, time
print('ready', flush=True)
sys.stdin.readline()
start = time.process_time()
while time.process_time() - start < float(sys.argv[1]):
    pass
print('%.6f' % (time.process_time() - start), flush=True)
sys.stdin.read()
'''

SHORT = r'''
import sys, time
start = time.process_time()
while time.process_time() - start < float(sys.argv[1]):
    pass
'''


def run_short(dirs, seconds):
    """A process in the cgroups dirs that burns seconds of CPU and exits;
    the CPU the kernel counted for it (wait4's rusage)."""
    def enter():
        for d in dirs:
            with open(os.path.join(d, 'cgroup.procs'), 'w') as f:
                f.write('0')
    p = subprocess.Popen([sys.executable, '-c', SHORT, str(seconds)], preexec_fn=enter)
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return ru.ru_utime + ru.ru_stime


class Test:
    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix='croft-prom-test-')
        os.chmod(self.tmp, 0o755)
        self.tf = os.path.join(self.tmp, 'textfile')
        self.data = os.path.join(self.tmp, 'data')
        self.children, self.cgroups = [], []
        self.croft = self.exporter = None

    def spawn(self, code, args=(), cgroups=()):
        def enter():
            for d in cgroups:
                with open(os.path.join(d, 'cgroup.procs'), 'w') as f:
                    f.write('0')
        p = subprocess.Popen([sys.executable, '-c', code] + list(args), stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, preexec_fn=enter)
        self.children.append(p)
        assert p.stdout.readline() == b'ready\n'
        return p

    def container(self):
        """A docker-named cgroup in each hierarchy, where Docker puts them (a name anywhere
        else is a host process's): its id, and its directories."""
        cid = os.urandom(32).hex()
        rel = 'system.slice/docker-%s.scope' % cid
        dirs = []
        for m in v1_or_v2_mounts():
            d = os.path.join(m, rel)
            if not os.path.isdir(os.path.dirname(d)):
                os.mkdir(os.path.dirname(d))
                self.cgroups.append(os.path.dirname(d))
            os.mkdir(d)
            dirs.append(d)
        self.cgroups += dirs
        return cid, dirs

    def start_croft(self):
        conf = self.conf = os.path.join(self.tmp, 'croft.conf')
        with open(conf, 'w') as f:
            f.write('[sampler]\npoll_interval = %dms\nidle_every = %d\ntextfile_dir = %s\n'
                    '[probe]\ngpu_devices = 1:7\n' % (POLL_S * 1000, IDLE_EVERY, self.tf))
        self.croft_log = open(os.path.join(self.tmp, 'croft.log'), 'wb')
        self.croft = subprocess.Popen(
            [CROFT, 'run', '--data-dir', self.data, '--runtime-dir', os.path.join(self.tmp, 'run'),
             '--config', conf], stdout=self.croft_log, stderr=subprocess.STDOUT)
        self.croft_start = time.time()

    def make_textfile_dir(self):
        """The sampler drops to croft (or nobody): it must be able to write there."""
        os.mkdir(self.tf)
        user = 'croft'
        try:
            import pwd
            pw = pwd.getpwnam(user)
        except KeyError:
            import pwd
            pw = pwd.getpwnam('nobody')
        os.chown(self.tf, pw.pw_uid, pw.pw_gid)

    def textfile_status(self):
        """What croftctl status says of croft.prom."""
        out = subprocess.run([CROFTCTL, '--runtime-dir', os.path.join(self.tmp, 'run'), 'status',
                              '--json'], capture_output=True, text=True).stdout
        for d in json.loads(out or '{}').get('daemons', []):
            if d.get('daemon') == 'croft-sampler':
                return (d.get('status') or {}).get('textfile', '')
        return ''

    def prom(self):
        try:
            with open(os.path.join(self.tf, 'croft.prom')) as f:
                return parse(f.read())
        except FileNotFoundError:
            return {}

    def start_exporter(self):
        self.port = free_port()
        self.exporter_log = open(os.path.join(self.tmp, 'node-exporter.log'), 'wb')
        self.exporter = subprocess.Popen(
            [NODE_EXPORTER, '--collector.disable-defaults', '--collector.textfile',
             '--collector.textfile.directory=' + self.tf,
             '--web.listen-address=127.0.0.1:%d' % self.port],
            stdout=self.exporter_log, stderr=subprocess.STDOUT)

    def scrape(self):
        try:
            with urllib.request.urlopen('http://127.0.0.1:%d/metrics' % self.port, timeout=5) as r:
                return parse(r.read().decode())
        except OSError:
            return {}

    def stop(self):
        for p in self.children:
            p.kill()
            p.wait()
        if self.croft and self.croft.poll() is None:
            self.croft.send_signal(signal.SIGINT)
            try:
                self.croft.wait(60)
            except subprocess.TimeoutExpired:
                self.croft.kill()
                self.croft.wait()
        if self.exporter:
            self.exporter.kill()
            self.exporter.wait()

    def cleanup(self):
        for d in reversed(self.cgroups):
            wait(lambda: not rmdir_busy(d), 10)
        # system.slice, made where this host has none, may have held another test run's
        # cgroups when this one tried: whoever ends last removes it (rmdir takes only an
        # empty one; a host's own holds its services)
        for m in v1_or_v2_mounts():
            rmdir_busy(os.path.join(m, 'system.slice'))
        shutil.rmtree(self.tmp, ignore_errors=True)


def rmdir_busy(d):
    try:
        os.rmdir(d)
        return False
    except FileNotFoundError:
        return False
    except OSError:
        return True


def dataset_polls(data):
    """The polls the live dataset file has rows of."""
    try:
        with open(os.path.join(data, 'croft-dataset.jsonl')) as f:
            return {json.loads(line)['unix_ms'] for line in f if line.endswith('\n')}
    except FileNotFoundError:
        return set()


def holder_rows(data, container_id):
    """The live dataset file's rows of the holder's container."""
    try:
        with open(os.path.join(data, 'croft-dataset.jsonl')) as f:
            rows = [json.loads(line) for line in f if line.endswith('\n')]
    except FileNotFoundError:
        return []
    return [r for r in rows if r.get('process', {}).get('container_id') == container_id]


def polls(t):
    return t.prom().get('croft_polls_total', 0)


def run(t):
    # each in a container of its own: other holders of /dev/full on this host count per GPU too
    holder_cid, holder_dirs = t.container()
    burner_cid, burner_dirs = t.container()
    t.spawn(HOLDER, cgroups=holder_dirs)
    burner = t.spawn(BURNER, [str(BURN_S)], burner_dirs)
    # no textfile directory yet (no node_exporter here): logged once, croft runs on
    t.start_croft()
    log = os.path.join(t.tmp, 'croft.log')
    polled = wait(lambda: len(dataset_polls(t.data)) >= 3, 60)
    said = [line for line in open(log, errors='replace')
            if 'textfile: ' + t.tf + ': opening the directory: No such file' in line]
    status = t.textfile_status()
    check('a missing textfile directory is logged once, and croft polls on',
          None if polled and len(said) == 1 and t.croft.poll() is None and
          'No such file or directory' in status else
          '%d polls in the dataset, %d log lines, croft %s, status %r' %
          (len(dataset_polls(t.data)), len(said), t.croft.poll(), status), ''.join(said))
    t.make_textfile_dir()
    check('once it exists croft.prom is written there, and that is logged',
          None if wait(lambda: t.prom() and 'croft.prom written again' in open(log).read() and
                       t.textfile_status().endswith('croft.prom written'), 30)
          else 'no croft.prom, no log line or status %r after the directory appeared' %
          t.textfile_status())
    t.start_exporter()
    if not wait(lambda: t.prom().get('croft_probe_attached') == 1, 60):
        check('croft.prom says the probe is attached', 'no croft.prom with the probe attached',
              open(os.path.join(t.tmp, 'croft.log')).read()[-3000:])
        return
    check('croft.prom says the probe is attached', None)
    # from here on every row has the probe's ioctl count: the holder's are idle
    base = polls(t)
    wait(lambda: polls(t) >= base + 2, 30)
    at_attach = t.prom()
    # the container burns BURN_S of CPU after croft has its baseline
    cg_before = cgroup_cpu_ns(burner_dirs)
    burner.stdin.write(b'go\n')
    burner.stdin.flush()
    burned = float(burner.stdout.readline())
    cg_burn = (cgroup_cpu_ns(burner_dirs) - cg_before) / 1e9
    # its next rows cover the rest of the burn
    done = polls(t)
    wait(lambda: polls(t) >= done + 3, 60)

    # scraped over HTTP from node_exporter
    got = wait(lambda: (lambda s: s if s.get('croft_polls_total', 0) >= done + 3
                        else None)(t.scrape()), 30) or {}
    cid12 = burner_cid[:12]
    cpu = got.get('croft_container_cpu_seconds_total{container_id="%s"}' % cid12)
    check('scraped: the container\'s CPU seconds are what it burned',
          None if cpu is not None and abs(cpu - burned) <= 0.03 * burned + 0.05 and
          abs(cpu - cg_burn) <= 0.03 * cg_burn + 0.05 else
          'croft %s s, the process %.3f s, its cgroup %.3f s' % (cpu, burned, cg_burn),
          'container %s: croft %s s; the process counted %.3f s, its cgroup %.3f s' %
          (cid12, cpu, burned, cg_burn))
    # processes that exit, some between two polls: their last rows carry
    # their CPU to croft.prom, each once (wait4's count)
    short_cid, short_dirs = t.container()
    short_cpu = sum(run_short(short_dirs, 0.15) for _ in range(6))
    done = polls(t)
    wait(lambda: polls(t) >= done + 3, 60)
    got_short = t.prom().get('croft_container_cpu_seconds_total{container_id="%s"}' % short_cid[:12])
    check('croft.prom counts the CPU of processes that exited, once each',
          None if got_short is not None and abs(got_short - short_cpu) <= 0.03 * short_cpu + 0.05 else
          'croft %s s, wait4 %.3f s' % (got_short, short_cpu),
          'six processes of 0.15 s in container %s: croft %s s; wait4 counted %.3f s' %
          (short_cid[:12], got_short, short_cpu))
    def held_idle(s):
        series = '{container_id="%s"}' % holder_cid[:12]
        return (s.get('croft_container_gpu_held_seconds_total' + series, 0),
                s.get('croft_container_gpu_idle_held_seconds_total' + series, 0),
                s.get('croft_container_gpu_busy_held_seconds_total' + series, 0),
                s.get('croft_last_poll_timestamp_seconds', 0))
    held0, idle0, busy0, poll0 = held_idle(at_attach)
    held1, idle1, busy1, poll1 = held_idle(got)
    idle, held, busy, wall = idle1 - idle0, held1 - held0, busy1 - busy0, poll1 - poll0
    # idle all along: its rows between the two polls span the time between
    # them, never busy; idle by the verdict where its rows carry the kernel's
    # evidence (the probe's GPU waits), else unknown
    evidence = any('gpu_wait_count' in r for r in holder_rows(t.data, holder_cid))
    check('scraped: the stand-in GPU held idle for as long as it was idle',
          None if wall > 3 and busy == 0 and (abs(held - idle) < 1e-6 or not evidence) and
          abs(held - wall) <= 0.25 + 0.02 * wall else
          'idle-held grew %.3f s, busy %.3f s, held %.3f s, in %.3f s between polls '
          '(rows with the probe\'s GPU evidence: %s)' % (idle, busy, held, wall, evidence),
          'between polls %.3f s apart the idle-held seconds grew %.3f (held %.3f, busy %.3f); '
          'the holder was idle throughout' % (wall, idle, held, busy))
    gpu_idle = got.get('croft_gpu_idle_held_seconds_total{gpu="none"}', 0)
    check('scraped: the GPU it holds counts it, croft\'s own figures there',
          None if got.get('croft_gpu_processes{gpu="none"}', 0) >= 1 and gpu_idle >= idle1 and
          got.get('croft_writer_connected') == 1 and
          got.get('croft_rows_written_total', 0) > 0 else
          'gpu processes %s, idle-held %s (its container %s), writer %s, rows %s' %
          (got.get('croft_gpu_processes{gpu="none"}'), gpu_idle, idle1,
           got.get('croft_writer_connected'), got.get('croft_rows_written_total')))

    lint = subprocess.run([PROMTOOL, 'check', 'metrics'], stdin=open(os.path.join(t.tf, 'croft.prom')),
                          capture_output=True, text=True)
    check('promtool check metrics reports nothing',
          None if lint.returncode == 0 and not (lint.stdout + lint.stderr).strip() else
          'rc %d: %s' % (lint.returncode, (lint.stdout + lint.stderr)[:500]))

    # every series the shipped alert rules read is in the file
    rules = open(RULES).read()
    names = set(re.findall(r'\b(croft_[a-z_]+)', rules))
    with open(os.path.join(t.tf, 'croft.prom')) as f:
        typed = set(re.findall(r'^# TYPE (\S+)', f.read(), re.M))
    check('the alert rules read only metrics croft.prom has',
          None if names and names <= typed else 'not in croft.prom: %s' % sorted(names - typed))

    # many polls, and a SIGKILL of the writer (croft run restarts it)
    writer = writer_pid(t)
    seen, went_back, killed = {}, [], False
    start = polls(t)
    while polls(t) < start + 12 and t.croft.poll() is None:
        now = t.prom()
        for series, v in now.items():
            if '_total' in series and v < seen.get(series, 0):
                went_back.append('%s %s -> %s' % (series, seen[series], v))
            seen[series] = v
        if not killed and polls(t) >= start + 4 and writer:
            os.kill(writer, signal.SIGKILL)
            killed = True
        time.sleep(0.1)
    check('counters never go back over 12 polls and a writer SIGKILL',
          None if killed and not went_back else
          ('writer not found' if not killed else '; '.join(went_back[:5])))

    # stopped: the last file's figures are the dataset's, summed by croft stats
    t.stop()
    last = t.prom()
    # --config: a process's first row stands for one poll_interval
    st = json.loads(subprocess.run([CROFT, 'stats', '--json', '--config', t.conf, t.data],
                                   capture_output=True,
                                   text=True).stdout or '{}')
    row = [c for c in st.get('gpu_held_by_container', []) if c.get('container_id') == holder_cid]
    differ = []
    for what in ('', 'busy_', 'idle_', 'unknown_'):
        stats_s = row[0].get(what + 'gpu_held_hours', -1) * 3600 if row else -1
        file_s = last.get('croft_container_gpu_%sheld_seconds_total{container_id="%s"}' %
                          (what, holder_cid[:12]), -2)
        # croft stats gives hours to 6 decimals: 3.6 ms
        if abs(stats_s - file_s) > 0.01:
            differ.append('%sheld: croft.prom %s s, croft stats %s s' % (what, file_s, stats_s))
    check('croft.prom\'s held, busy, idle and unknown seconds are croft stats\' on the dataset',
          '; '.join(differ) or None,
          'the holder\'s container: %s' % ('; '.join(differ) or 'the same'))


def writer_pid(t):
    """croft-writer, a child of our croft run (restarted by it when killed)."""
    try:
        kids = open('/proc/%d/task/%d/children' % (t.croft.pid, t.croft.pid)).read().split()
    except OSError:
        return None
    for k in kids:
        try:
            if open('/proc/%s/comm' % k).read().strip() == 'croft-writer':
                return int(k)
        except OSError:
            pass
    return None


def main():
    if os.geteuid() != 0:
        skip_all('needs root (cgroups, the probe)')
    for tool in (NODE_EXPORTER, PROMTOOL):
        if not shutil.which(tool):
            skip_all('needs %s (prometheus-node-exporter, prometheus)' % tool)
    if not v1_or_v2_mounts():
        skip_all('no cgroup hierarchy mounted')
    t = Test()
    try:
        run(t)
    finally:
        t.stop()
        if any(p for _, p in results):
            print('# kept for a look: %s' % t.tmp)
            t.cgroups and [rmdir_busy(d) for d in reversed(t.cgroups)]
        else:
            t.cleanup()
    print('1..%d' % len(results))
    return 1 if any(p for _, p in results) else 0


if __name__ == '__main__':
    sys.exit(main())
