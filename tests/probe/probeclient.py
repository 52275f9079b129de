#!/usr/bin/env python3
# probeclient.py: a small probe.sock client for croft-probe's tests and
# benchmark: HELLO, then MT_PROBE_POLL answers parsed into dicts.  Runs as
# the test's user (root or the croft user); speaks contract/probe_wire.h
# through wire.py (generated into build/tests/lib by tests/lib/gen-wire-py.c).
import json
import os
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
from wire import (DROPS, END, EXIT, FINAL, HDR, HELLO, MT_HELLO, MT_PROBE_END,  # noqa: E402
                  MT_PROBE_EXITS, MT_PROBE_FINALS, MT_PROBE_POLL, MT_PROBE_PROCS, PROBE_BATCH, PROBE_POLL,
                  PROBE_WIRE_DROPS, PROC, ROLE_SAMPLER, SYSCALL, VERSION, hello, packet)

END_DROPS = 7  # probe_end's items before drops[PROBE_WIRE_DROPS], then drops_total


FINAL_KEYS = ('tgid', 'uid', 'start_boot_ns', 'exit_boot_ns', 'cpu_ns', 'read_bytes',
              'write_bytes', 'maxrss_bytes', 'wait_status', 'flags')


def cstr(b):
    return b.split(b'\0', 1)[0].decode(errors='replace')


class ProbeClient:
    def __init__(self, path, timeout=10.0):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.sock.send(hello(ROLE_SAMPLER))
        mtype, payload = self.recv()
        if mtype != MT_HELLO or HELLO.unpack(payload)[0] != VERSION:
            raise RuntimeError('no HELLO from croft-probe')

    def recv(self):
        data = self.sock.recv(1 << 16)
        if not data:
            raise EOFError('croft-probe closed probe.sock')
        mtype, length = HDR.unpack_from(data)
        if length != len(data) - HDR.size:
            raise RuntimeError('packet length %d != header %d' % (len(data) - HDR.size, length))
        return mtype, data[HDR.size:]

    def poll(self):
        self.sock.send(packet(MT_PROBE_POLL, PROBE_POLL.pack(0)))
        procs, exits, finals = {}, [], []
        while True:
            mtype, p = self.recv()
            if mtype == MT_PROBE_PROCS:
                count, off = PROBE_BATCH.unpack_from(p)[0], PROBE_BATCH.size
                for _ in range(count):
                    f = PROC.unpack_from(p, off)
                    off += PROC.size
                    sys_counts = {}
                    for _ in range(f[1]):
                        nr, _r, n = SYSCALL.unpack_from(p, off)
                        off += SYSCALL.size
                        sys_counts[nr] = n
                    procs[f[0]] = dict(tgid=f[0], start_boot_ns=f[2], gpu_ioctls=f[3],
                                       last_gpu_ioctl_boot_ns=f[4], ctx_voluntary=f[5],
                                       ctx_involuntary=f[6], runqueue_ns=f[7],
                                       net_rx_bytes=f[8], net_tx_bytes=f[9],
                                       gpu_waits=f[10], gpu_mmaps=f[11],
                                       gpu_blocked_threads=f[12], syscalls=sys_counts)
                assert off == len(p), 'PROCS packet not read to its end'
            elif mtype == MT_PROBE_EXITS:
                count = PROBE_BATCH.unpack_from(p)[0]
                assert len(p) == PROBE_BATCH.size + count * EXIT.size
                for i in range(count):
                    f = EXIT.unpack_from(p, PROBE_BATCH.size + i * EXIT.size)
                    exits.append(dict(tgid=f[0], ppid=f[1], exit_code=f[2], start_boot_ns=f[4],
                                      exit_boot_ns=f[5],
                                      comm=f[6].rstrip(b'\0').decode(errors='replace')))
            elif mtype == MT_PROBE_FINALS:
                count = PROBE_BATCH.unpack_from(p)[0]
                assert len(p) == PROBE_BATCH.size + count * FINAL.size
                for i in range(count):
                    f = FINAL.unpack_from(p, PROBE_BATCH.size + i * FINAL.size)
                    finals.append(dict(zip(FINAL_KEYS, f[:10]), comm=cstr(f[10]),
                                       cgroup=cstr(f[11]), exe=cstr(f[12]),
                                       argv=f[15][:f[13]]))
            elif mtype == MT_PROBE_END:
                f = END.unpack(p)
                total = END_DROPS + PROBE_WIRE_DROPS
                end = dict(seq=f[0], since_boot_ns=f[1], until_boot_ns=f[2], procs=f[3],
                           exits=f[4], flags=f[5], finals=f[6], drops=dict(zip(DROPS, f[END_DROPS:])),
                           drops_total=dict(zip(DROPS, f[total:])))
                assert end['procs'] == len(procs) and end['exits'] == len(exits)
                assert end['finals'] == len(finals)
                return dict(procs=procs, exits=exits, finals=finals, end=end)
            else:
                raise RuntimeError('unexpected message 0x%x' % mtype)


def main():
    # probeclient.py SOCKET POLLS INTERVAL_S [TGID...]: one JSON line per answer
    path, polls, interval = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    tgids = {int(t) for t in sys.argv[4:]}
    c = ProbeClient(path)
    for _ in range(polls):
        time.sleep(interval)
        a = c.poll()
        if tgids:
            a['procs'] = {t: v for t, v in a['procs'].items() if t in tgids}
        print(json.dumps(a), flush=True)


if __name__ == '__main__':
    main()
