# rowtest.py: croft-probe + croft-sampler + a fake writer in a temporary
# directory, for the tests that check finished rows (tests/probe/test-rows*.py).
# The sampler's own test helpers (fakewriter.py) are reused.  Runs as root.
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'sampler'))
from fakewriter import FakeWriter  # noqa: E402
from probetest import Probe, wait_for  # noqa: E402
from rowfile import Rows  # noqa: E402
from wire import MT_CTL_STATUS, ctl_request  # noqa: E402

POLL_MS = 500


def boot_ms():
    """The boot's unix ms as the sampler reckons start_ms from it: /proc/stat's btime."""
    with open('/proc/stat') as f:
        return 1000 * int(next(line for line in f if line.startswith('btime ')).split()[1])


def proc_key(pid, ticks=None):
    """'PID@START_MS': a process, its start (process.start_ms, to the clock tick) read
    before its reap (or by its parent: ticks, /proc/PID/stat's starttime).  A pid alone
    is not one: with pid_max 32 768 and the host's other work, a test's pid went to
    another of its processes within one run."""
    if ticks is None:
        with open('/proc/%d/stat' % pid) as f:
            ticks = int(f.read().rsplit(')', 1)[1].split()[19])
    return '%d@%d' % (pid, boot_ms() + ticks * 1000 // os.sysconf('SC_CLK_TCK'))


def rows_of_key(of, key):
    """The rows of the process KEY names (of: a pid's rows): its tgid and start_ms,
    reckoned alike, so the same to the ms unless the clock was stepped between."""
    pid, start_ms = (int(x) for x in key.split('@'))
    return [r for r in of(pid) if abs(r['process'].get('start_ms', 0) - start_ms) <= 50]


class Stack:
    def __init__(self, probe_bin, sampler_bin, conf='', probe_args=()):
        self.conf_text = '[sampler]\npoll_interval = %dms\n' % POLL_MS + conf
        # the sampler below runs as nobody: the probe must too, or its 0660 socket refuses it
        self.probe = Probe(probe_bin, conf=self.conf_text, args=('-u', 'nobody') + tuple(probe_args))
        self.sampler_bin = sampler_bin
        self.writer = FakeWriter(os.path.join(self.probe.dir, 'writer.sock'),
                                 os.path.join(self.probe.dir, 'rows.jsonl'))
        self.writer.start()
        self.rows = Rows(self.writer.out_path)
        self.sampler = None
        self.children = []

    def start_sampler(self):
        self.slog = open(os.path.join(self.probe.dir, 'sampler.log'), 'ab')
        self.sampler = subprocess.Popen(
            [self.sampler_bin, '-c', self.probe.conf, '-r', self.probe.runtime, '-u', 'nobody',
             '--writer-socket', self.writer.path, '--probe-socket', self.probe.sock],
            stdout=self.slog, stderr=subprocess.STDOUT)
        wait_for(lambda: os.path.exists(os.path.join(self.probe.runtime, 'sampler.ctl')), 20,
                 'sampler.ctl')

    def spawn(self, args, **kw):
        p = subprocess.Popen(args, **kw)
        self.children.append(p)
        return p

    def sampler_status(self):
        st, text = ctl_request(os.path.join(self.probe.runtime, 'sampler.ctl'), MT_CTL_STATUS,
                               timeout=5)
        return json.loads(text)['figures']

    def wait_rows(self, pid, pred, timeout=90):
        wait_for(lambda: pred(self.rows.of(pid)), timeout, 'rows of %d' % pid)
        return self.rows.of(pid)

    def print_logs(self):
        """The daemons' last lines and their figures, as TAP comments (for a failed test)."""
        for name in ('sampler.log', 'probe.log'):
            with open(os.path.join(self.probe.dir, name), errors='replace') as f:
                for line in f.read().splitlines()[-25:]:
                    print('# %s: %s' % (name, line))
        for name, figures in (('sampler', self.sampler_status), ('probe', self.probe.status)):
            try:
                print('# %s status: %s' % (name, json.dumps(figures())[:3000]))
            except (OSError, ValueError) as e:
                print('# %s status: %s' % (name, e))

    def close(self):
        for p in self.children:
            if p.poll() is None:
                p.kill()
            p.wait()
        if self.sampler and self.sampler.poll() is None:
            self.sampler.terminate()
            self.sampler.wait(20)
        self.writer.stop()
        self.probe.close()


def row_elapsed_s(rows, born_ms=None):
    """Each row's interval: since the previous row (or the process's birth)."""
    out, prev = [], born_ms
    for r in rows:
        out.append((r['unix_ms'] - prev) / 1000.0 if prev is not None else None)
        prev = r['unix_ms']
    return out


def syscall_rate(row, name):
    for s in row.get('syscalls', []):
        if s['name'] == name:
            return s['rate_per_sec']
    return 0.0
