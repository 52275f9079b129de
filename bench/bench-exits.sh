#!/bin/sh
# bench-exits.sh: what a process's exit costs croft, at RATES exits per
# second (default 100 and 1000) for SECS seconds each, under croft run
# (1 s polls): croft-probe's exit programs (exec, exit, free) in ns per exit
# as the kernel counts their run time (kernel.bpf_stats_enabled), and
# croft-sampler's CPU per last row: its CPU time over the run, less that of
# a run without exits, over the last rows it wrote.  Needs root and BPF;
# BUILD names the build directory.
set -eu
. bench/benchlib.sh

BUILD=${BUILD:-build}
RATES=${RATES:-100 1000}
SECS=${SECS:-10}
CROFT=$BUILD/cli/croft

[ "$(id -u)" = 0 ] || { echo "bench-exits: needs root (eBPF)"; exit 0; }
[ -x "$BUILD/probe/croft-probe" ] || { echo "bench-exits: croft-probe not built"; exit 0; }

tool_bench_setup bench-exits
TOOL_SIGNAL=INT # croft run stops its daemons on Ctrl-C

printf '[sampler]\npoll_interval = 1s\ntextfile_dir =\n' >"$TMP/croft.conf"
"$CROFT" run --data-dir "$TMP/data" --runtime-dir "$TMP/run" --state-dir "$TMP/state" \
	--config "$TMP/croft.conf" >"$TMP/log" 2>&1 &
TOOL_PID=$!
i=0
until [ -S "$TMP/run/sampler.ctl" ] && grep -q "probe: connected$" "$TMP/log"; do
	i=$((i + 1))
	[ $i -lt 600 ] || { echo "bench-exits: croft run did not come up"; cat "$TMP/log"; exit 1; }
	sleep 0.05
done
echo 1 >/proc/sys/kernel/bpf_stats_enabled

PYTHONPATH=$BUILD/tests/lib python3 - "$TMP" "$SECS" "$TOOL_PID" $RATES <<'EOF'
import json, os, subprocess, sys, time

from wire import MT_CTL_STATUS, ctl_request  # noqa: E402

tmp, secs, run_pid, rates = sys.argv[1], float(sys.argv[2]), sys.argv[3], [
    int(r) for r in sys.argv[4:]]
sampler = int(subprocess.run(['pgrep', '-P', run_pid, '-x', 'croft-sampler'], capture_output=True,
                             text=True).stdout.split()[0])  # ours: another may run beside it
tick = os.sysconf('SC_CLK_TCK')


def sampler_cpu_s():
    with open('/proc/%d/stat' % sampler) as f:
        v = f.read().rsplit(')', 1)[1].split()
    return (int(v[11]) + int(v[12])) / tick


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
    cpu0, (ns0, freed0), rows0, t0 = sampler_cpu_s(), exit_progs(), last_rows(), time.monotonic()
    n = int(rate * secs)
    for i in range(n):
        delay = t0 + i / rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        os.waitpid(os.posix_spawn('/bin/true', ['true'], {}), 0)
    time.sleep(3)  # the last finals reach a poll, and are written
    ns1, freed1 = exit_progs()
    return (n, sampler_cpu_s() - cpu0, (ns1 - ns0) / max(freed1 - freed0, 1), last_rows() - rows0,
            time.monotonic() - t0)


cpu0, t0 = sampler_cpu_s(), time.monotonic()
time.sleep(secs + 3)
idle_rate = (sampler_cpu_s() - cpu0) / (time.monotonic() - t0)
print('croft-sampler without exits: %.2f%% of a core' % (idle_rate * 100))
for rate in rates:
    n, cpu, ns, rows, took = run(rate)
    extra = cpu - idle_rate * took
    print('%5d exits/s x %gs: croft-probe %.0f ns per exit (exec+exit+free programs); '
          'croft-sampler %.1f us per last row (%d rows, %.2f%% of a core in all)' %
          (rate, secs, ns, extra / max(rows, 1) * 1e6, rows, cpu / took * 100))
EOF
