#!/usr/bin/env python3
# test-exact.py: croft-probe counts every syscall exactly once across
# answers: K getppid() calls while answers are taken every 100 ms sum to K;
# the exit comes with the start time the counts carried.  Root, real eBPF.
import os
import platform
import subprocess
import sys

from probetest import Probe, Tap, drain, require_bpf
from wire import PROBE_END_FIRST

# getppid on the architectures croft-probe is built for
GETPPID_NR = {'x86_64': 110, 'aarch64': 173, 'riscv64': 173}


def main():
    require_bpf()
    probe_bin, work = sys.argv[1], sys.argv[2]
    tap = Tap()
    probe = Probe(probe_bin)
    try:
        # TEST_PROBE_VARIANT: what this kernel takes (the VM suite says; raw_tp before 5.11)
        want = os.environ.get('TEST_PROBE_VARIANT') or (
            'raw_tp' if os.environ.get('CROFT_PROBE_RAW_TP') else 'tp_btf')
        progs = probe.status()['programs']
        # net: its tracepoints in the same variant, else fexit or kretprobe (test-net.py)
        tap.ok(all(v == want for k, v in progs.items() if k != 'net'),
               'programs run as %s' % want, str(progs))
        c = probe.client()
        k = 200000
        w = subprocess.Popen([work, 'getppid', str(k), '3'])
        totals, exits, answers = drain(c, {w.pid}, {w.pid}, interval=0.1)
        w.wait()
        got = totals.get(w.pid, {}).get('syscalls', {}).get(GETPPID_NR[platform.machine()], 0)
        tap.ok(got == k, 'getppid counted exactly over %d answers' % len(answers),
               'got %d want %d' % (got, k))
        e = exits.get(w.pid)
        tap.ok(e is not None and e['start_boot_ns'] == totals[w.pid]['start_boot_ns'],
               'exit carries the same start time as the counts')
        tap.ok(e is not None and e['comm'] == 'probe-work', 'exit carries comm',
               e and e['comm'])
        seqs = [a['end']['seq'] for a in answers]
        tap.ok(seqs == list(range(seqs[0], seqs[0] + len(seqs))), 'answers numbered in order')
        tap.ok(all(a['end']['since_boot_ns'] == b['end']['until_boot_ns']
                   for b, a in zip(answers, answers[1:])), 'answer intervals are contiguous')
        tap.ok(answers[0]['end']['flags'] & PROBE_END_FIRST and
               not any(a['end']['flags'] & PROBE_END_FIRST for a in answers[1:]),
               'only the first answer is flagged FIRST')
    finally:
        probe.close()
    tap.done()


if __name__ == '__main__':
    main()
