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

# tool_bench_setup NAME: a fresh $TMP for the bench NAME, no tool running
# yet ($TOOL_PID), and on exit the tool stopped (by $TOOL_SIGNAL, TERM
# unless the bench says otherwise), kernel.bpf_stats_enabled
# put back as it was and $TMP removed.
tool_bench_setup() {
	TMP=$(mktemp -d "/tmp/croft-$1.XXXXXX")
	TOOL_PID=
	STATS_WAS=$(cat /proc/sys/kernel/bpf_stats_enabled 2>/dev/null || echo 0)
	trap tool_bench_cleanup EXIT INT TERM
}

tool_bench_cleanup() {
	[ -n "$TOOL_PID" ] && kill -"${TOOL_SIGNAL:-TERM}" "$TOOL_PID" 2>/dev/null && wait "$TOOL_PID" 2>/dev/null
	echo "$STATS_WAS" >/proc/sys/kernel/bpf_stats_enabled 2>/dev/null
	rm -rf "$TMP"
}
