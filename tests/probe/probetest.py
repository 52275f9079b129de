# probetest.py: shared helpers of croft-probe's integration tests: skip
# rules (77, a failure under CI=true), a croft-probe in a temporary runtime
# directory, TAP output, waiting on conditions.  Runs as root.
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
from probeclient import ProbeClient  # noqa: E402
from wire import MT_CTL_STATUS, ctl_request  # noqa: E402


def skip(reason):
    if os.environ.get('CI') == 'true':
        print('Bail out! skip not allowed under CI=true: ' + reason, flush=True)
        sys.exit(1)
    print('1..0 # SKIP ' + reason, flush=True)  # TAP: meson reports it skipped
    sys.exit(0)


def require_bpf():
    if len(sys.argv) < 2 or sys.argv[1] == 'not-built':
        skip('croft-probe not built (needs clang, bpftool, libbpf and BTF)')
    if os.geteuid() != 0:
        skip('needs root')
    if not os.path.exists('/sys/kernel/btf/vmlinux'):
        skip('kernel has no BTF')


def wait_for(cond, timeout=10.0, what='condition'):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.02)
    raise TimeoutError('timed out after %.0fs waiting for %s' % (timeout, what))


class Tap:
    def __init__(self):
        self.n = 0
        self.failed = 0

    def ok(self, cond, name, detail=''):
        self.n += 1
        if not cond:
            self.failed += 1
        # a detail of several lines (a reload's errors) is a TAP comment a line
        detail = '\n# '.join(str(detail).splitlines())
        print('%s %d - %s%s' % ('ok' if cond else 'not ok', self.n, name,
                                ('  # ' + detail) if detail else ''), flush=True)
        return cond

    def tail_on_failure(self, path, lines):
        """After a failure: the last lines of a daemon's log, as TAP comments."""
        if self.failed:
            with open(path, errors='replace') as f:
                for line in f.read().splitlines()[-lines:]:
                    print('# %s: %s' % (os.path.basename(path), line))

    def done(self):
        print('1..%d' % self.n, flush=True)
        sys.exit(1 if self.failed else 0)


class Probe:
    """A croft-probe started in a private runtime directory."""

    def __init__(self, binary, conf='', args=(), env=None):
        self.dir = tempfile.mkdtemp(prefix='croft-probe-test.')
        os.chmod(self.dir, 0o755)
        self.runtime = os.path.join(self.dir, 'run')
        self.conf = os.path.join(self.dir, 'croft.conf')
        with open(self.conf, 'w') as f:
            f.write(conf)
        os.chmod(self.conf, 0o644)
        self.binary, self.args, self.env = binary, list(args), env
        self.log = open(os.path.join(self.dir, 'probe.log'), 'w+')
        self.proc = None
        self.start()

    @property
    def sock(self):
        return os.path.join(self.runtime, 'probe.sock')

    @property
    def ctl(self):
        return os.path.join(self.runtime, 'probe.ctl')

    def start(self):
        for p in (self.sock, self.ctl):
            if os.path.exists(p):
                os.unlink(p)
        env = dict(os.environ, **(self.env or {}))
        self.proc = subprocess.Popen([self.binary, '-c', self.conf, '-r', self.runtime] + self.args,
                                     stdout=self.log, stderr=subprocess.STDOUT, env=env)
        wait_for(lambda: self.ready() or self.proc.poll() is not None, 30, 'probe.sock')
        if self.proc.poll() is not None:
            raise RuntimeError('croft-probe exited: ' + self.logtext())

    def ready(self):
        return os.path.exists(self.ctl) and 'attached' in self.logtext()

    def logtext(self):
        self.log.flush()
        with open(self.log.name) as f:
            return f.read()

    def client(self):
        return ProbeClient(self.sock)

    def ctl_request(self, mtype):
        return ctl_request(self.ctl, mtype)

    def envelope(self):
        """The whole status answer: {daemon, version, pid, uptime_s, state, why, figures}."""
        st, text = self.ctl_request(MT_CTL_STATUS)
        return json.loads(text)

    def status(self):
        return self.envelope()['figures']

    def kill(self, sig=signal.SIGTERM):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(30)

    def close(self):
        self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


def drain(client, pids, until_exited, timeout=60.0, interval=0.5):
    """Polls until every pid in until_exited has an exit record; sums per tgid."""
    totals, exits, answers = {}, {}, []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(interval)
        a = client.poll()
        answers.append(a)
        for t, p in a['procs'].items():
            if t in pids:
                acc = totals.setdefault(t, dict(syscalls={}))
                for k, v in p.items():
                    if k == 'syscalls':
                        for nr, n in v.items():
                            acc['syscalls'][nr] = acc['syscalls'].get(nr, 0) + n
                    elif isinstance(v, int) and k not in ('tgid', 'start_boot_ns',
                                                          'last_gpu_ioctl_boot_ns'):
                        acc[k] = acc.get(k, 0) + v
                    else:
                        acc[k] = max(acc.get(k, 0), v)
        for e in a['exits']:
            if e['tgid'] in pids:
                exits[e['tgid']] = e
        if all(p in exits for p in until_exited):
            return totals, exits, answers
    raise TimeoutError('processes did not exit: %s' % (set(until_exited) - set(exits)))
