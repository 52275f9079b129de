# fakewriter.py: a stand-in for croft-writer speaking the writer.sock
# protocol of contract/wire.h (HELLO, BATCH, ACK; the generated wire.py),
# appending rows to a file and remembering its last commit across restarts.
# Test processes only.
import os
import socket
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
from wire import (ACK, BATCH, HDR, HELLO, MT_ACK, MT_BATCH, MT_HELLO, ROLE_SAMPLER,  # noqa: E402
                  ROLE_WRITER, hello, packet)


class FakeWriter:
    """Serves path; rows go to out_path; the commit survives stop()/start()."""

    def __init__(self, path, out_path):
        self.path, self.out_path = path, out_path
        self.epoch, self.seq = 0, 0
        self.batches = []          # (epoch, seq, rows) committed, in order
        self.errors = []
        self.lock = threading.Lock()
        self.sock = None
        self.thread = None

    def start(self):
        if os.path.exists(self.path):
            os.unlink(self.path)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(self.path)
        os.chmod(self.path, 0o666)
        self.sock.listen(4)
        self.stopped = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def stop(self):
        """Like a SIGKILL: the socket and any connection vanish at once."""
        self.stopped = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        if getattr(self, 'conn', None):
            try:
                self.conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self.conn.close()
        self.thread.join(5)
        if os.path.exists(self.path):
            os.unlink(self.path)

    def _serve(self):
        while not self.stopped:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conn = conn
            try:
                self._peer(conn)
            except (OSError, ValueError) as e:
                if not self.stopped:
                    self.errors.append(str(e))
            finally:
                conn.close()

    def _read(self, conn, n):
        buf = b''
        while len(buf) < n:
            chunk = conn.recv(n - len(buf))
            if not chunk:
                raise OSError('peer closed')
            buf += chunk
        return buf

    def _peer(self, conn):
        typ, ln = HDR.unpack(self._read(conn, HDR.size))
        version, role, epoch, _ = HELLO.unpack(self._read(conn, ln))
        if typ != MT_HELLO or role != ROLE_SAMPLER:
            raise ValueError('bad hello')
        with self.lock:
            conn.sendall(hello(ROLE_WRITER, self.epoch, self.seq))
        while not self.stopped:
            typ, ln = HDR.unpack(self._read(conn, HDR.size))
            payload = self._read(conn, ln)
            if typ != MT_BATCH:
                raise ValueError('unexpected type %x' % typ)
            epoch, seq, unix_ms, rows, _ = BATCH.unpack_from(payload)
            data = payload[BATCH.size:]
            if data.count(b'\n') != rows or (data and not data.endswith(b'\n')):
                raise ValueError('batch %d: %d rows announced, %d lines' %
                                 (seq, rows, data.count(b'\n')))
            with self.lock:
                if not (epoch == self.epoch and seq <= self.seq):
                    with open(self.out_path, 'ab') as f:
                        f.write(data)
                    self.epoch, self.seq = epoch, seq
                    self.batches.append((epoch, seq, rows))
                conn.sendall(packet(MT_ACK, ACK.pack(epoch, seq)))
