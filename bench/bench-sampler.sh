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
#
# Then the scale run: SCALE ("5000 10000 20000") processes in all, of which
# 200 busy (on CPU in every poll) and 50 holding a GPU device node the bench
# makes (1:7, gpu_devices), the rest sleeping; croft-writer, croft-probe
# (when it can attach) and croft-sampler at the default 2 s interval over
# SCALE_POLLS (default 30) polls, then ASK_S (default 30) seconds more
# asking for status every 50 ms.  Per count: the sampler's CPU (utime +
# stime from /proc/<pid>/stat: CPU-seconds, not wall time, the machine may
# be shared) as % of one core and us per process per poll beside the
# reference loop; how long status took while a poll ran, beside those asked
# between polls; whether every due row came in every poll (busy: each poll;
# sleeping and holders: at least once every idle_every polls) and no poll
# late; each daemon's RSS, and at the end its growth per 1 000 processes
# (least squares over the counts).  pid_max is raised for the run and put
# back; the sampler keeps /proc fds open within RLIMIT_NOFILE, which the
# bench leaves as it finds it (printed).  SCALE= skips the run.
#
# Between the two: NVML absent, present (the stand-in) and hung (see its
# section below).
#
# First, croft.prom's cost per poll (textfile-bench, any user): TEXTFILE
# ("300 20000") synthetic processes summed and written as the sampler does
# at each poll, beside one /proc/<pid>/stat pread per process in the same
# run; TEXTFILE= skips it.
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
for b in "$SAMPLER" "$HELPER" "$BUILD/bench/textfile-bench"; do
	[ -x "$b" ] || { echo "bench-sampler: $b not built (ninja -C $BUILD)" >&2; exit 1; }
done
TF_DIR=$(mktemp -d "${TMPDIR:-/tmp}/croft-bench-textfile.XXXXXX")
for n in ${TEXTFILE-300 20000}; do
	echo "croft.prom: $("$BUILD/bench/textfile-bench" "$n" 30 "$TF_DIR")"
done
rm -rf "$TF_DIR"
[ "$(id -u)" = 0 ] || { echo "bench-sampler: needs root (it reads every process, as the daemon does)"; exit 0; }
T=$(mktemp -d "${TMPDIR:-/tmp}/croft-bench-sampler.XXXXXX")
chmod 0755 "$T"
SPID= WPID= PPID_= PID_MAX0= FIFO=$T/hold
cleanup() {
	[ -n "$SPID" ] && kill "$SPID" 2>/dev/null
	[ -n "$PPID_" ] && kill "$PPID_" 2>/dev/null
	[ -n "$WPID" ] && kill "$WPID" 2>/dev/null
	exec 9>&- 8>&- 2>/dev/null || true
	wait 2>/dev/null || true
	[ -n "$PID_MAX0" ] && echo "$PID_MAX0" > /proc/sys/kernel/pid_max
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

# ---- NVML: absent, present (the stand-in), and with a call that hangs ----
# NVML_COUNT (1000) extra processes, NVML_HOLDERS (8) of them holding a
# GPU node of the bench's own (10:237, gpu_devices) and listed by the
# stand-in libnvidia-ml.so.1 (NVML_STANDIN: tests/sampler/nvml-standin in
# the build) with NVML samples each; nvml = off, then the stand-in, then
# the stand-in hanging in nvmlDeviceGetPowerUsage for the whole run.  Per
# run: the poll loop's CPU per poll and the p50/p95 of the polls' own
# durations (status last_poll_ms, read after each poll), and the NVML
# rounds and hangs.  NVML_MODES orders the runs (repeat them to see the
# noise); NVML_COUNT= skips it.
NVML_STANDIN=${NVML_STANDIN:-$BUILD/tests/sampler/nvml-standin}
if [ -n "${NVML_COUNT-1000}" ] && [ -f "$NVML_STANDIN/libnvidia-ml.so.1" ]; then
	NVML_COUNT=${NVML_COUNT:-1000} NVML_HOLDERS=${NVML_HOLDERS:-8}
	mknod "$T/nvidia237" c 10 237 && chmod 0666 "$T/nvidia237"
	printf '[sampler]\npoll_interval = %sms\nidle_every = 1\n[probe]\ngpu_devices = 10:237\n' \
		"$POLL_MS" > "$T/nvml.conf"
	# nvml_scenario HANG: 8 GPUs, the holders' pids (known once spawned) on GPU 0
	nvml_scenario() {
		{
			for g in 0 1 2 3 4 5 6 7; do
				echo "gpu $g minor=$((230 + g)) sm=50 mem=20 used=1000000 power=300000 energy=5000"
			done
			for pid in $(sed -n 's/^ready [0-9]* //p' "$T/spawn.out"); do
				echo "proc 0 pid=$pid mem=1048576 sm=40"
			done
			if [ "$1" = hung ]; then echo "hang nvmlDeviceGetPowerUsage"; fi
		} > "$T/scenario"
	}
	# durations N: the last_poll_ms of N polls in a row, one a line
	durations() {
		last=$(field polls) seen=0
		while [ $seen -lt "$1" ]; do
			p=$(field polls)
			if [ "${p:-0}" != "$last" ]; then
				field last_poll_ms; last=$p seen=$((seen + 1))
			fi
			sleep 0.02
		done
	}
	printf '\n%-8s %7s %14s %10s %10s %8s %6s\n' nvml procs "ms CPU/poll" "p50 ms" "p95 ms" rounds hangs
	for mode in ${NVML_MODES:-absent present hung}; do
		mkfifo "$FIFO" "$T/hold2"
		"$HELPER" spawn "$NVML_COUNT" < "$T/hold2" > "$T/spawn2.out" &
		BG=$!
		exec 8> "$T/hold2"
		"$HELPER" spawn "$NVML_HOLDERS" 1 "$T/nvidia237" < "$FIFO" > "$T/spawn.out" &
		HPID=$!
		exec 9> "$FIFO"
		i=0; until grep -q ready "$T/spawn.out" 2>/dev/null; do i=$((i + 1)); [ $i -lt 2400 ] || exit 1; sleep 0.05; done
		nvml_scenario "$mode"
		conf=$T/nvml.conf
		if [ $mode = absent ]; then
			sed 's/^\[sampler\]/[sampler]\nnvml = off/' "$T/nvml.conf" > "$T/nvml-off.conf"
			conf=$T/nvml-off.conf
		fi
		LD_LIBRARY_PATH=$NVML_STANDIN NVML_STANDIN_SCENARIO=$T/scenario \
			"$SAMPLER" -c "$conf" -r "$T/run" -u nobody 2>"$T/sampler-nvml.log" &
		SPID=$!
		wait_polls 6
		p0=$(field polls); r0=$(runtime_ns)
		durations "$POLLS" > "$T/durations"
		p1=$(field polls); r1=$(runtime_ns)
		st=$(status)
		rounds=$(echo "$st" | sed -n 's/.*"nvml_rounds":\([0-9]*\).*/\1/p')
		hangs=$(echo "$st" | sed -n 's/.*"nvml_hangs":\([0-9]*\).*/\1/p')
		procs=$(field processes_tracked)
		kill "$SPID"; wait "$SPID" || true; SPID=
		exec 9>&-; wait "$HPID"; rm -f "$FIFO"
		exec 8>&-; wait "$BG" || true; rm -f "$T/hold2"
		sort -g "$T/durations" | awk -v mode=$mode -v procs="$procs" -v cpu=$(( (r1 - r0) / (p1 - p0) )) \
			-v rounds="$rounds" -v hangs="$hangs" '{ d[NR] = $1 } END {
			printf "%-8s %7d %14.2f %10.2f %10.2f %8s %6s\n", mode, procs, cpu / 1e6,
				d[int(NR * 0.5 + 0.5)], d[int(NR * 0.95 + 0.5)], rounds, hangs }'
	done
	echo "goal: p95 with a hung NVML call within the noise of the others (it runs on its own thread)"
fi

# ---- the scale run ----
SCALE=${SCALE-"5000 10000 20000"}
SCALE_POLLS=${SCALE_POLLS:-30}
ASK_S=${ASK_S:-30}
PROBE=$BUILD/probe/croft-probe
[ -n "$SCALE" ] || exit 0
[ -x "$WRITER" ] || { echo "bench-sampler: $WRITER not built: no scale run"; exit 0; }
[ -n "$WPID" ] && { kill "$WPID"; wait "$WPID" || true; }
WPID=
IDLE_EVERY=15 BUSY=200 HELD=50 INTERVAL_MS=2000
most=0; for n in $SCALE; do [ "$n" -gt "$most" ] && most=$n; done
PID_MAX0=$(cat /proc/sys/kernel/pid_max)
need=$(( (most + $(ls /proc | grep -c '^[0-9]')) * 2 ))
[ "$PID_MAX0" -ge "$need" ] && PID_MAX0= || echo "$need" > /proc/sys/kernel/pid_max
mknod "$T/gpu0" c 1 7
chmod 0666 "$T/gpu0"
printf '[sampler]\npoll_interval = %sms\nidle_every = %s\n[probe]\ngpu_devices = 1:7\n[writer]\ndata_dir = %s/sdata\n' \
	"$INTERVAL_MS" "$IDLE_EVERY" "$T" > "$T/scale.conf"
ticks() { awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }
rss_kb() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }
hz=$(getconf CLK_TCK)

# due_check ROWS_FILE PIDS_FILE T0_MS T1_MS: the polls of [T0, T1] by the
# rows' own clock, and whether each bench process has its due rows there.
due_check() {
	awk -v t0="$3" -v t1="$4" -v every="$IDLE_EVERY" -v interval="$INTERVAL_MS" '
	FNR == NR { kind = $1; for (i = 2; i <= NF; i++) kind_of[$i] = kind; n[kind] = NF - 1; next }
	{
		ms = $1; sub(/^\{"unix_ms":/, "", ms); sub(/,.*/, "", ms)
		pid = $0; sub(/.*"tgid":/, "", pid); sub(/,.*/, "", pid)
		if (ms + 0 < t0 || ms + 0 > t1 || !(pid in kind_of)) next
		polls[ms] = 1; rows[pid, ms] = 1
	}
	END {
		np = 0
		for (ms in polls) {     # insertion sort: mawk has no asort, and polls are few
			for (i = ++np; i > 1 && at[i - 1] + 0 > ms + 0; i--) at[i] = at[i - 1]
			at[i] = ms
		}
		late = 0
		for (i = 2; i <= np; i++) if (at[i] - at[i - 1] > 1.5 * interval) late++
		for (pid in kind_of) {
			k = kind_of[pid]; gap = 0; worst = 0
			for (i = 1; i <= np; i++) {
				gap = (pid, at[i]) in rows ? 0 : gap + 1
				if (gap > worst) worst = gap
			}
			if (k == "busy" ? worst > 0 : worst >= every) bad[k]++
			if (worst > most[k]) most[k] = worst
		}
		printf "%d polls, %d spaced over 1.5x the interval", np, late
		for (k in n)
			printf "; %s %d/%d had theirs (at most %d polls in a row without)", k,
				n[k] - bad[k], n[k], most[k]
	}' "$2" "$1"
}

printf '\nscale: %s busy, %s holding a GPU node, the rest sleeping; poll every %s ms, idle rows every %s polls;\n' \
	"$BUSY" "$HELD" "$INTERVAL_MS" "$IDLE_EVERY"
printf 'nice %s, RLIMIT_NOFILE %s (the sampler keeps /proc fds open below it), %s CPUs\n' "$(nice)" \
	"$(ulimit -Hn)" "$(nproc)"
printf '%7s %6s %9s %9s %9s %18s %8s %8s %8s %s\n' procs polls "CPU %core" "us/p/poll" "ref us/p" \
	"status ms p50/95/max" "RSS smp" "RSS wrt" "RSS prb" load
: > "$T/rss"
for n in $SCALE; do
	rm -rf "$T/sdata" "$T/run"
	"$WRITER" -c "$T/scale.conf" -r "$T/run" -u nobody 2>"$T/writer.log" &
	WPID=$!
	PPID_=
	if [ -x "$PROBE" ]; then
		"$PROBE" -c "$T/scale.conf" -r "$T/run" -u nobody >"$T/probe.log" 2>&1 &
		PPID_=$!
		i=0; until grep -q attached "$T/probe.log" || ! kill -0 "$PPID_" 2>/dev/null; do
			i=$((i + 1)); [ $i -lt 600 ] || break; sleep 0.1; done
		kill -0 "$PPID_" 2>/dev/null || { echo "(croft-probe did not start: $(tail -1 "$T/probe.log"))"; PPID_=; }
	fi
	mkfifo "$FIFO"
	"$HELPER" scale $((n - BUSY - HELD)) "$BUSY" "$HELD" "$T/gpu0" < "$FIFO" > "$T/spawn.out" &
	HPID=$!
	exec 9> "$FIFO"
	i=0; until grep -q ready "$T/spawn.out" 2>/dev/null; do i=$((i + 1)); [ $i -lt 6000 ] || exit 1; sleep 0.05; done
	"$SAMPLER" -c "$T/scale.conf" -r "$T/run" -u nobody 2>"$T/sampler.log" &
	SPID=$!
	wait_polls 3     # the first poll reads every identity, the second writes every first row
	p0=$(field polls); late0=$(field polls_late); t0=$(date +%s%3N); s0=$(ticks "$SPID")
	w0=$(ticks "$WPID"); pr0=${PPID_:+$(ticks "$PPID_")}; load0=$(cut -d' ' -f1 /proc/loadavg)
	wait_polls $((p0 + SCALE_POLLS))
	p1=$(field polls); late1=$(field polls_late); t1=$(date +%s%3N); s1=$(ticks "$SPID")
	w1=$(ticks "$WPID"); pr1=${PPID_:+$(ticks "$PPID_")}; load1=$(cut -d' ' -f1 /proc/loadavg)
	procs=$(field processes_tracked); fds=$(field fds_open)
	rss_s=$(rss_kb "$SPID") rss_w=$(rss_kb "$WPID") rss_p=${PPID_:+$(rss_kb "$PPID_")}
	# then, apart (asking costs the sampler CPU too), status asked every 50 ms
	asks=$("$HELPER" asks "$T/run/sampler.ctl" "$ASK_S")
	kill "$SPID"; wait "$SPID" || true; SPID=
	ref=$("$HELPER" refloop 5)
	exec 9>&-; wait "$HPID"; rm -f "$FIFO"
	[ -n "$PPID_" ] && { kill "$PPID_"; wait "$PPID_" || true; PPID_=; }
	kill "$WPID"; wait "$WPID" || true; WPID=
	echo "$procs ${rss_s:-0} ${rss_w:-0} ${rss_p:-0}" >> "$T/rss"
	awk -v s="$((s1 - s0))" -v w="$((w1 - w0))" -v pr="$(( ${pr1:-0} - ${pr0:-0} ))" -v hz="$hz" \
		-v wall="$((t1 - t0))" -v polls="$((p1 - p0))" -v procs="$procs" -v ref="$ref" \
		-v asks="$asks" -v rs="$rss_s" -v rw="$rss_w" -v rp="${rss_p:--}" -v load="$load0-$load1" 'BEGIN {
		split(ref, a, " "); split(asks, q, " ")
		cpu = s / hz; us = cpu * 1e6 / polls / procs
		printf "%7d %6d %8.2f%% %9.2f %9.2f %18s %8s %8s %8s %s\n", procs, polls,
			cpu / (wall / 1000) * 100, us, a[1], q[4] "/" q[5] "/" q[6], rs, rw, rp, load
		printf "        writer %.2f%%, probe %.2f%% of a core; status: %d asked, %d unanswered in 5 s;" \
			" %d during a poll; %d between polls (the reference), %s/%s/%s ms\n",
			w / hz / (wall / 1000) * 100, pr / hz / (wall / 1000) * 100, q[1], q[2], q[3], q[7],
			q[8], q[9], q[10] }'
	for f in "$T"/sdata/croft-dataset*.jsonl; do cat "$f"; done > "$T/rows"
	for f in "$T"/sdata/croft-dataset*.zst; do [ -e "$f" ] && zstd -dcq "$f"; done >> "$T/rows"
	grep -v '^ready' "$T/spawn.out" > "$T/pids"
	printf '        due rows (polls of the window, rows clock): %s' "$(due_check "$T/rows" "$T/pids" "$t0" "$t1")"
	printf '; status: %d polls late, %s fds kept\n' $((late1 - late0)) "$fds"
done
awk 'function fit(col, name) {
		sx = sy = sxx = sxy = 0
		for (i = 1; i <= m; i++) { sx += x[i]; sy += y[i, col]; sxx += x[i] * x[i]; sxy += x[i] * y[i, col] }
		b = (m * sxy - sx * sy) / (m * sxx - sx * sx); a = (sy - b * sx) / m
		printf "  %s: %.0f KiB + %.1f KiB per 1 000 processes", name, a, b * 1000
		worst = 0
		for (i = 1; i <= m; i++) { d = y[i, col] - (a + b * x[i]); if (d < 0) d = -d; if (d > worst) worst = d }
		printf " (fit within %.0f KiB)\n", worst
	}
	{ m++; x[m] = $1; for (c = 2; c <= 4; c++) y[m, c] = $c }
	END { if (m < 2) exit; print "RSS by processes tracked:"; fit(2, "croft-sampler"); fit(3, "croft-writer"); fit(4, "croft-probe") }' "$T/rss"
echo "goals: CPU <= 10% of one core at 20 000 processes; status within 100 ms while a poll runs; every due row in every poll; RSS linear"
