#!/usr/bin/env python3
# test-crosscheck.py: croft-probe's per-syscall counts against strace -f -c
# on the same run of a deterministic workload (getppid and ioctl loops):
# every syscall strace saw 100 times or more has the same count in the
# probe's answers.  Root, real eBPF, strace.
import glob
import os
import re
import shutil
import subprocess
import sys
import time

from probetest import Probe, Tap, drain, require_bpf, skip


def syscall_numbers():
    """name -> number for this architecture, from the kernel headers."""
    heads = glob.glob('/usr/include/*/asm/unistd_64.h') + glob.glob('/usr/include/asm/unistd_64.h')
    if not heads:
        skip('no asm/unistd_64.h (libc6-dev)')
    table = {}
    with open(heads[0]) as f:
        for m in re.finditer(r'#define __NR_(\w+)\s+(\d+)', f.read()):
            table[m.group(1)] = int(m.group(2))
    return table


def strace_counts(path):
    counts = {}
    with open(path) as f:
        for line in f:
            tok = line.split()
            if len(tok) >= 5 and tok[0][0].isdigit() and tok[3].isdigit() and tok[-1] != 'total':
                counts[tok[-1]] = int(tok[3])
    return counts


def main():
    require_bpf()
    if not shutil.which('strace'):
        skip('needs strace')
    probe_bin, work = sys.argv[1], sys.argv[2]
    nrs = syscall_numbers()
    tap = Tap()
    probe = Probe(probe_bin)
    try:
        c = probe.client()
        out = os.path.join(probe.dir, 'strace.txt')
        t = subprocess.Popen(['strace', '-f', '-c', '-o', out, '--', work, 'getppid', '3000',
                              '0.5'])
        counts, child = {}, None
        for _ in range(200):
            a = c.poll()
            for tgid, p in a['procs'].items():
                acc = counts.setdefault(tgid, {})
                for nr, n in p['syscalls'].items():
                    acc[nr] = acc.get(nr, 0) + n
            for e in a['exits']:
                if e['ppid'] == t.pid and e['comm'] == 'probe-work':
                    child = e['tgid']
            if child and t.poll() is not None:
                break
            time.sleep(0.2)
        t.wait()
        theirs = strace_counts(out)
        ours = counts.get(child, {})
        tap.ok(theirs.get('getppid') == 3000, 'strace -f -c saw the workload',
               str(sorted(theirs.items()))[:160])
        for name, n in sorted(theirs.items()):
            if n >= 100:
                got = ours.get(nrs.get(name, -1), 0)
                tap.ok(got == n, 'croft-probe agrees with strace on %s' % name,
                       'probe %d strace %d' % (got, n))
        # strace counts from its child's execve; croft-probe from the fork, a few more
        off = {name: ours.get(nrs.get(name, -1), 0) - n for name, n in theirs.items()}
        tap.ok(all(0 <= d <= 5 for d in off.values()), 'every other syscall agrees to the few '
               'made between fork and execve', str({k: v for k, v in off.items() if v}))
    finally:
        probe.close()
    tap.done()


if __name__ == '__main__':
    main()
