#!/usr/bin/env python3
# test-net.py: croft-probe's socket bytes from every source this kernel
# takes: the one it picks, then each fallback forced with CROFT_PROBE_NET
# (fexit, kretprobe).  Each workload moves an exact number of bytes over
# loopback within one process (TCP and UDP, IPv4 and IPv6, send/recv,
# write/read, sendmmsg/recvmmsg), so sent and received must both equal it:
# counted once, none twice; AF_UNIX is not counted.  Where a forced source
# cannot attach, the probe still starts and its status says why.
# TEST_NET_SOURCES (comma-separated; "" is the picked one) narrows the
# list.  Root, real eBPF.
import os
import subprocess
import sys

from probetest import Probe, Tap, drain, require_bpf

# (kind, bytes): every exchange inside one process, both directions counted there
WORKLOADS = [('tcp4', 3000000), ('tcp6', 1000000), ('rw4', 1000000), ('udp4', 500000),
             ('udp6', 200000), ('mmsg4', 400000), ('unix', 1000000)]


def exchange(tap, client, network, label):
    for kind, nbytes in WORKLOADS:
        p = subprocess.Popen([network, kind, str(nbytes)])
        totals, _, _ = drain(client, {p.pid}, {p.pid})
        rc = p.wait()
        t = totals.get(p.pid, {})
        tx, rx = t.get('net_tx_bytes', 0), t.get('net_rx_bytes', 0)
        want = 0 if kind == 'unix' else nbytes
        tap.ok(rc == 0 and tx == want and rx == want,
               '%s: %s %d bytes -> sent %d, received %d' % (label, kind, nbytes, want, want),
               'rc %d, sent %d, received %d' % (rc, tx, rx))


def one_source(tap, probe_bin, network, forced):
    env = {'CROFT_PROBE_NET': forced} if forced else None
    probe = Probe(probe_bin, env=env)
    try:
        st = probe.status()
        net, fallback = st['net'], st['fallbacks'].get('net', '')
        source = net.get('source')
        label = '%s (%s)' % (source, 'forced' if forced else 'picked')
        if not net['available']:
            tap.ok(forced and net.get('why') and st['programs']['net'] is None,
                   '%s: cannot attach here; the probe started and says why'
                   % (forced or 'picked'), net.get('why', ''))
            return
        tap.ok((source == 'tracepoint') == (fallback == '') and st['programs']['net'],
               '%s: status names the source, and a fallback says why' % label, fallback)
        exchange(tap, probe.client(), network, label)
    finally:
        probe.close()


def main():
    require_bpf()
    probe_bin, network = sys.argv[1], sys.argv[2]
    tap = Tap()
    for forced in os.environ.get('TEST_NET_SOURCES', ',fexit,kretprobe').split(','):
        one_source(tap, probe_bin, network, forced)
    tap.done()


if __name__ == '__main__':
    main()
