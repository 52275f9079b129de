#!/usr/bin/env python3
# test-exits-probekill.py: every process counts, and what cannot be counted
# is said, when croft-probe is SIGKILLed in the middle and started again (as
# croft run restarts it; here the test does, on the same socket).
# croft-probe + croft-sampler (0.5 s polls) watch short processes started
# one after another, each reaped with wait4, before, during and after the
# probe's absence.  Whatever was seen gets exactly one last row; those whose
# final figures went with the probe end "vanished", and the sampler's status
# counts each of them; the rest hold wait4's CPU time (1%).  A process with
# no row at all lived wholly while the probe was away.  Root, real eBPF.
# test-exits-probekill.py CROFT_PROBE PROBE_WORK CROFT_SAMPLER
import signal
import sys
import time

from probetest import Tap, require_bpf, wait_for
from absence import AnswerWatch, burn_for, check_rows
from rowtest import Stack

PHASE_S = 3.0  # starting processes before the kill, while away, after the restart


def probe_connected(st):
    return st.sampler_status()['probe'].startswith('connected')


def main():
    require_bpf()
    probe_bin, work, sampler_bin = sys.argv[1:4]
    tap = Tap()
    st = Stack(probe_bin, sampler_bin)
    try:
        st.start_sampler()
        wait_for(lambda: probe_connected(st), 30, 'the sampler connected to the probe')
        time.sleep(1.5)  # the probe's baseline answer is behind us
        done = {}
        watch = AnswerWatch(lambda: st.sampler_status()['probe_link']['answers'])
        burn_for(st.spawn, work, PHASE_S, done)
        cut_ms = watch.cut()
        st.probe.kill(signal.SIGKILL)
        burn_for(st.spawn, work, PHASE_S, done)
        st.probe.start()
        wait_for(lambda: probe_connected(st), 30, 'the sampler back on the new probe')
        back_ms = time.time() * 1000
        time.sleep(1.5)  # the new probe's baseline answer
        burn_for(st.spawn, work, PHASE_S, done)

        def vanished():  # every vanished row on the host, the killed probe's own among them
            last_rows = st.sampler_status()['last_rows']
            return (last_rows['vanished'],
                    sum(r.get('exited') == 'vanished' for r in st.rows.refresh()),
                    last_rows['vanished_unread'])
        check_rows(tap, done, st.rows.of, vanished, cut_ms, back_ms)
    finally:
        if tap.failed:
            st.print_logs()
        st.close()
    tap.done()


if __name__ == '__main__':
    main()
