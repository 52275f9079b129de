#!/usr/bin/env python3
"""slowpeer.py: hostile slow peers for the reliability suite.  Against each
socket of RUN_DIR it opens: one peer that connects and never sends, one that
sends a byte every DRIP seconds, and one that sends requests (or batches)
and never reads the replies.  It waits up to LIMIT seconds for the daemon
to drop each (EOF or reset) and prints one line per peer:
"NAME dropped_after_s=X sent=N" or "NAME not_dropped sent=N".  Test process.
"""
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
from wire import BATCH, MT_BATCH, MT_CTL_STATUS, ROLE_SAMPLER, hello, packet  # noqa: E402

results = {}


def dropped(s):
    """True once the daemon closed its side (reading gives EOF or an error)."""
    try:
        s.setblocking(False)
        data = s.recv(1 << 16)
        return data == b''
    except BlockingIOError:
        return False
    except OSError:
        return True


def peer(name, path, kind, mode, drip, limit):
    stype = socket.SOCK_SEQPACKET if kind == 'seq' else socket.SOCK_STREAM
    s = socket.socket(socket.AF_UNIX, stype)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    try:
        s.connect(path)
    except OSError as e:
        results[name] = 'connect_failed %s' % e
        return
    t0 = time.monotonic()
    sent = 0
    first = hello(ROLE_SAMPLER, epoch=0x51077)
    seq = 0
    while time.monotonic() - t0 < limit:
        try:
            if mode == 'drip':
                s.setblocking(True)
                s.send(first[sent % len(first):sent % len(first) + 1])
                sent += 1
            elif mode == 'noread':
                s.setblocking(False)
                if name.endswith('.sock'):
                    if seq == 0:
                        s.send(first)
                    seq += 1
                    row = b'{"unix_ms":%d,"tgid":1}\n' % (1700000000000 + seq)
                    s.send(packet(MT_BATCH, BATCH.pack(0x51077, seq, 1700000000000 + seq, 1, 0) +
                                  row))
                else:
                    s.send(packet(MT_CTL_STATUS))
                sent += 1
        except BlockingIOError:
            pass
        except OSError:
            results[name] = 'dropped_after_s=%.1f sent=%d' % (time.monotonic() - t0, sent)
            return
        # a noread peer must never read (dropped() would consume its acks):
        # it learns of the drop when its next send fails
        if mode != 'noread':
            if dropped(s):
                results[name] = 'dropped_after_s=%.1f sent=%d' % (time.monotonic() - t0, sent)
                return
        # a never-reading sampler-like peer sends 20 batches a second
        time.sleep(drip if mode == 'drip' else (0.5 if mode == 'idle' else 0.05))
    results[name] = 'not_dropped sent=%d' % sent


def main():
    run, drip, limit = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
    threads = []
    for sock, kind in [('writer.sock', 'stream'), ('probe.sock', 'seq'), ('writer.ctl', 'stream'),
                       ('sampler.ctl', 'stream'), ('probe.ctl', 'stream')]:
        path = os.path.join(run, sock)
        if not os.path.exists(path):
            continue
        for mode in ('idle', 'drip', 'noread'):
            t = threading.Thread(target=peer, args=('%s/%s' % (mode, sock), path, kind, mode,
                                                    drip, limit), daemon=True)
            t.start()
            threads.append(t)
    for t in threads:
        t.join()
    for name in sorted(results):
        print(name, results[name], flush=True)


if __name__ == '__main__':
    main()
