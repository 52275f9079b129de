#!/bin/sh
# bench-sampler.sh: croft-sampler's CPU per poll with 1 000 and 5 000 extra
# (sleeping) processes, as µs per process per poll, beside a reference loop
# in the same run that only lists /proc and opens and reads every
# /proc/<pid>/stat (best pass).  Goals: <= 2x the reference; 5 000
# processes every 2 s under 2% of one core.  The sampler's CPU is its own
# scheduler run time (/proc/<pid>/schedstat) over many polls, so a busy
# shared machine bends it little.  Needs root (drops to nobody like the
# daemon).  Env: BUILD (build dir, default build), COUNTS ("1000 5000"),
# POLLS (measured polls, default 40), POLL_MS (default 250), HOLDERS (GPU
# holders, default 4) and GPU_FDS (fds each, default "100 1000 10000").
set -eu
BUILD=${BUILD:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
SAMPLER=$BUILD/sampler/croft-sampler
HELPER=$BUILD/bench/sampler-bench
WRITER=$BUILD/writer/croft-writer
COUNTS=${COUNTS:-"1000 5000"}
POLLS=${POLLS:-40}
POLL_MS=${POLL_MS:-250}
HOLDERS=${HOLDERS:-4}
GPU_FDS=${GPU_FDS:-"100 1000 10000"}
for b in "$SAMPLER" "$HELPER"; do
	[ -x "$b" ] || { echo "bench-sampler: $b not built (ninja -C $BUILD)" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "bench-sampler: needs root (it reads every process, as the daemon does)"; exit 0; }
T=$(mktemp -d "${TMPDIR:-/tmp}/croft-bench-sampler.XXXXXX")
chmod 0755 "$T"
SPID= WPID= FIFO=$T/hold
cleanup() {
	[ -n "$SPID" ] && kill "$SPID" 2>/dev/null
	[ -n "$WPID" ] && kill "$WPID" 2>/dev/null
	exec 9>&- 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$T"
}
trap cleanup EXIT INT TERM
printf '[sampler]\npoll_interval = %sms\n[writer]\ndata_dir = %s/data\n' "$POLL_MS" "$T" > "$T/croft.conf"
if [ -x "$WRITER" ]; then
	"$WRITER" --config "$T/croft.conf" --runtime-dir "$T/run" --data-dir "$T/data" -u nobody 2>"$T/writer.log" &
	WPID=$!
fi
status() { "$HELPER" status "$T/run/sampler.ctl" 2>/dev/null; }
field() { status | sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p"; }
runtime_ns() { awk '{ print $1 }' "/proc/$SPID/schedstat"; }
wait_polls() { # wait_polls N: until the sampler has polled N times
	i=0
	while p=$(field polls) && [ "${p:-0}" -lt "$1" ]; do
		i=$((i + 1)); [ $i -lt 6000 ] || { echo "bench-sampler: sampler stuck" >&2; exit 1; }
		sleep 0.05
	done
}

# measure CONF SPAWN_ARGS...: spawns, runs the sampler with CONF over POLLS
# polls; sets procs and per_poll_ns (the sampler's run time per poll).
measure() {
	conf=$1; shift
	mkfifo "$FIFO"
	"$HELPER" spawn "$@" < "$FIFO" > "$T/spawn.out" &
	HPID=$!
	exec 9> "$FIFO"
	i=0; until grep -q ready "$T/spawn.out" 2>/dev/null; do i=$((i + 1)); [ $i -lt 2400 ] || exit 1; sleep 0.05; done
	"$SAMPLER" -c "$conf" -r "$T/run" -u nobody 2>"$T/sampler.log" &
	SPID=$!
	wait_polls 4     # past the first polls, which read every identity
	p0=$(field polls); r0=$(runtime_ns)
	wait_polls $((p0 + POLLS))
	p1=$(field polls); r1=$(runtime_ns)
	procs=$(field processes_tracked)
	per_poll_ns=$(( (r1 - r0) / (p1 - p0) ))
	kill "$SPID"; wait "$SPID" || true; SPID=
}

printf '%-8s %9s %14s %14s %7s %12s %s\n' extra procs "sampler us/p" "reference us/p" ratio "ms CPU/poll" "core at 2 s"
for n in $COUNTS; do
	measure "$T/croft.conf" "$n"
	ref=$("$HELPER" refloop 20)
	exec 9>&-; wait "$HPID"; rm -f "$FIFO"
	awk -v per_poll="$per_poll_ns" -v procs="$procs" -v ref="$ref" -v n="$n" 'BEGIN {
		split(ref, a, " ")
		us = per_poll / 1000 / procs
		printf "%-8d %9d %14.2f %14.2f %7.2f %12.2f %.2f%%\n", n, procs, us, a[1], us / a[1],
			per_poll / 1e6, per_poll / 2e9 * 100 }'
done
echo "goals: ratio <= 2.0; 5000 processes every 2 s < 2% of one core (last column)"

# GPU holders: their fds are looked at every poll (gpu-held ends at the
# next poll after the last GPU file closes): a check of their GPU files,
# a full scan once every idle_every polls.  The same processes holding
# /dev/full and FDS fds, once as GPU holders (gpu_devices = 1:7) and once
# not (1:9: full scans every idle_every polls only); the reference is a
# full scan of all their fds, which a look at every fd each poll would cost.
printf '\n%-8s %8s %14s %14s %7s %15s\n' holders "fds each" "ms/poll held" "ms/poll not" ratio "full scan ms"
for fds in $GPU_FDS; do
	for dev in 1:7 1:9; do
		sed "s/^\[sampler\]/[probe]\ngpu_devices = $dev\n[sampler]/" "$T/croft.conf" > "$T/gpu.conf"
		measure "$T/gpu.conf" "$HOLDERS" "$fds" /dev/full
		[ "$dev" = 1:9 ] && full=$("$HELPER" fdloop 10 $(sed -n 's/^ready [0-9]* //p' "$T/spawn.out"))
		exec 9>&-; wait "$HPID"; rm -f "$FIFO"
		eval "ns_$(echo $dev | tr : _)=$per_poll_ns"
	done
	awk -v held="$ns_1_7" -v not="$ns_1_9" -v h="$HOLDERS" -v fds="$fds" -v full="$full" 'BEGIN {
		printf "%-8d %8d %14.2f %14.2f %7.2f %15.2f\n", h, fds, held / 1e6, not / 1e6,
			held / not, full }'
done
echo "goal: ratio ~1 (a GPU holder's per-poll look costs about what an idle process does); full scan ms: what reading every fd each poll would add"
