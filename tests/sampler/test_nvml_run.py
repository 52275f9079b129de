#!/usr/bin/env python3
# test_nvml_run.py: GPU activity end to end, with real processes, the real
# daemons (`croft run` as root, the probe included) and the stand-in
# libnvidia-ml.so.1 (nvml_standin.c) found through LD_LIBRARY_PATH, driven
# by a scenario file the test rewrites as it goes.  A node of the test's own
# with loop-control's number (10:237: opened, never used, and held open by
# nothing else, unlike /dev/full, which other GPU tests share) stands in for
# the GPU device through gpu_devices = 10:237, and a /proc/devices of the
# test's own (bind-mounted in a private mount namespace, as
# tests/ops/test-gpu-host.sh does) names misc's major "nvidia", so that the
# node is GPU 237, the stand-in's GPU's minor: the workloads hold it, and so
# does croft-sampler through the stand-in.  The workloads:
#   spin    a spinning-sync loop: a core busy, no ioctl (NVML 95 %)
#   replay  a graph-replay loop with a blocking sync: a fifth of a core, no
#           ioctl, a poll on the GPU file each round (NVML's device 90 %, no
#           per-process figure: it is the only holder)
#   idle    a holder that sleeps: no CPU, no ioctl (NVML: listed, no sample)
#   nvidia-smi  an NVML poller (nvml_poller.c) beside the idle holder
# then v1/v2/v3 layouts, smUtil 150, MIG's NOT_SUPPORTED, a call that hangs
# (polls go on, counted, not timed), croft.prom's per-GPU NVML series (and
# promtool check metrics on the file), and croft run again without the
# library: spin and replay are not idle.  TAP on stdout.
# usage: test_nvml_run.py CROFT CROFTCTL STANDIN_DIR POLLER BUILD_DIR [PROMTOOL]
import json
import os
import pwd
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
from rowfile import Rows  # noqa: E402
from taplib import check, results, skip_all, wait  # noqa: E402

CROFT, CROFTCTL, STANDIN_DIR, POLLER, BUILD_DIR = [os.path.abspath(a) for a in sys.argv[1:6]]
PROMTOOL = shutil.which(sys.argv[6]) if len(sys.argv) > 6 else None  # optional
POLL_MS = 500
WAIT_S = 120  # a condition not met by then fails (a loaded machine is slow, not wrong)
GPU_MAJOR, GPU_MINOR = 10, 237  # loop-control's number, on a node of the test's own

WORKLOAD = r'''
import os, select, sys, time
fd = os.open(sys.argv[2], os.O_RDONLY)
mode = sys.argv[1]
print('ready', flush=True)
while True:
    if mode == 'spin':          # cudaStreamSynchronize spinning: a core, no syscall
        pass
    elif mode == 'replay':      # cudaGraphLaunch, and a blocking sync: the driver's wait
        t = time.monotonic() + 0.004  # on the GPU file (a poll on it), little CPU
        while time.monotonic() < t:
            pass
        waiter = select.poll()
        waiter.register(fd, select.POLLIN)
        waiter.poll(16)
        time.sleep(0.016)
    else:
        time.sleep(3600)
'''


class Run:
    """croft run in a mount namespace of its own, over the test's /proc/devices."""

    def __init__(self, tmp, name, nvml, gpu):
        self.tmp, self.gpu = os.path.join(tmp, name), gpu
        os.makedirs(self.tmp)
        os.chmod(self.tmp, 0o755)
        self.data = os.path.join(self.tmp, 'data')
        self.rt = os.path.join(self.tmp, 'run')
        self.scenario = os.path.join(tmp, 'scenario')
        conf = self.conf = os.path.join(self.tmp, 'croft.conf')
        self.textfile = os.path.join(self.tmp, 'textfile')
        os.mkdir(self.textfile)  # the sampler drops to croft, or nobody: it writes there
        try:
            pw = pwd.getpwnam('croft')
        except KeyError:
            pw = pwd.getpwnam('nobody')
        os.chown(self.textfile, pw.pw_uid, pw.pw_gid)
        with open(conf, 'w') as f:
            f.write('[sampler]\npoll_interval = %dms\nidle_every = 1\nonset_window = 1s\n'
                    'textfile_dir = %s\n[probe]\ngpu_devices = %d:%d\n' % (
                        POLL_MS, self.textfile, GPU_MAJOR, GPU_MINOR))
        env = dict(os.environ, NVML_STANDIN_SCENARIO=self.scenario)
        env.pop('LD_LIBRARY_PATH', None)
        if nvml:
            env['LD_LIBRARY_PATH'] = STANDIN_DIR
        self.log = os.path.join(self.tmp, 'croft.log')
        mounts = 'mount --bind "$1" /proc/devices && shift && exec "$@"'
        self.proc = subprocess.Popen(
            ['unshare', '-m', '--propagation', 'private', 'sh', '-c', mounts, 'sh',
             os.path.join(tmp, 'devices'), CROFT, 'run', '--data-dir', self.data,
             '--runtime-dir', self.rt, '--config', conf],
            env=env, stdout=open(self.log, 'wb'), stderr=subprocess.STDOUT)
        self.rows, self.stopping = Rows(os.path.join(self.data, 'croft-dataset.jsonl')), False

    def status(self, key='status'):
        """croft-sampler's row of croftctl status --json: its figures, or another key."""
        self.alive()
        out = subprocess.run([CROFTCTL, '--runtime-dir', self.rt, 'status', '--json'],
                             capture_output=True, text=True).stdout
        try:
            for d in json.loads(out or '{}').get('daemons', []):
                if d.get('daemon') == 'croft-sampler':
                    return d.get(key) or {}
        except ValueError:
            pass
        return {}

    def alive(self):
        """Raises once croft run is gone: every wait after would only time out."""
        if not self.stopping and self.proc.poll() is not None:
            with open(self.log, errors='replace') as f:
                raise RuntimeError('croft run exited %s: %s' % (
                    self.proc.returncode, f.read()[-600:]))

    def refresh(self):
        self.alive()
        return self.rows.refresh()

    def of(self, pid, since_ms=0):
        return [r for r in self.refresh() if r['tgid'] == pid and r['unix_ms'] > since_ms]

    def stop(self):
        self.stopping = True
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.refresh()

    def logged(self, text):
        with open(self.log, errors='replace') as f:
            return text in f.read()


class Test:
    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix='croft-nvml-test-', dir=BUILD_DIR)
        os.chmod(self.tmp, 0o755)
        self.children = []
        with open('/proc/devices') as f:
            text = f.read()
        with open(os.path.join(self.tmp, 'devices'), 'w') as f:
            f.write(text.replace('\n %2d misc\n' % GPU_MAJOR, '\n %2d nvidia\n' % GPU_MAJOR))
        self.gpu = os.path.join(self.tmp, 'nvidia%d' % GPU_MINOR)
        os.mknod(self.gpu, 0o666 | stat.S_IFCHR, os.makedev(GPU_MAJOR, GPU_MINOR))
        os.chmod(self.gpu, 0o666)
        self.scenario_path = os.path.join(self.tmp, 'scenario')
        self.scenario('')

    def scenario(self, text):
        """The stand-in reads it whole at each round: written aside, renamed in."""
        tmp = self.scenario_path + '.new'
        with open(tmp, 'w') as f:
            head = 'device %s\n' % self.gpu
            if 'gpu 0' not in text:
                head += 'gpu 0 minor=%d sm=0 mem=0 used=1000 power=60000 energy=1000\n' % GPU_MINOR
            f.write(head + text.replace('minor=GPU', 'minor=%d' % GPU_MINOR))
        os.chmod(tmp, 0o644)
        os.rename(tmp, self.scenario_path)
        return int(time.time() * 1000)

    def spawn(self, mode):
        p = subprocess.Popen([sys.executable, '-c', WORKLOAD, mode, self.gpu],
                             stdout=subprocess.PIPE)
        assert p.stdout.readline() == b'ready\n'
        self.children.append(p)
        return p

    def poller(self):
        env = dict(os.environ, LD_LIBRARY_PATH=STANDIN_DIR,
                   NVML_STANDIN_SCENARIO=self.scenario_path)
        p = subprocess.Popen([POLLER], stdout=subprocess.PIPE, env=env)
        assert p.stdout.readline() == b'ready\n'
        self.children.append(p)
        return p

    def kill(self, *ps):
        for p in ps:
            p.kill()
            p.wait()
            self.children.remove(p)

    def cleanup(self):
        for p in list(self.children):
            self.kill(p)


def settled(run, pid, since_ms, pred=lambda r: True, n=3):
    """The process's last n rows of polls after since_ms once they all
    satisfy pred (NVML's rounds take a poll or two to reach rows, and a
    loaded machine runs rounds late: their figures are then left out, as
    they should be, until one comes); what there is after WAIT_S if never."""
    def last():
        rows = run.of(pid, since_ms + POLL_MS)[-n:]
        return rows if len(rows) == n and all(pred(r) for r in rows) else None
    return wait(last, WAIT_S) or run.of(pid, since_ms + POLL_MS)[-n:]


def verdicts(rows):
    return ['%s/%s/%s' % (r.get('gpu_activity'), r.get('gpu_activity_source'),
                          r.get('gpu_sm_percent')) for r in rows]


def all_rows(rows, pred):
    return bool(rows) and all(pred(r) for r in rows)


def prom_series(run):
    """croft.prom's samples: {name{labels}: value}."""
    try:
        text = open(os.path.join(run.textfile, 'croft.prom')).read()
    except OSError:
        return {}, ''
    return {ln.rpartition(' ')[0]: float(ln.rpartition(' ')[2]) for ln in text.splitlines()
            if ln and not ln.startswith('#')}, text


def prom_check(run, want):
    """croft.prom's per-GPU NVML series are the stand-in's figures, with HELP and TYPE,
    and promtool finds nothing wrong in the file."""
    series = {'%s{gpu="%d"}' % (k, GPU_MINOR): v for k, v in want.items()}
    got = wait(lambda: (lambda p: all(p[0].get(k) == v for k, v in series.items()) and p)(
        prom_series(run)), WAIT_S) or prom_series(run)
    helps = all('# HELP %s ' % k in got[1] and '# TYPE %s ' % k in got[1] for k in want)
    lint = subprocess.run([PROMTOOL, 'check', 'metrics'], input=got[1], capture_output=True,
                          text=True) if PROMTOOL else None
    check('croft.prom: NVML utilisation, memory, power and energy per GPU, with HELP and TYPE%s' %
          ('; promtool check metrics clean' if lint else ' (no promtool here)'),
          None if all(got[0].get(k) == v for k, v in series.items()) and helps and
          (not lint or lint.returncode == 0) else
          'series %s; help/type %s; promtool %s' % (
              {k: got[0].get(k) for k in series}, helps,
              lint and (lint.stdout + lint.stderr).strip()[:300]))


def phase_nvml(t, run):
    t0 = t.scenario('')
    st = wait(lambda: (lambda s: s.get('nvml') == 'read' and s)(run.status()), 60)
    check('croft run with the stand-in: status says NVML is read', None if st else
          'status nvml: %s' % run.status().get('nvml'))

    spin = t.spawn('spin')
    t0 = t.scenario('proc 0 pid=%d mem=734003200 sm=95\n' % spin.pid)
    ok = lambda r: (r.get('gpu_activity') == 'busy' and  # noqa: E731
                    r.get('gpu_activity_source') == 'nvml_process' and
                    r.get('gpu_sm_percent') == 95 and r.get('gpu_memory_bytes') == 734003200)
    rows = settled(run, spin.pid, t0, ok)
    check('spinning sync (a core, no ioctl, NVML 95 %): busy from nvml_process',
          None if all_rows(rows, ok) else 'rows: %s' % verdicts(rows))
    t0 = t.scenario('proc 0 pid=%d mem=1 sm=150\n' % spin.pid)
    ok = lambda r: r.get('gpu_sm_percent') == 100  # noqa: E731
    rows = settled(run, spin.pid, t0, ok)
    st = run.status()
    check('smUtil 150: taken as 100, counted in status and logged',
          None if all_rows(rows, ok) and
          st.get('nvml_samples_clamped', 0) >= 1 and
          wait(lambda: run.logged('above 100 % so far, taken as 100'), WAIT_S)
          else 'rows %s, clamped %s' % (verdicts(rows), st.get('nvml_samples_clamped')))
    t.kill(spin)

    replay = t.spawn('replay')
    t0 = t.scenario('gpu 0 minor=GPU sm=90 mem=30 used=5000 power=300000 energy=2000\n'
                    'proc 0 pid=%d mem=1000\nerror nvmlDeviceGetProcessUtilization 3\n' %
                    replay.pid)
    ok = lambda r: (r.get('gpu_activity') == 'busy' and  # noqa: E731
                    r.get('gpu_activity_source') == 'nvml_device' and 'gpu_sm_percent' not in r)
    rows = settled(run, replay.pid, t0, ok)
    check('graph replay (a fifth of a core, no ioctl, NVML device 90 %, only holder): busy '
          'from nvml_device', None if all_rows(rows, ok) else 'rows: %s' % verdicts(rows))
    prom_check(run, {'croft_gpu_nvml_sm_utilization_ratio': 0.9,
                     'croft_gpu_nvml_memory_utilization_ratio': 0.3,
                     'croft_gpu_nvml_memory_used_bytes': 5000,
                     'croft_gpu_nvml_power_watts': 300,
                     'croft_gpu_nvml_energy_joules_total': 2})
    t.kill(replay)

    idle = t.spawn('idle')
    t0 = t.scenario('proc 0 pid=%d mem=4096 sm=none\n' % idle.pid)
    idle_ok = lambda r: (r.get('gpu_activity') == 'idle' and  # noqa: E731
                         r.get('gpu_activity_source') == 'nvml_process' and
                         r.get('gpu_sm_percent') == 0)
    rows = settled(run, idle.pid, t0, idle_ok)
    check('true idle holder (listed, no sample: NVML_ERROR_NOT_FOUND, no CPU): idle from '
          'nvml_process, gpu_sm_percent 0', None if all_rows(rows, idle_ok) else
          'rows: %s' % verdicts(rows))

    poller = t.poller()
    t0 = int(time.time() * 1000)
    held = lambda r: (r.get('workload') in ('gpu-onset', 'gpu-held') and  # noqa: E731
                      r['process'].get('comm') == 'nvidia-smi')
    prow = settled(run, poller.pid, t0, held)
    rows = settled(run, idle.pid, t0, idle_ok)
    mine = run.of(run.status('pid') or -1)
    check('an NVML poller beside it: the poller is a GPU holder named nvidia-smi, the idle '
          'holder stays idle, croft-sampler (the stand-in holds the node in it) stays no-gpu',
          None if all_rows(rows, idle_ok) and all_rows(prow, held) and
          all_rows(mine, lambda r: r.get('workload') == 'no-gpu') else
          'idle %s; poller %s; croft-sampler %s' % (
              verdicts(rows), [r.get('workload') for r in prow],
              sorted({r.get('workload') for r in mine})))
    t.kill(poller)

    problems = []
    for layout, want in (('1', 1001), ('2', 1002), ('3', 1003), ('3v2', 1004)):
        t0 = t.scenario('layout %s\nproc 0 pid=4000001 mem=5\nproc 0 pid=%d mem=%d sm=none\n'
                        'proc 0 pid=4000002 mem=6\n' % (layout, idle.pid, want))
        ok = lambda r: r.get('gpu_memory_bytes') == want  # noqa: E731
        rows = settled(run, idle.pid, t0, ok, 2)
        if not all_rows(rows, ok):
            problems.append('layout %s: %s' % (layout, [r.get('gpu_memory_bytes') for r in rows]))
    check('process lists in the v1, v2, v3 (R535, 32 bytes) and v3 (24 bytes) layouts',
          '; '.join(problems) or None)

    t0 = t.scenario('gpu 0 minor=GPU sm=50 mig=1\nproc 0 pid=%d mem=77 sm=40\n' % idle.pid)
    ok = lambda r: ('gpu_sm_percent' not in r and r.get('gpu_memory_bytes') == 77 and  # noqa
                    r.get('gpu_activity_source') != 'nvml_device')
    rows = settled(run, idle.pid, t0, ok)
    lo = run.status().get('left_out', {})
    check('MIG: per-process utilisation NOT_SUPPORTED: gpu_sm_percent left out, said in '
          'status and log; memory still read',
          None if all_rows(rows, ok) and
          'MIG' in lo.get('gpu_sm_percent', '') and
          wait(lambda: run.logged('NOT_SUPPORTED'), WAIT_S) else
          'rows %s, left_out %s' % (verdicts(rows), lo.get('gpu_sm_percent')))

    spin = t.spawn('spin')
    t.scenario('proc 0 pid=%d sm=95\nhang nvmlDeviceGetPowerUsage\n' % spin.pid)
    hung = wait(lambda: run.status().get('nvml_hangs', 0) >= 1 and run.status(), WAIT_S)
    st0 = hung or run.status()
    t1 = int(time.time() * 1000)
    more = wait(lambda: (lambda s: s.get('polls', 0) >= st0.get('polls', 0) + 8 and s)(
        run.status()), WAIT_S)
    rows = wait(lambda: (lambda got: len(got) >= 8 and got)(run.of(spin.pid, t1)), WAIT_S) or \
        run.of(spin.pid, t1)
    check('a call that hangs: polls go on (8 more while it hangs, a row of the holder each), '
          'its rows fall back to the kernel\'s evidence, status says so',
          None if hung and more and more.get('nvml_rounds') == st0.get('nvml_rounds') and
          len(rows) >= 8 and all_rows(rows, lambda r: 'gpu_sm_percent' not in r and
                                      r.get('gpu_activity') != 'idle') and
          'not returned' in more.get('nvml', '') else
          'hangs %s, polls %s -> %s, rounds %s -> %s, rows %s, nvml %s' % (
              st0.get('nvml_hangs'), st0.get('polls'), (more or {}).get('polls'),
              st0.get('nvml_rounds'), (more or {}).get('nvml_rounds'), verdicts(rows)[-3:],
              (more or {}).get('nvml')))
    t0 = t.scenario('proc 0 pid=%d sm=95\n' % spin.pid)
    ok = lambda r: r.get('gpu_sm_percent') == 95  # noqa: E731
    rows = settled(run, spin.pid, t0, ok)
    check('... and once it returns, NVML\'s figures are back',
          None if all_rows(rows, ok) else
          'rows %s' % verdicts(rows))
    t.kill(spin, idle)
    nvml_off(run)


def nvml_holds(pid, gpu):
    """croft-sampler's threads, whether libnvidia-ml is mapped, whether it holds the node."""
    threads = len(os.listdir('/proc/%d/task' % pid))
    mapped = 'libnvidia-ml' in open('/proc/%d/maps' % pid).read()
    fds = []
    for fd in os.listdir('/proc/%d/fd' % pid):
        try:
            fds.append(os.readlink('/proc/%d/fd/%s' % (pid, fd)))
        except OSError:
            pass
    return threads, mapped, gpu in fds


def nvml_off(run):
    """nvml = off by reload: no thread, no library mapped, no GPU file left."""
    pid = run.status('pid') or None
    before = nvml_holds(pid, run.gpu) if pid else None
    text = open(run.conf).read()
    with open(run.conf, 'w') as f:
        f.write(text.replace('[sampler]\n', '[sampler]\nnvml = off\n', 1))
    rc = subprocess.run([CROFTCTL, '--runtime-dir', run.rt, 'reload'], capture_output=True,
                        text=True)
    off = wait(lambda: run.status().get('nvml') == 'nvml = off in croft.conf', WAIT_S)
    after = nvml_holds(pid, run.gpu) if pid else None
    check('nvml = off by reload: the NVML thread ends, the library is unloaded, its GPU file '
          'closed', None if rc.returncode == 0 and off and before and before[1:] == (True, True)
          and after == (before[0] - 1, False, False) else
          'reload %s %s; status nvml %s; (threads, mapped, holds) before %s after %s' % (
              rc.returncode, rc.stderr.strip()[:200], run.status().get('nvml'), before, after))


def phase_absent(t, run):
    st = wait(lambda: (lambda s: 'not loaded' in s.get('nvml', '') and s)(run.status()), 60)
    check('library missing: croft run starts, status names it, left_out lists the NVML fields',
          None if st and 'gpu_sm_percent' in st.get('left_out', {}) and
          'gpu_memory_bytes' in st.get('left_out', {}) and
          wait(lambda: run.logged('libnvidia-ml.so.1 not loaded'), WAIT_S) else
          'status nvml %s, left_out %s' % (run.status().get('nvml'),
                                           sorted(run.status().get('left_out', {}))))
    spin, replay = t.spawn('spin'), t.spawn('replay')
    t0 = int(time.time() * 1000)
    settled(run, spin.pid, t0, n=4)
    settled(run, replay.pid, t0, n=4)
    rows = run.of(spin.pid, t0) + run.of(replay.pid, t0)
    check('without NVML, the spinning sync and the graph replay are never idle',
          None if len(rows) >= 8 and all_rows(
              rows, lambda r: r.get('gpu_activity') in ('busy', 'unknown') and
              'gpu_sm_percent' not in r) else 'rows %s' % verdicts(rows))
    t.kill(spin, replay)
    idle = t.spawn('idle')
    ok = lambda r: (r.get('gpu_activity') == 'idle' and  # noqa: E731
                    r.get('gpu_activity_source') == 'kernel')
    rows = settled(run, idle.pid, int(time.time() * 1000), ok)
    check('without NVML, the true idle holder is idle on the kernel\'s evidence (the probe: '
          'no ioctl, wait or blocked thread; no CPU)', None if all_rows(rows, ok) else
          'rows %s' % ['%s/%s waits %s blocked %s cpu %s' % (
              r.get('gpu_activity'), r.get('gpu_activity_source'), r.get('gpu_wait_count'),
              r.get('gpu_blocked_threads'), r['usage'].get('cpu_cores')) for r in rows])
    t.kill(idle)


def main():
    if os.geteuid() != 0:
        skip_all('needs root (croft run with the probe, a private mount namespace)')
    if not shutil.which('unshare'):
        skip_all('no unshare')
    t = Test()
    try:
        run = Run(t.tmp, 'with-nvml', True, t.gpu)
        try:
            phase_nvml(t, run)
        finally:
            t.cleanup()
            run.stop()
        out = subprocess.run([CROFT, 'stats', '--json', run.data], capture_output=True,
                             text=True).stdout
        system = [e.get('holder') for e in json.loads(out or '{}').get('gpu_held_system', [])]
        check('croft stats: the NVML poller is a system holder (gpu_system_holders)',
              None if 'nvidia-smi' in system else 'system holders: %s' % system)
        run = Run(t.tmp, 'without-nvml', False, t.gpu)
        try:
            phase_absent(t, run)
        finally:
            t.cleanup()
            run.stop()
    finally:
        t.cleanup()
    print('1..%d' % len(results))
    failed = [r for r in results if r[1]]
    if failed:
        print('# logs under %s' % t.tmp)
    else:
        shutil.rmtree(t.tmp, ignore_errors=True)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
