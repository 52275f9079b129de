#!/usr/bin/env python3
# test-leftout.py: on this host, the row fields croft-probe's status leaves
# out are those docs/kernels.md's table by kernel says for the development host
# (its "6.18" column) and are listed in croft-probe(8)'s FIELDS LEFT OUT
# (tests/vm/guest/leftout.py, which the VM suite runs on every boot); and
# with each concern forced to fail, every field status then leaves out is
# in that list.  Root, real eBPF.
import json
import os
import subprocess
import sys
import tempfile

from probetest import Probe, Tap, require_bpf

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')
LEFTOUT = os.path.join(SRC, 'tests', 'vm', 'guest', 'leftout.py')
KERNELS_MD = os.path.join(SRC, 'docs', 'kernels.md')
MAN = os.path.join(SRC, 'man', 'croft-probe.8.scd')
HOST_COLUMN = '6.18'


def leftout(status, readme, column):
    with tempfile.NamedTemporaryFile('w', suffix='.json') as f:
        json.dump(status, f)
        f.flush()
        return subprocess.run([sys.executable, LEFTOUT, f.name, readme, MAN, column],
                              capture_output=True, text=True)


def main():
    require_bpf()
    tap = Tap()
    probe = Probe(sys.argv[1])
    try:
        st = probe.status()
    finally:
        probe.close()
    r = leftout(st, KERNELS_MD, HOST_COLUMN)
    tap.ok(r.returncode == 0, 'status, docs/kernels.md\'s %s column and croft-probe(8) agree'
           % HOST_COLUMN, r.stdout + r.stderr)
    # a kernels.md that says a field is left out where status gives it goes red
    with tempfile.NamedTemporaryFile('w', suffix='.md') as bad:
        text = open(KERNELS_MD, encoding='utf-8').read()
        row = next(ln for ln in text.splitlines() if ln.startswith('| `syscalls` |'))
        cells = row.split(' | ')
        cells[-1] = 'left out (a broken copy) |'
        bad.write(text.replace(row, ' | '.join(cells)))
        bad.flush()
        r = leftout(st, bad.name, HOST_COLUMN)
    tap.ok(r.returncode == 1 and 'syscalls' in r.stdout,
           'a kernels.md column that differs from status is caught', r.stdout)
    for concern in ('syscalls', 'sched', 'net', 'gpufile'):
        probe = Probe(sys.argv[1], env={'CROFT_PROBE_FAIL': concern})
        try:
            out = probe.status()['left_out']
        finally:
            probe.close()
        r = leftout({'left_out': out}, KERNELS_MD, HOST_COLUMN)
        tap.ok(out and 'not in the man page' not in r.stdout,
               '%s failing: every field left out is in croft-probe(8)' % concern, r.stdout)
    tap.done()


if __name__ == '__main__':
    main()
