#!/usr/bin/env python3
# probeclient.py: a small probe.sock client for croft-probe's tests and
# benchmark: HELLO, then MT_PROBE_POLL answers parsed into dicts.  Runs as
# the test's user (root or the croft user); speaks contract/probe_wire.h.
import json
import socket
import struct
import sys
import time

MT_HELLO, MT_PROBE_POLL = 0x0001, 0x0300
MT_PROBE_PROCS, MT_PROBE_EXITS, MT_PROBE_END = 0x0400, 0x0401, 0x0402
ROLE_SAMPLER, VERSION = 1, 1
PROC = struct.Struct('<IIQQQQQQQQ')      # struct probe_proc, 72 bytes
SYSCALL = struct.Struct('<IIQ')          # struct probe_syscall, 16 bytes
EXIT = struct.Struct('<IIIIQQ16s')       # struct probe_exit, 48 bytes
END = struct.Struct('<QQQIIII8Q8Q')      # struct probe_end, 168 bytes
DROPS = ['syscall_map_full', 'ioctl_map_full', 'sched_map_full', 'runq_map_full',
         'net_map_full', 'ringbuf_full']


def packet(mtype, payload=b''):
    return struct.pack('<II', mtype, len(payload)) + payload


class ProbeClient:
    def __init__(self, path, timeout=10.0):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.sock.send(packet(MT_HELLO, struct.pack('<IIQQ', VERSION, ROLE_SAMPLER, 0, 0)))
        mtype, payload = self.recv()
        if mtype != MT_HELLO or struct.unpack('<IIQQ', payload)[0] != VERSION:
            raise RuntimeError('no HELLO from croft-probe')

    def recv(self):
        data = self.sock.recv(1 << 16)
        if not data:
            raise EOFError('croft-probe closed probe.sock')
        mtype, length = struct.unpack_from('<II', data)
        if length != len(data) - 8:
            raise RuntimeError('packet length %d != header %d' % (len(data) - 8, length))
        return mtype, data[8:]

    def poll(self):
        self.sock.send(packet(MT_PROBE_POLL, struct.pack('<Q', 0)))
        procs, exits = {}, []
        while True:
            mtype, p = self.recv()
            if mtype == MT_PROBE_PROCS:
                count, off = struct.unpack_from('<I', p)[0], 8
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
                                       syscalls=sys_counts)
                assert off == len(p), 'PROCS packet not read to its end'
            elif mtype == MT_PROBE_EXITS:
                count = struct.unpack_from('<I', p)[0]
                assert len(p) == 8 + count * EXIT.size
                for i in range(count):
                    f = EXIT.unpack_from(p, 8 + i * EXIT.size)
                    exits.append(dict(tgid=f[0], ppid=f[1], exit_code=f[2], start_boot_ns=f[4],
                                      exit_boot_ns=f[5],
                                      comm=f[6].rstrip(b'\0').decode(errors='replace')))
            elif mtype == MT_PROBE_END:
                f = END.unpack(p)
                end = dict(seq=f[0], since_boot_ns=f[1], until_boot_ns=f[2], procs=f[3],
                           exits=f[4], flags=f[5], drops=dict(zip(DROPS, f[7:13])),
                           drops_total=dict(zip(DROPS, f[15:21])))
                assert end['procs'] == len(procs) and end['exits'] == len(exits)
                return dict(procs=procs, exits=exits, end=end)
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
