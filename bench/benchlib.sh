# benchlib.sh: shell helpers the bench scripts share (sourced, not run).

# default_zstd_level ROOT: the writer's default zstd_level, read from the
# source (common/config.c) so a bench always measures what croft ships.
default_zstd_level() {
	sed -n 's/^[[:space:]]*cfg->zstd_level = \([0-9]*\);.*/\1/p' "$1/common/config.c"
}

# prog_ns IDS NAME...: mean ns per run of the named BPF programs
# (kernel.bpf_stats_enabled), summed over the names, leaving out the program
# ids listed in the file IDS (those loaded before the bench); a tail call's
# time is its caller's.  The programs' own cost, whatever else runs.
prog_ns() {
	bpftool -j prog show 2>/dev/null | python3 -c '
import json, sys
before = set(open(sys.argv[1]).read().split())
names, total = set(sys.argv[2:]), 0.0
for p in json.load(sys.stdin):
    if p.get("name") in names and str(p["id"]) not in before and p.get("run_cnt"):
        total += p["run_time_ns"] / p["run_cnt"]
print("%.1f" % total)' "$@"
}

# stop_pids SIGNAL PID...: the processes this bench started, each sent
# SIGNAL, given 5 s to end (gone, or a zombie waiting for our wait), then
# SIGKILL, then reaped: one that ignores its first signal cannot hang a bench.
stop_pids() {
	sig=$1
	shift
	for p in "$@"; do kill -"$sig" "$p" 2>/dev/null || true; done
	for p in "$@"; do
		i=0
		while [ -r /proc/"$p"/stat ] && ! grep -q ') Z ' /proc/"$p"/stat 2>/dev/null; do
			i=$((i + 1))
			[ $i -lt 100 ] || kill -KILL "$p" 2>/dev/null || true
			sleep 0.05
		done
		wait "$p" 2>/dev/null || true
	done
}

# tool_bench_setup NAME: a fresh $TMP for the bench NAME, no tool running
# yet ($TOOL_PID), and on exit the tool stopped (stop_tool) and
# kernel.bpf_stats_enabled put back as it was and $TMP removed.
tool_bench_setup() {
	TMP=$(mktemp -d "/tmp/croft-$1.XXXXXX")
	TOOL_PID=
	STATS_WAS=$(cat /proc/sys/kernel/bpf_stats_enabled 2>/dev/null || echo 0)
	trap tool_bench_cleanup EXIT INT TERM
}

# stop_tool: the tool ($TOOL_PID, if any) stopped by $TOOL_SIGNAL, TERM
# unless the bench says otherwise.
stop_tool() {
	if [ -n "$TOOL_PID" ]; then
		stop_pids "${TOOL_SIGNAL:-TERM}" "$TOOL_PID"
	fi
	TOOL_PID=
}

tool_bench_cleanup() {
	stop_tool
	echo "$STATS_WAS" >/proc/sys/kernel/bpf_stats_enabled 2>/dev/null
	rm -rf "$TMP"
}
