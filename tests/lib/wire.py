# wire.py: the Python tests' one copy of croft's wire (contract/wire.h and
# contract/probe_wire.h): the version, message numbers, roles, the flags of
# a probe answer, each payload's layout and the drop reasons, in wire order.
# tests/unit/test-wire.py holds it to the C headers.  Test processes.
import socket
import struct

VERSION = 1
MT_HELLO = 0x0001
MT_BATCH = 0x0100
MT_ACK = 0x0200
MT_PROBE_POLL = 0x0300
MT_PROBE_PROCS, MT_PROBE_EXITS, MT_PROBE_END, MT_PROBE_FINALS = 0x0400, 0x0401, 0x0402, 0x0403
MT_CTL_STATUS, MT_CTL_RELOAD, MT_CTL_LABEL = 0x0500, 0x0501, 0x0502
MT_CTL_REPLY = 0x0600
ROLE_SAMPLER, ROLE_WRITER, ROLE_PROBE, ROLE_CTL = 1, 2, 3, 4
PROBE_END_NET, PROBE_END_FIRST, PROBE_END_SYSCALLS = 1 << 0, 1 << 1, 1 << 2
PROBE_END_IOCTL, PROBE_END_SCHED, PROBE_END_FINALS = 1 << 3, 1 << 4, 1 << 5
PROBE_END_GPUFILE = 1 << 6
PROBE_FINALS_MAX = 16384
PROBE_WIRE_DROPS = 12

# the C struct each is, little-endian with no padding (as test-wire.py checks)
LAYOUTS = {
    'msg_hdr': struct.Struct('<II'),
    'msg_hello': struct.Struct('<IIQQ'),
    'msg_batch': struct.Struct('<QQQII'),
    'msg_ack': struct.Struct('<QQ'),
    'msg_ctl_reply': struct.Struct('<iI'),
    'probe_poll': struct.Struct('<Q'),
    'probe_batch': struct.Struct('<II'),
    'probe_proc': struct.Struct('<IIQQQQQQQQQQII'),
    'probe_syscall': struct.Struct('<IIQ'),
    'probe_exit': struct.Struct('<IIIIQQ16s'),
    'probe_final': struct.Struct('<IIQQQQQQiI16s256s256s'),
    'probe_end': struct.Struct('<QQQIIII12Q12Q'),
}
HDR, HELLO, BATCH, ACK = (LAYOUTS[n] for n in ('msg_hdr', 'msg_hello', 'msg_batch', 'msg_ack'))
CTL_REPLY, PROBE_POLL, PROBE_BATCH = (LAYOUTS[n] for n in ('msg_ctl_reply', 'probe_poll',
                                                           'probe_batch'))
PROC, SYSCALL, EXIT, FINAL, END = (LAYOUTS[n] for n in ('probe_proc', 'probe_syscall',
                                                        'probe_exit', 'probe_final', 'probe_end'))
# enum probe_drop in order, by the names croft-probe's status gives them
# (test-lifecycle.py holds them to a running probe's)
DROPS = ['syscall_map_full', 'ioctl_map_full', 'sched_map_full', 'runq_map_full',
         'net_map_full', 'ringbuf_full', 'gpufile_map_full', 'inflight_map_full',
         'wait_unchecked']


def packet(mtype, payload=b''):
    """One message: the header, then the payload."""
    return HDR.pack(mtype, len(payload)) + payload


def hello(role, epoch=0, seq=0):
    return packet(MT_HELLO, HELLO.pack(VERSION, role, epoch, seq))


def ctl_request(path, mtype, payload=b'', timeout=10):
    """One control request on a daemon's .ctl socket: (status, reply text)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(path)
        s.sendall(hello(ROLE_CTL) + packet(mtype, payload))
        data = b''
        while len(data) < HDR.size or len(data) < HDR.size + HDR.unpack_from(data)[1]:
            chunk = s.recv(1 << 16)
            if not chunk:
                break
            data += chunk
    finally:
        s.close()
    length = HDR.unpack_from(data)[1]
    status = CTL_REPLY.unpack_from(data, HDR.size)[0]
    text = data[HDR.size + CTL_REPLY.size:HDR.size + length]
    return status, text.rstrip(b'\0').decode('utf-8', 'replace')
