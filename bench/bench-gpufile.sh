#!/bin/sh
# bench-gpufile.sh: what croft-probe's GPU evidence costs, as bench-probe.sh
# measures the ioctl path: the same call timed bare, under croft-probe with
# the file in the GPU device set (counted, marked, cleared at sys_exit) and
# with it out of the set (looked at, not counted), and with the set but
# without the gpufile concern (CROFT_PROBE_FAIL=gpufile: croft before it,
# the reference for what it adds to every syscall), in one run, tools
# interleaved round by round, the fastest chunk of the best round kept.
# Calls: an ioctl on /dev/full (1:7), a poll with timeout 0 on /dev/ptmx
# (5:2), an mmap + munmap of /dev/zero (1:5), and getppid, which the GPU
# evidence adds a sys_exit program run to.  Stand-ins, no GPU.  Needs root
# and BPF; BUILD names the build directory.
set -eu
. bench/benchlib.sh

BUILD=${BUILD:-build}
N=${N:-300000}   # calls per round and kind
ROUNDS=${ROUNDS:-5}
PROBE=$BUILD/probe/croft-probe
LOOP=$BUILD/bench/probe-bench

[ "$(id -u)" = 0 ] || { echo "bench-gpufile: needs root (eBPF)"; exit 0; }
[ -x "$PROBE" ] && [ -x "$LOOP" ] || { echo "bench-gpufile: croft-probe not built"; exit 0; }

tool_bench_setup bench-gpufile

# start_tool nothing | counted | uncounted | nogpufile
start_tool() {
	fail=
	case $1 in
	nothing) TOOL_PID= ; return ;;
	counted) printf '[probe]\ngpu_devices = 1:7, 5:2, 1:5\n' >"$TMP/croft.conf" ;;
	uncounted) printf '[probe]\ngpu_devices = 1:9\n' >"$TMP/croft.conf" ;;
	nogpufile) printf '[probe]\ngpu_devices = 1:7, 5:2, 1:5\n' >"$TMP/croft.conf"; fail=gpufile ;;
	esac
	bpftool -j prog show 2>/dev/null | python3 -c '
import json, sys
print(" ".join(str(p["id"]) for p in json.load(sys.stdin)))' >"$TMP/ids"
	CROFT_PROBE_FAIL=$fail "$PROBE" -c "$TMP/croft.conf" -r "$TMP/run" >"$TMP/out" 2>&1 &
	TOOL_PID=$!
	i=0
	until grep -q attached "$TMP/out" 2>/dev/null; do
		i=$((i + 1))
		[ $i -lt 600 ] || { echo "bench-gpufile: croft-probe did not attach"; cat "$TMP/out"; exit 1; }
		sleep 0.05
	done
	sleep 0.3
}

echo "bench-gpufile: $N calls per kind, pinned to CPU 0, fastest chunk, best of $ROUNDS interleaved rounds"
round=0
while [ $round -lt "$ROUNDS" ]; do
	for tool in nothing counted uncounted nogpufile; do
		start_tool $tool
		echo "$tool getppid $("$LOOP" getppid "$N")" >>"$TMP/all"
		echo "$tool ioctl $("$LOOP" ioctl "$N" /dev/full | cut -d' ' -f1)" >>"$TMP/all"
		echo "$tool poll $("$LOOP" poll "$N" /dev/ptmx | cut -d' ' -f1)" >>"$TMP/all"
		echo "$tool mmap $("$LOOP" mmap "$N" /dev/zero | cut -d' ' -f1)" >>"$TMP/all"
		if [ $round = 0 ] && [ $tool = counted ]; then
			# the programs' own time per run, stats on only for this
			echo 1 >/proc/sys/kernel/bpf_stats_enabled
			"$LOOP" getppid "$N" >/dev/null
			echo "sys_enter(+tail calls) $(prog_ns "$TMP/ids" sys_enter_btf sys_enter_raw) sys_exit $(prog_ns "$TMP/ids" gpu_exit_btf gpu_exit_raw)" >"$TMP/prog"
			echo 0 >/proc/sys/kernel/bpf_stats_enabled
		fi
		stop_tool
	done
	round=$((round + 1))
done
awk '{ k = $1 " " $2; if (!(k in m) || $3 < m[k]) m[k] = $3 }
	END {
		printf "%-8s %9s %20s %20s %20s %12s\n", "call", "bare ns", "+ croft, in GPU set",
			"+ croft, not in set", "+ croft w/o gpufile", "counted/bare"
		n = split("getppid ioctl poll mmap", calls, " ")
		for (i = 1; i <= n; i++) {
			c = calls[i]; b = m["nothing " c]
			printf "%-8s %9.1f %+20.1f %+20.1f %+20.1f %12.2f\n", c, b, m["counted " c] - b,
				m["uncounted " c] - b, m["nogpufile " c] - b, m["counted " c] / b
		}
		printf "gpufile adds to every syscall (getppid, croft - croft w/o gpufile): %+.1f ns\n",
			m["uncounted getppid"] - m["nogpufile getppid"]
		printf "a counted event costs (in set - not in set): ioctl %+.1f ns, poll %+.1f ns, mmap %+.1f ns\n",
			m["counted ioctl"] - m["uncounted ioctl"], m["counted poll"] - m["uncounted poll"],
			m["counted mmap"] - m["uncounted mmap"]
	}' "$TMP/all"
echo "program  own time per run over getppid (bpf_stats, clock reads included): $(cat "$TMP/prog")"
