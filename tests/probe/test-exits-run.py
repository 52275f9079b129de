#!/usr/bin/env python3
# test-exits-run.py: issue 31's probe SIGKILLed once in the middle, under
# `croft run` itself (test-exits-probekill.py does it on the test's own
# stack).  croft run (root: the probe, the sampler and the writer as its
# children, 0.5 s polls, its own data and runtime directories) watches
# short processes started one after another, each reaped with wait4,
# before the kill, while croft run restarts the probe, and after.  The loss
# is said: croft run logs the probe's death and its restart, and the
# sampler's status counts every last row written as vanished (the killed
# probe's finals went with it) as the dataset holds them.  Where the probe
# was alive the rows add up: every process with rows has exactly one last
# row, its last; those not vanished hold wait4's CPU time (1%); every one
# before the kill and after the restart has its last row from the probe; a
# process with no row at all lived wholly while the probe was away.
# test-exits-run.py CROFT_PROBE PROBE_WORK CROFT CROFTCTL BUILD_DIR
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from probetest import Tap, require_bpf, wait_for
from absence import AnswerWatch, burn_for, check_rows
from rowfile import Rows
from rowtest import POLL_MS

PHASE_S = 3.0  # starting processes before the kill, while away, after the restart


class CroftRun:
    """croft run in a temporary directory, as root; its rows and croftctl status."""

    def __init__(self, croft, croftctl, build_dir):
        self.croftctl = croftctl
        self.tmp = tempfile.mkdtemp(prefix='croft-exits-run-', dir=build_dir)
        os.chmod(self.tmp, 0o755)  # the daemons drop to croft or nobody
        self.data = os.path.join(self.tmp, 'data')
        self.rt = os.path.join(self.tmp, 'run')
        conf = os.path.join(self.tmp, 'croft.conf')
        with open(conf, 'w') as f:
            f.write('[sampler]\npoll_interval = %dms\n' % POLL_MS)
        self.log = os.path.join(self.tmp, 'croft.log')
        self.proc = subprocess.Popen(
            [croft, 'run', '--data-dir', self.data, '--runtime-dir', self.rt, '--config', conf],
            stdout=open(self.log, 'wb'), stderr=subprocess.STDOUT)
        self.rows = Rows(os.path.join(self.data, 'croft-dataset.jsonl'))

    def daemon(self, name):
        """name's row of croftctl status --json ({} while it does not answer)."""
        if self.proc.poll() is not None:
            raise RuntimeError('croft run exited %s: %s' % (self.proc.returncode,
                                                             self.log_text()[-600:]))
        out = subprocess.run([self.croftctl, '--runtime-dir', self.rt, 'status', '--json'],
                             capture_output=True, text=True).stdout
        try:
            return next((d for d in json.loads(out or '{}').get('daemons', [])
                         if d.get('daemon') == name), {})
        except ValueError:
            return {}

    def sampler(self):
        return self.daemon('croft-sampler').get('status') or {}

    def probe_connected(self):
        return self.sampler().get('probe', '').startswith('connected')

    def log_text(self):
        with open(self.log, errors='replace') as f:
            return f.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def main():
    require_bpf()
    work, croft, croftctl, build_dir = sys.argv[2:6]
    tap = Tap()
    run = CroftRun(croft, croftctl, build_dir)
    try:
        wait_for(run.probe_connected, 60, 'croft run\'s sampler connected to its probe')
        time.sleep(1.5)  # the probe's baseline answer is behind us
        done = {}
        watch = AnswerWatch(lambda: run.sampler().get('probe_link', {}).get('answers', 0))
        burn_for(subprocess.Popen, work, PHASE_S, done)
        old_pid = run.daemon('croft-probe').get('pid')
        cut_ms = watch.cut()
        os.kill(old_pid, signal.SIGKILL)
        burn_for(subprocess.Popen, work, PHASE_S, done)
        wait_for(lambda: run.daemon('croft-probe').get('pid') not in (None, old_pid) and
                 run.probe_connected(), 60, 'croft run\'s new probe, the sampler on it')
        back_ms = time.time() * 1000
        time.sleep(1.5)  # the new probe's baseline answer
        burn_for(subprocess.Popen, work, PHASE_S, done)
        text = run.log_text()
        tap.ok('croft-probe' in text and 'restarting croft-probe' in text,
               'croft run logs the probe\'s death and its restart',
               '\n'.join(ln for ln in text.splitlines() if 'probe' in ln)[-600:])

        def vanished():  # every vanished row on the host, the killed probe's own among them
            last_rows = run.sampler().get('last_rows', {})
            return (last_rows.get('vanished'),
                    sum(r.get('exited') == 'vanished' for r in run.rows.refresh()),
                    last_rows.get('vanished_unread', 0))
        check_rows(tap, done, run.rows.of, vanished, cut_ms, back_ms)
    finally:
        run.stop()
        if tap.failed:
            for line in run.log_text().splitlines()[-30:]:
                print('# croft run: ' + line)
        shutil.rmtree(run.tmp, ignore_errors=True)
    tap.done()


if __name__ == '__main__':
    main()
