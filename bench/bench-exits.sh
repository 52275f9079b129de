#!/bin/sh
# bench-exits.sh: what a process's exit costs croft, at RATES exits per
# second (default 100 and 1000) for SECS seconds each, under croft run
# (POLL, default 1s, between polls): croft-probe's exit programs (exec,
# exit, free) in ns per exit as the kernel counts their run time
# (kernel.bpf_stats_enabled), croft-probe's own CPU per exit (the exits it
# drains and answers with; a long POLL piles them up between answers), and
# croft-sampler's CPU per last row: its CPU time over the run, less that of
# a run without exits, over the last rows it wrote.  Needs root and BPF;
# BUILD names the build directory.
set -eu
. bench/benchlib.sh

BUILD=${BUILD:-build}
RATES=${RATES:-100 1000}
SECS=${SECS:-10}
POLL=${POLL:-1s}
CROFT=$BUILD/cli/croft

[ "$(id -u)" = 0 ] || { echo "bench-exits: needs root (eBPF)"; exit 0; }
[ -x "$BUILD/probe/croft-probe" ] || { echo "bench-exits: croft-probe not built"; exit 0; }

tool_bench_setup bench-exits
TOOL_SIGNAL=INT # croft run stops its daemons on Ctrl-C

printf '[sampler]\npoll_interval = %s\ntextfile_dir =\n' "$POLL" >"$TMP/croft.conf"
"$CROFT" run --data-dir "$TMP/data" --runtime-dir "$TMP/run" --state-dir "$TMP/state" \
	--config "$TMP/croft.conf" >"$TMP/log" 2>&1 &
TOOL_PID=$!
i=0
until [ -S "$TMP/run/sampler.ctl" ] && grep -q "probe: connected$" "$TMP/log"; do
	i=$((i + 1))
	[ $i -lt 2400 ] || { echo "bench-exits: croft run did not come up"; cat "$TMP/log"; exit 1; }
	sleep 0.05
done
echo 1 >/proc/sys/kernel/bpf_stats_enabled

PYTHONPATH=$BUILD/tests/lib python3 - "$TMP" "$SECS" "$TOOL_PID" $RATES <<'EOF'
import json, os, subprocess, sys, time

from wire import MT_CTL_STATUS, ctl_request  # noqa: E402

tmp, secs, run_pid, rates = sys.argv[1], float(sys.argv[2]), sys.argv[3], [
    int(r) for r in sys.argv[4:]]
tick = os.sysconf('SC_CLK_TCK')


def child(name):
    """croft run's daemon NAME: ours, where another may run beside it."""
    return int(subprocess.run(['pgrep', '-P', run_pid, '-x', name], capture_output=True,
                              text=True).stdout.split()[0])


def cpu_s(pid):
    with open('/proc/%d/stat' % pid) as f:
        v = f.read().rsplit(')', 1)[1].split()
    return (int(v[11]) + int(v[12])) / tick


sampler, probe = child('croft-sampler'), child('croft-probe')


def exit_progs():
    """run_time_ns over croft's exit programs, and how many groups were freed (every
    process on the host: the per-exit figure is per process, whoever started it)."""
    out = subprocess.run(['bpftool', '-j', 'prog', 'show'], capture_output=True, text=True).stdout
    ns = freed = 0
    for p in json.loads(out or '[]'):
        if p.get('name', '').startswith(('exit_exec', 'exit_exit', 'exit_free')):
            ns += p.get('run_time_ns', 0)
        if p.get('name', '').startswith('exit_free'):
            freed += p.get('run_cnt', 0)
    return ns, freed


def last_rows():
    _, text = ctl_request(os.path.join(tmp, 'run', 'sampler.ctl'), MT_CTL_STATUS)
    return sum(json.loads(text)['figures']['last_rows'].values())


def run(rate):
    """rate exits a second for secs: /bin/true spawned at a steady pace, each reaped."""
    cpu0, pcpu0, (ns0, freed0) = cpu_s(sampler), cpu_s(probe), exit_progs()
    rows0, t0 = last_rows(), time.monotonic()
    n = int(rate * secs)
    for i in range(n):
        delay = t0 + i / rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        os.waitpid(os.posix_spawn('/bin/true', ['true'], {}), 0)
    time.sleep(3)  # the last finals reach a poll, and are written
    ns1, freed1 = exit_progs()
    return (n, cpu_s(sampler) - cpu0, (ns1 - ns0) / max(freed1 - freed0, 1), last_rows() - rows0,
            time.monotonic() - t0, (cpu_s(probe) - pcpu0) / max(freed1 - freed0, 1))


cpu0, t0 = cpu_s(sampler), time.monotonic()
time.sleep(secs + 3)
idle_rate = (cpu_s(sampler) - cpu0) / (time.monotonic() - t0)
print('croft-sampler without exits: %.2f%% of a core' % (idle_rate * 100))
for rate in rates:
    n, cpu, ns, rows, took, probe_s = run(rate)
    extra = cpu - idle_rate * took
    per_row = ('%.1f us per last row' % (extra / rows * 1e6) if rows else
               'no last rows yet (POLL outlasts the run)')
    print('%5d exits/s x %gs: croft-probe %.0f ns per exit (exec+exit+free programs), '
          '%.2f us of its own CPU per exit; croft-sampler %s (%d rows, %.2f%% of a core in all)' %
          (rate, secs, ns, probe_s * 1e6, per_row, rows, cpu / took * 100))
EOF
