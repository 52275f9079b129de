#!/usr/bin/env python3
# test-gpu-late.py: a GPU driver that registers after croft started is
# counted without a reload.  In a private mount namespace a file is bind-
# mounted over /proc/devices; croft-probe and croft-sampler start with the
# default gpu_devices; the file is then rewritten in place to register
# "nvidia-uvm" with the major of a node made here (1, as /dev/full's 1:7).
# 500 ioctls on the node are counted in the rows (ioctl_count sums to 500)
# and the process goes gpu-onset; each change is logged once by each
# daemon; when the name goes away again, ioctls are not counted.  Root,
# real eBPF.
import os
import subprocess
import sys
import tempfile
import time

from probetest import Tap, require_bpf, wait_for
from rowtest import POLL_MS, Stack

NS_ENV = 'CROFT_TEST_MOUNT_NS'
CHANGED = 'GPU devices: /proc/devices changed'


def in_private_namespace():
    """Re-runs this script under unshare -m: the bind mount stays in there."""
    if os.environ.get(NS_ENV) == '1':
        return
    os.environ[NS_ENV] = '1'
    os.execvp('unshare', ['unshare', '--mount', '--propagation', 'private', sys.executable] +
              sys.argv)


def rewrite(path, text):
    """In place: the bind mount follows the inode, not the name."""
    with open(path, 'r+') as f:
        f.truncate(0)
        f.write(text)


def with_uvm(devices, major):
    """The text with "MAJOR nvidia-uvm" added at the end of its character devices."""
    head, sep, tail = devices.partition('\nBlock devices:')
    return head.rstrip('\n') + '\n%3d nvidia-uvm\n\n' % major + sep.lstrip('\n') + tail


def log_count(st, name, text):
    with open(os.path.join(st.probe.dir, name), errors='replace') as f:
        return f.read().count(text)


def ioctl_rows(st, work, node, n):
    """Rows of a process that sleeps 1 s, makes n ioctls on node and holds it 2 s.  No
    /dev/null open (1:3, a "GPU file" while major 1 is nvidia-uvm): pipes only."""
    p = st.spawn([work, 'ioctl', node, str(n), '2', '1'], stdin=subprocess.PIPE,
                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    p.communicate()
    gone_ms = time.time() * 1000
    wait_for(lambda: any(r['unix_ms'] > gone_ms + POLL_MS for r in st.rows.refresh()), 20,
             'a poll after the exit')
    rows = st.rows.of(p.pid)
    return sum(r.get('ioctl_count', 0) for r in rows), [r['workload'] for r in rows]


def main():
    require_bpf()
    in_private_namespace()
    probe_bin, work, sampler_bin = sys.argv[1], sys.argv[2], sys.argv[3]
    tap = Tap()
    tmp = tempfile.mkdtemp(prefix='croft-gpu-late.')
    os.chmod(tmp, 0o755)
    fake = os.path.join(tmp, 'devices')
    with open('/proc/devices') as f:
        real = f.read()
    assert 'nvidia-uvm' not in real, 'this host has nvidia-uvm: the test needs a host without'
    with open(fake, 'w') as f:
        f.write(real)
    os.chmod(fake, 0o644)
    subprocess.run(['mount', '--bind', fake, '/proc/devices'], check=True)
    st = Stack(probe_bin, sampler_bin, 'idle_every = 1\n')
    try:
        node = os.path.join(st.probe.dir, 'gpu0')
        os.mknod(node, 0o666 | 0o020000, os.makedev(1, 7))
        st.start_sampler()
        rules = st.probe.status()['gpu_rules']
        got, states = ioctl_rows(st, work, node, 500)
        tap.ok(got == 0 and set(states) == {'no-gpu'}, 'before: 1:7 is no GPU device',
               '%d counted, %s' % (got, sorted(set(states))))

        rewrite(fake, with_uvm(real, 1))
        for name in ('probe.log', 'sampler.log'):
            try:
                wait_for(lambda: log_count(st, name, CHANGED) >= 1, 10, name)
            except TimeoutError:
                pass
        tap.ok(st.probe.status()['gpu_rules'] == rules + 1, 'the probe\'s set has the new '
               'major, without a reload', '%d rules, %d before' % (st.probe.status()['gpu_rules'],
                                                                   rules))
        got, states = ioctl_rows(st, work, node, 500)
        tap.ok(got == 500, 'ioctls on the late driver\'s node counted', '%d of 500' % got)
        tap.ok(states[:1] == ['no-gpu'] and 'gpu-onset' in states,
               'the process goes from no-gpu to gpu-onset', ' '.join(states))
        counts = [log_count(st, n, CHANGED) for n in ('probe.log', 'sampler.log')]
        with open(os.path.join(st.probe.dir, 'probe.log'), errors='replace') as f:
            said = [x for x in f.read().splitlines() if CHANGED in x]
        tap.ok(counts == [1, 1], 'the change logged once by the probe and once by the sampler',
               'probe %d, sampler %d: %s' % (counts[0], counts[1], said[:1]))

        rewrite(fake, real)
        wait_for(lambda: st.probe.status()['gpu_rules'] == rules, 10, 'the set back')
        wait_for(lambda: log_count(st, 'sampler.log', CHANGED) == 2, 10, 'sampler log')
        got, states = ioctl_rows(st, work, node, 500)
        tap.ok(got == 0 and 'gpu-onset' not in states, 'unregistered again: not counted',
               '%d counted, %s' % (got, sorted(set(states))))
    finally:
        if tap.failed:
            for name in ('sampler.log', 'probe.log'):
                with open(os.path.join(st.probe.dir, name), errors='replace') as f:
                    for line in f.read().splitlines()[-15:]:
                        print('# %s: %s' % (name, line))
        st.close()
        subprocess.run(['umount', '/proc/devices'])
    tap.done()


if __name__ == '__main__':
    main()
