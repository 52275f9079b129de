# fuseserver.py: a FUSE file system of one file, served over /dev/fuse by a
# thread of the test (no libfuse), mounted allow_other as root.  It answers
# everything at once but GETATTR and STATX from the processes it is told to
# hold (the sampler under test; other samplers on the machine are answered):
# those it leaves unanswered, as a hostile server would, and counts.  stop()
# unmounts and closes the device, which fails what is held.
# Test processes only (root: mount).
import ctypes
import errno
import os
import select
import struct
import threading

IN_HDR = struct.Struct('<IIQQIIIHH')   # len opcode unique nodeid uid gid pid extlen pad
OUT_HDR = struct.Struct('<IiQ')        # len error unique
ATTR = struct.Struct('<QQQQQQIIIIIIIIII')
LOOKUP, FORGET, GETATTR, OPEN, RELEASE, FLUSH, INIT = 1, 2, 3, 14, 18, 25, 26
OPENDIR, RELEASEDIR, INTERRUPT, DESTROY, BATCH_FORGET, STATX = 27, 29, 36, 38, 42, 52
NO_REPLY = (FORGET, BATCH_FORGET, INTERRUPT, DESTROY)
FILE_NAME = b'f'
MS_NOSUID, MS_NODEV, MNT_DETACH = 2, 4, 2


def attr(nodeid):
    if nodeid == 1:
        return ATTR.pack(1, 0, 0, 0, 0, 0, 0, 0, 0, 0o040755, 2, 0, 0, 0, 4096, 0)
    return ATTR.pack(nodeid, 4096, 8, 0, 0, 0, 0, 0, 0, 0o100644, 1, 0, 0, 0, 4096, 0)


class FuseServer:
    def __init__(self, mountpoint, hold_pids):
        self.mnt, self.hold_pids = mountpoint, hold_pids
        self.held = []  # (pid, opcode) of the requests left unanswered
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.fd = os.open('/dev/fuse', os.O_RDWR)
        opts = 'fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other' % self.fd
        if self.libc.mount(b'croft-test-fuse', mountpoint.encode(), b'fuse',
                           MS_NOSUID | MS_NODEV, opts.encode()) != 0:
            e = ctypes.get_errno()
            os.close(self.fd)
            raise OSError(e, 'mount fuse: %s' % os.strerror(e))
        self.stopping = False
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def path(self):
        return os.path.join(self.mnt, FILE_NAME.decode())

    def reply(self, unique, error=0, payload=b''):
        os.write(self.fd, OUT_HDR.pack(OUT_HDR.size + len(payload), error, unique) + payload)

    def answer(self, op, unique, nodeid, body):
        if op == INIT:
            major, minor, readahead, _ = struct.unpack_from('<IIII', body)
            self.reply(unique, 0, struct.pack('<IIIIHHIIHHII6I', 7, min(minor, 31), readahead,
                                              0, 16, 12, 65536, 1, 0, 0, 0, 0, *[0] * 6))
        elif op == LOOKUP and nodeid == 1 and body.rstrip(b'\0') == FILE_NAME:
            # entry valid a minute, attributes never: a plain stat asks again
            self.reply(unique, 0, struct.pack('<QQQQII', 2, 0, 60, 0, 0, 0) + attr(2))
        elif op == LOOKUP:
            self.reply(unique, -errno.ENOENT)
        elif op == GETATTR:
            self.reply(unique, 0, struct.pack('<QII', 0, 0, 0) + attr(nodeid))
        elif op in (OPEN, OPENDIR):
            self.reply(unique, 0, struct.pack('<QII', 1, 0, 0))
        elif op in (RELEASE, RELEASEDIR, FLUSH):
            self.reply(unique)
        elif op not in NO_REPLY:
            self.reply(unique, -errno.ENOSYS)

    def serve(self):
        while not self.stopping:
            if not select.select([self.fd], [], [], 0.2)[0]:
                continue
            try:
                req = os.read(self.fd, 1 << 20)
            except OSError as e:
                if e.errno in (errno.ENOENT, errno.EINTR, errno.EAGAIN):
                    continue  # an interrupted request, gone before it was read
                return  # ENODEV: unmounted
            _, op, unique, nodeid, _, _, pid, _, _ = IN_HDR.unpack_from(req)
            if op in (GETATTR, STATX) and pid in self.hold_pids:
                self.held.append((pid, op))
                continue
            self.answer(op, unique, nodeid, req[IN_HDR.size:])

    def stop(self):
        """Unmounts and closes the device: what is held fails (ENOTCONN)."""
        self.stopping = True
        self.thread.join(5)
        self.libc.umount2(self.mnt.encode(), MNT_DETACH)
        os.close(self.fd)
