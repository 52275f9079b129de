#!/usr/bin/env python3
"""relproxy.py: a recording pass-through between croft-sampler and
croft-writer for the kill-loop test.  Listens on LISTEN, connects each
sampler to WRITER_SOCKET, forwards both ways unchanged, and appends one line
per whole frame to LOG: "batch EPOCH SEQ UNIX_MS ROWS" (sampler -> writer)
and "ack EPOCH SEQ" (writer -> sampler).  Either side closing closes both.
The checker then knows every batch the sampler finished and sent.
Test process, any user that may reach both sockets.
"""
import os
import socket
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
from wire import ACK, BATCH, HDR, MT_ACK, MT_BATCH  # noqa: E402

lock = threading.Lock()


def pump(src, dst, log, direction):
    buf = b''
    try:
        while True:
            data = src.recv(1 << 20)
            if not data:
                break
            dst.sendall(data)
            buf += data
            while len(buf) >= HDR.size:
                mtype, length = HDR.unpack_from(buf)
                if len(buf) < HDR.size + length:
                    break
                body = buf[HDR.size:HDR.size + length]
                buf = buf[HDR.size + length:]
                line = None
                if direction == 'up' and mtype == MT_BATCH and length >= BATCH.size:
                    epoch, seq, ms, rows, _ = BATCH.unpack_from(body)
                    line = 'batch %016x %d %d %d\n' % (epoch, seq, ms, rows)
                elif direction == 'down' and mtype == MT_ACK and length >= ACK.size:
                    epoch, seq = ACK.unpack_from(body)
                    line = 'ack %016x %d\n' % (epoch, seq)
                if line:
                    with lock:
                        log.write(line)
                        log.flush()
    except OSError:
        pass
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def serve(conn, writer_path, log):
    up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        up.connect(writer_path)
    except OSError:
        conn.close()
        return
    a = threading.Thread(target=pump, args=(conn, up, log, 'up'), daemon=True)
    b = threading.Thread(target=pump, args=(up, conn, log, 'down'), daemon=True)
    a.start()
    b.start()
    a.join()
    b.join()
    conn.close()
    up.close()


def main():
    listen, writer_path, log_path = sys.argv[1:4]
    log = open(log_path, 'a')
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    if os.path.exists(listen):
        os.unlink(listen)
    srv.bind(listen)
    os.chmod(listen, 0o666)
    srv.listen(16)
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=serve, args=(conn, writer_path, log), daemon=True).start()


if __name__ == '__main__':
    main()
