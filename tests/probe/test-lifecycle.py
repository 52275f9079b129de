#!/usr/bin/env python3
# test-lifecycle.py: croft-probe as a daemon: status JSON, the capabilities
# it keeps after the drop (CapEff against the kernel's rule), the permit table
# and peer checks on probe.sock (an unprivileged user cannot connect), drops
# counted with tiny maps, and nothing of croft left attached after SIGKILL
# or SIGTERM (checked with bpftool), then a restart that serves again.
# Root, real eBPF.
import glob
import json
import os
import signal
import socket
import subprocess
import sys

from probetest import Probe, Tap, drain, require_bpf, wait_for
from wire import DROPS, MT_CTL_STATUS, MT_PROBE_POLL, PROBE_POLL, ROLE_SAMPLER, hello, packet

STRANGER_UID = 48123  # no passwd entry: neither root nor the croft user


CROFT_PROGS = {'sys_enter_btf', 'sys_enter_raw', 'ioctl_btf', 'ioctl_raw', 'switch_btf',
               'switch_raw', 'wakeup_btf', 'wakeup_raw', 'wakeup_new_btf', 'wakeup_new_raw',
               'fork_btf', 'fork_raw', 'exec_btf', 'exec_raw', 'exit_btf', 'exit_raw',
               'thread_exit_btf', 'thread_walk', 'exit_exec_btf', 'exit_exec_raw',
               'exit_exit_btf', 'exit_exit_raw', 'exit_free_btf', 'exit_free_raw',
               'send_btf', 'send_raw', 'recv_btf', 'recv_raw', 'send4_fexit', 'send6_fexit',
               'recv4_fexit', 'recv6_fexit', 'send4_kret', 'send6_kret', 'recv4_kret',
               'recv6_kret', 'gpu_enter_btf', 'gpu_enter_raw', 'gpu_exit_btf', 'gpu_exit_raw',
               'gpu_threxit_btf', 'gpu_threxit_raw'}
CAP_BPF = 39


def probe_prog_ids(pid):
    """The programs croft-probe `pid` holds: the kernel's prog_id of each of its
    program and link fds (/proc/<pid>/fdinfo), so no other checkout's probe
    running its tests on this machine at the same time counts."""
    ids = set()
    for path in glob.glob('/proc/%d/fdinfo/*' % pid):
        try:
            with open(path) as f:
                ids |= {int(line.split()[1]) for line in f if line.startswith('prog_id:')}
        except OSError:
            continue
    return ids


def expected_cap_eff():
    """The kernel's rule, not the probe's trial: before Linux 5.19 (c8644cd0efe7),
    with unprivileged BPF disabled, every bpf() call needs CAP_BPF; from 5.19 only
    map creation and program loads do, so held fds need nothing."""
    major, minor = (int(x) for x in os.uname().release.split('.')[:2])
    with open('/proc/sys/kernel/unprivileged_bpf_disabled') as f:
        disabled = int(f.read()) != 0
    return 1 << CAP_BPF if disabled and (major, minor) < (5, 19) else 0


def cap_sets(pid):
    with open('/proc/%d/status' % pid) as f:
        return {k: int(v, 16) for k, v in (line.split(':') for line in f)
                if k in ('CapEff', 'CapPrm', 'CapInh', 'CapAmb')}


def test_caps(tap, probe):
    want, caps = expected_cap_eff(), cap_sets(probe.proc.pid)
    kept = probe.status()['capabilities']
    tap.ok(caps['CapEff'] == caps['CapPrm'] == want and caps['CapInh'] == caps['CapAmb'] == 0,
           'after the drop: CapEff %#x on kernel %s' % (want, os.uname().release),
           ' '.join('%s=%#x' % kv for kv in sorted(caps.items())))
    tap.ok(kept == 'none' if want == 0 else kept.startswith('CAP_BPF: '),
           'status says which capability is kept and why', kept)


def live_progs():
    """bpftool's view: every loaded program's id and name."""
    out = subprocess.run(['bpftool', '-j', 'prog', 'show'], capture_output=True, text=True)
    return {p['id']: p.get('name') for p in json.loads(out.stdout or '[]')}


def live_prog_ids():
    return set(live_progs())


def croft_named(ids):
    """Every id loaded, by a name of croft's programs."""
    live = live_progs()
    return all(live.get(i) in CROFT_PROGS for i in ids)


def stranger_connect(path):
    """Connects as an unprivileged uid; returns 'refused:<errno>', 'dropped' or 'answered'."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        res = 'answered'
        try:
            os.setgroups([])
            os.setgid(STRANGER_UID)
            os.setuid(STRANGER_UID)
            s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            s.settimeout(5)
            s.connect(path)
            s.send(hello(ROLE_SAMPLER))
            if not s.recv(1 << 16):
                res = 'dropped'
        except OSError as e:
            res = 'dropped' if e.errno in (104, 32) else 'refused:%d' % e.errno
        os.write(w, res.encode())
        os._exit(0)
    os.close(w)
    os.waitpid(pid, 0)
    res = os.read(r, 100).decode()
    os.close(r)
    return res


def bad_peer(path, first, second=None):
    """Sends first (and second); True when croft-probe closes the connection."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(5)
    s.connect(path)
    try:
        s.send(first)
        if second is not None:
            s.recv(1 << 16)
            s.send(second)
        while True:
            if not s.recv(1 << 16):
                return True
    except OSError:
        return True
    except socket.timeout:
        return False


def test_peers(tap, probe):
    st = probe.status()
    tap.ok(st['programs']['syscalls'] in ('tp_btf', 'raw_tp') and 'drops' in st and
           'maps' in st and 'net' in st and 'peers' in st, 'status JSON has programs, maps, '
           'drops, net, peers', json.dumps(st)[:200])
    res = stranger_connect(probe.sock)
    tap.ok(res.startswith('refused:13'), 'an unprivileged user cannot reach probe.sock', res)
    os.chmod(probe.runtime, 0o755)
    os.chmod(probe.sock, 0o666)
    res = stranger_connect(probe.sock)
    tap.ok(res == 'dropped', 'even with open modes, SO_PEERCRED refuses it', res)
    wait_for(lambda: 'refused pid' in probe.logtext(), 5, 'the refusal in the log')
    tap.ok(bad_peer(probe.sock, packet(MT_PROBE_POLL, PROBE_POLL.pack(0))),
           'POLL before HELLO drops the peer')
    tap.ok(bad_peer(probe.sock, hello(ROLE_SAMPLER), packet(MT_CTL_STATUS)), 'a request outside the permit '
           'table drops the peer')
    tap.ok(bad_peer(probe.sock, hello(ROLE_SAMPLER), packet(MT_PROBE_POLL, b'\0' * 9)),
           'a POLL of the wrong size drops the peer')
    c = probe.client()
    tap.ok(bad_peer(probe.sock, hello(ROLE_SAMPLER)), 'a second sampler is refused while one is connected')
    tap.ok(c.poll()['end']['seq'] >= 1, 'the first sampler still gets answers')


def test_kill(tap, probe, work):
    ids = probe_prog_ids(probe.proc.pid)
    tap.ok(len(ids) >= 8 and croft_named(ids), 'bpftool shows croft-probe\'s programs',
           '%d programs' % len(ids))
    probe.kill(signal.SIGKILL)
    try:
        wait_for(lambda: not (ids & live_prog_ids()), 10, 'programs to go')
        gone = True
    except TimeoutError:
        gone = False
    tap.ok(gone, 'SIGKILL: nothing of croft stays attached', str(ids & live_prog_ids()))
    probe.start()
    c = probe.client()
    w = subprocess.Popen([work, 'getppid', '1000', '0'])
    totals, _, _ = drain(c, {w.pid}, {w.pid})
    tap.ok(sum(totals.get(w.pid, {}).get('syscalls', {}).values()) >= 1000,
           'restarted croft-probe serves again')
    ids = probe_prog_ids(probe.proc.pid)
    tap.ok(len(ids) >= 8 and croft_named(ids), 'the restarted croft-probe attached again',
           '%d programs' % len(ids))
    probe.kill(signal.SIGTERM)
    wait_for(lambda: not (ids & live_prog_ids()), 10, 'programs to go')
    tap.ok(not (ids & live_prog_ids()), 'SIGTERM: nothing of croft stays attached')


def test_names(tap, probe):
    st = probe.status()
    counted = ['syscalls', 'ioctl', 'sched'] + (['net'] if st['net']['available'] else []) + [
        'gpufile']
    tap.ok(list(st['programs']) == ['syscalls', 'ioctl', 'sched', 'proc', 'net', 'exit', 'gpufile'] and
           list(st['maps']) == counted and list(st['drops']) == DROPS + ['exit_queue_full'],
           'status names every program, counted map and drop reason (the wire\'s order)',
           json.dumps([st['programs'], st['maps'], st['drops']]))


def test_drops(tap, probe_bin, work):
    probe = Probe(probe_bin, args=['--map-entries', '4'])
    try:
        c = probe.client()
        ws = [subprocess.Popen([work, 'getppid', '100', '0']) for _ in range(8)]
        _, _, answers = drain(c, {w.pid for w in ws}, {w.pid for w in ws})
        drops = probe.status()['drops']
        tap.ok(drops['syscall_map_full'] > 0, 'tiny maps: drops counted in status',
               json.dumps(drops))
        tap.ok(answers[-1]['end']['drops_total']['syscall_map_full'] > 0,
               'tiny maps: drops sent with the answers')
        sent = answers[-1]['end']['drops_total']
        tap.ok(all(drops[r] >= sent[r] for r in DROPS),
               'tiny maps: status counts each reason the answers sent, under its name',
               json.dumps([drops, sent]))
        tap.ok(probe.proc.poll() is None and c.poll()['end']['seq'] > len(answers),
               'tiny maps: croft-probe keeps answering')
    finally:
        probe.close()


def main():
    require_bpf()
    probe_bin, work = sys.argv[1], sys.argv[2]
    tap = Tap()
    probe = Probe(probe_bin)
    try:
        test_peers(tap, probe)
        test_names(tap, probe)
        test_caps(tap, probe)
        test_kill(tap, probe, work)
    finally:
        probe.close()
    test_drops(tap, probe_bin, work)
    tap.done()


if __name__ == '__main__':
    main()
