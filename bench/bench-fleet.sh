#!/bin/sh
# bench-fleet.sh: reading a fleet.  N generated hosts x H hours of hourly
# .jsonl.zst segments (a folder per host, the writer's zstd level); for each
# N: croft stats (1 and 2 threads) against zstd -dc of the same files in the
# same run, docs/engines.md's DuckDB fleet query, croft-dask.py on a scheduler
# and two workers on 127.0.0.1 (started and stopped here, by pid), and the
# peak RSS of croft stats, which must not grow with N.  Then the cost of the
# fleet keys: the same rows with and without host, span_ms and
# process.start_ms, raw bytes per row and zstd bytes per hour.
# Environment: BUILD (default build), BENCH_NS (default "1 10 100"),
# BENCH_HOURS (default 1), BENCH_PROCESSES (a host's processes, default 20),
# BENCH_DIR (dataset cache), BENCH_COST_PROCESSES (default 300).
set -eu
cd "$(dirname "$0")/.."
. bench/benchlib.sh
BUILD=${BUILD:-build}
NS=${BENCH_NS:-1 10 100}
HOURS=${BENCH_HOURS:-1}
PROCS=${BENCH_PROCESSES:-20}
LEVEL=$(default_zstd_level .)
DIR=${BENCH_DIR:-${TMPDIR:-/tmp}/croft-bench-fleet-p$PROCS-h$HOURS-zstd$LEVEL}
CROFT=$BUILD/cli/croft
GEN=$BUILD/bench/croft-gen-rows
PY=/usr/bin/python3 # Debian's, with python3-dask and python3-distributed
[ -x "$CROFT" ] && [ -x "$GEN" ] || { echo "bench-fleet: build first ($CROFT, $GEN)"; exit 1; }
POLLS=$((HOURS * 1800))
mkdir -p "$DIR"
: > "$DIR/empty.conf"

# host K: its own seed (distinct hosts), HOURS hourly segments
make_host() {
	d="$DIR/hosts/node-$1"
	[ -f "$d/.done" ] && return 0
	mkdir -p "$d"
	"$GEN" --processes "$PROCS" --polls "$POLLS" --seed "$1" --host "node-$1" > "$d/all.jsonl"
	split -n "l/$HOURS" -d -a 3 "$d/all.jsonl" "$d/croft-dataset-20261020T"
	for f in "$d"/croft-dataset-20261020T*; do
		zstd -q -T1 "-$LEVEL" --rm "$f" -o "$f.jsonl.zst"
	done
	rm "$d/all.jsonl"
	touch "$d/.done"
}

# "WALL_S CPU_S MAXRSS_KIB" of one run of "$@" (in a fresh process: its own peak)
measure() {
	$PY - "$@" <<'PY'
import resource, subprocess, sys, time
t0 = time.monotonic()
p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
t1 = time.monotonic()
if p.returncode not in (0, 3):
    sys.exit(f"{sys.argv[1:]}: exit {p.returncode}")
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{t1 - t0:.3f} {r.ru_utime + r.ru_stime:.3f} {r.ru_maxrss}")
PY
}
f1() { echo "$1" | cut -d' ' -f1; }
f2() { echo "$1" | cut -d' ' -f2; }
f3() { echo "$1" | cut -d' ' -f3; }
gbs() { awk -v b="$1" -v s="$2" 'BEGIN { printf "%.2f", (s > 0 ? b / s / 1e9 : 0) }'; }

SCHED= W1= W2=
stop_dask() {
	stop_pids TERM $W2 $W1 $SCHED
	SCHED= W1= W2=
}
trap stop_dask EXIT
start_dask() {
	rm -f "$DIR/scheduler.json"
	$PY -m distributed.cli.dask_scheduler --host 127.0.0.1 --port 0 --no-dashboard \
		--scheduler-file "$DIR/scheduler.json" > "$DIR/scheduler.log" 2>&1 &
	SCHED=$!
	i=0
	while [ ! -s "$DIR/scheduler.json" ]; do
		i=$((i + 1))
		[ "$i" -lt 600 ] && kill -0 "$SCHED" 2>/dev/null || { echo "bench-fleet: no scheduler"; return 1; }
		sleep 0.1
	done
	$PY -m distributed.cli.dask_worker --scheduler-file "$DIR/scheduler.json" --nthreads 1 \
		--no-nanny --no-dashboard --host 127.0.0.1 > "$DIR/worker1.log" 2>&1 &
	W1=$!
	$PY -m distributed.cli.dask_worker --scheduler-file "$DIR/scheduler.json" --nthreads 1 \
		--no-nanny --no-dashboard --host 127.0.0.1 > "$DIR/worker2.log" 2>&1 &
	W2=$!
}

have_duck=false
command -v node >/dev/null 2>&1 && [ -d tests/cli/node_modules/@duckdb/node-api ] && have_duck=true
have_dask=false
$PY -c "import dask.bag, distributed, zstandard" 2>/dev/null && have_dask=true
$have_dask && start_dask

echo "fleet: a host is $PROCS processes x $HOURS h of 2 s polls (croft-gen-rows), zstd level $LEVEL;" \
	"$(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%5s %8s | %8s | %-22s %-22s | %6s %8s | %-14s | %-14s\n" N "GB rows" "zstd -dc" \
	"croft 1 thread" "croft 2 threads" "ratio" "RSS MiB" "DuckDB 1 thr" "Dask 2 workers"
for n in $NS; do
	k=1
	while [ "$k" -le "$n" ]; do make_host "$k"; k=$((k + 1)); done
	rm -rf "$DIR/fleet" && mkdir -p "$DIR/fleet"
	k=1
	# hard links, not symbolic ones: croft stats follows no link found in a walk
	while [ "$k" -le "$n" ]; do cp -al "$DIR/hosts/node-$k" "$DIR/fleet/node-$k"; k=$((k + 1)); done
	segs=$(find -L "$DIR/fleet" -name '*.jsonl.zst' | sort)
	bytes=$(zstd -dc $segs | wc -c)
	z=$(measure sh -c "zstd -dc $(echo $segs) > /dev/null")
	c1=$(measure "$CROFT" stats --config "$DIR/empty.conf" --threads 1 "$DIR/fleet")
	c2=$(measure "$CROFT" stats --config "$DIR/empty.conf" --threads 2 "$DIR/fleet")
	hosts=$("$CROFT" stats --json --config "$DIR/empty.conf" "$DIR/fleet" |
		$PY -c 'import json,sys; print(len(json.load(sys.stdin)["hosts"]))')
	[ "$hosts" = "$n" ] || { echo "bench-fleet: $hosts hosts read, not $n"; exit 1; }
	duck="-"
	if $have_duck; then
		CROFT_GLOB="$DIR/fleet/*/*.jsonl.zst" tests/cli/docs-sql.sh docs/engines.md fleet-view fleet-query > "$DIR/fleet.sql"
		d=$(DUCKDB_THREADS=1 measure sh -c "node tests/cli/duckdb-check.mjs < '$DIR/fleet.sql'")
		duck="$(gbs "$bytes" "$(f1 "$d")") GB/s"
	fi
	dask="-"
	if $have_dask; then
		k=$(measure $PY share/croft/croft-dask.py --scheduler-file "$DIR/scheduler.json" \
			--wait-workers 2 "$DIR/fleet")
		dask="$(gbs "$bytes" "$(f1 "$k")") GB/s"
	fi
	# croft per thread (its CPU seconds) over zstd -dc's, the same files
	ratio=$(awk -v c="$(f2 "$c1")" -v z="$(f2 "$z")" 'BEGIN { printf "%.2f", (c > 0 ? z / c : 0) }')
	printf "%5s %8.2f | %5s GB/s | %5s GB/s, %5s/thr | %5s GB/s, %5s/thr | %6s %8.1f | %-14s | %-14s\n" \
		"$n" "$(awk -v b="$bytes" 'BEGIN { print b / 1e9 }')" "$(gbs "$bytes" "$(f2 "$z")")" \
		"$(gbs "$bytes" "$(f1 "$c1")")" "$(gbs "$bytes" "$(f2 "$c1")")" \
		"$(gbs "$bytes" "$(f1 "$c2")")" "$(awk -v b="$bytes" -v s="$(f2 "$c2")" 'BEGIN { printf "%.2f", b / s / 2e9 }')" \
		"$ratio" "$(awk -v k="$(f3 "$c1")" 'BEGIN { print k / 1024 }')" "$duck" "$dask"
done
echo "  GB rows: JSON bytes (1 GB = 1e9 B); zstd -dc and /thr: per CPU-second; croft and the"
echo "  engines: elapsed; ratio: croft 1 thread over zstd -dc per CPU-second; RSS: croft stats"
echo "  --threads 1 peak; DuckDB: docs/engines.md's fleet query, SET threads = 1; Dask: croft-dask.py"
stop_dask

# --- the cost of the fleet keys on the 300-process bench host (an hour of polls)
CP=${BENCH_COST_PROCESSES:-300}
"$GEN" --processes "$CP" --polls 1800 > "$DIR/cost-with.jsonl"
sed -e 's/,"span_ms":[0-9]*//' -e 's/,"host":"[^"]*"//' -e 's/"start_ms":[0-9]*,//' \
	"$DIR/cost-with.jsonl" > "$DIR/cost-without.jsonl"
rows=$(wc -l < "$DIR/cost-with.jsonl")
for v in without with; do
	zstd -q -f -T1 "-$LEVEL" "$DIR/cost-$v.jsonl" -o "$DIR/cost-$v.zst"
	eval "raw_$v=$(wc -c < "$DIR/cost-$v.jsonl") zst_$v=$(wc -c < "$DIR/cost-$v.zst")"
done
echo "cost of host, span_ms, process.start_ms: $CP processes, 1 h of 2 s polls, $rows rows, zstd -$LEVEL"
awk -v r="$rows" -v a="$raw_without" -v b="$raw_with" -v za="$zst_without" -v zb="$zst_with" 'BEGIN {
	printf "  raw: %.1f -> %.1f bytes per row (+%.1f, +%.1f%%)\n", a / r, b / r, (b - a) / r, 100 * (b - a) / a
	printf "  zstd: %.2f -> %.2f MB per hour (+%.1f%%; %.2f -> %.2f bytes per row)\n", za / 1e6, zb / 1e6, 100 * (zb - za) / za, za / r, zb / r }'
rm -f "$DIR"/cost-*
