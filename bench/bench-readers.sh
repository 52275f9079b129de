#!/bin/sh
# bench-readers.sh: croft stats' and croft profile's reading speed on a
# generated ~1 GiB dataset (JSON size) stored as .jsonl.zst segments, beside
# zstd -dc, jq and DuckDB in the same run, with 1 and 2 threads.  Prints MB/s of JSON (1 MB = 1e6 B)
# and their ratios to those, with the goals: croft stats against one zstd -dc
# elapsed with 2 threads and per CPU-second, side by side on one line.  Environment: BUILD (build dir,
# default build), BENCH_BYTES (default 600M, the goal's size), BENCH_LEVEL (the segments' zstd
# level, default the writer's), BENCH_DIR (dataset cache), BENCH_RUNS (best
# of, default 3).
set -eu
cd "$(dirname "$0")/.."
. bench/benchlib.sh
BUILD=${BUILD:-build}
BYTES=${BENCH_BYTES:-600M}
RUNS=${BENCH_RUNS:-3}
LEVEL=${BENCH_LEVEL:-$(default_zstd_level .)}
DIR=${BENCH_DIR:-${TMPDIR:-/tmp}/croft-bench-readers-$BYTES-zstd$LEVEL}
CROFT=$BUILD/cli/croft
GEN=$BUILD/bench/croft-gen-rows
[ -x "$CROFT" ] && [ -x "$GEN" ] || { echo "bench-readers: build first ($CROFT, $GEN)"; exit 1; }

# The dataset: one host's rows cut into 8 segments, compressed at the
# writer's level (zstd -T1 -LEVEL: checksummed frames, as the writer writes).
if [ ! -f "$DIR/.done" ]; then
	rm -rf "$DIR"
	mkdir -p "$DIR/host"
	echo "generating $BYTES of rows into $DIR ..."
	"$GEN" --bytes "$BYTES" --processes 300 > "$DIR/all.jsonl"
	split -n l/8 -d "$DIR/all.jsonl" "$DIR/host/croft-dataset-20261020T1"
	for f in "$DIR"/host/croft-dataset-*; do
		zstd -q -T1 "-$LEVEL" --rm "$f" -o "$f.jsonl.zst"
	done
	rm "$DIR/all.jsonl"
	touch "$DIR/.done"
fi
: > "$DIR/empty.conf" # the defaults (a named file that is missing is refused)
SEGS=$(ls "$DIR"/host/*.jsonl.zst | tr "\n" " ")
FIRST=${SEGS%% *}
JSON_BYTES=$(zstd -dc $SEGS | wc -c)
FIRST_BYTES=$(zstd -dc "$FIRST" | wc -c)
ZST_BYTES=$(cat $SEGS | wc -c)

# best "WALL_US CPU_US" of RUNS runs of "$@" (CPU: user + system of the children)
best() {
	python3 - "$RUNS" "$@" <<'PY'
import resource, subprocess, sys, time
runs, cmd = int(sys.argv[1]), sys.argv[2:]
wall = cpu = None
for _ in range(runs):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if p.returncode not in (0, 3):       # croft: 3 = read, some lines skipped
        sys.exit(f"{cmd}: exit {p.returncode}")
    t1 = time.monotonic()
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    w = (t1 - t0) * 1e6
    c = (r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) * 1e6
    wall = w if wall is None else min(wall, w)
    cpu = c if cpu is None else min(cpu, c)
print(f"{wall:.0f} {cpu:.0f}")
PY
}
wall() { echo "${1% *}"; }
cpu() { echo "${1#* }"; }
mbs() { echo "$1 $2" | awk '{ printf "%.0f", $1 / $2 }'; }   # bytes, us -> MB/s

zstd_t=$(best sh -c "zstd -dc $SEGS > /dev/null")
c1_t=$(best "$CROFT" stats --config "$DIR/empty.conf" --threads 1 "$DIR/host")
c2_t=$(best "$CROFT" stats --config "$DIR/empty.conf" --threads 2 "$DIR/host")
p1_t=$(best "$CROFT" profile --framework vllm --config "$DIR/empty.conf" --threads 1 "$DIR/host")
cj_t=$(RUNS=1 best "$CROFT" stats --config "$DIR/empty.conf" --threads 1 --jansson "$FIRST")
jq_t=$(RUNS=1 best sh -c "zstd -dc '$FIRST' | jq -c 'select(.workload==\"gpu-held\")' | wc -l")
d1_t= d2_t=
if command -v node >/dev/null 2>&1 && [ -d tests/cli/node_modules/@duckdb/node-api ]; then
	# docs/engines.md's fleet query: the figures croft stats gives
	CROFT_GLOB="$DIR/host/*.jsonl.zst" tests/cli/docs-sql.sh docs/engines.md fleet-view fleet-query > "$DIR/fleet.sql"
	d1_t=$(RUNS=1 DUCKDB_THREADS=1 best sh -c "node tests/cli/duckdb-check.mjs < '$DIR/fleet.sql'")
	d2_t=$(RUNS=1 DUCKDB_THREADS=2 best sh -c "node tests/cli/duckdb-check.mjs < '$DIR/fleet.sql'")
fi

# per core: JSON bytes over CPU time; elapsed: over wall-clock time
line() {  # name bytes times
	printf "%-46s %7s MB/s per core %7s MB/s elapsed\n" "$1" "$(mbs "$2" "$(cpu "$3")")" "$(mbs "$2" "$(wall "$3")")"
}
echo "dataset: $(echo $SEGS | wc -w) segments, $JSON_BYTES bytes of JSON, $ZST_BYTES bytes of zstd;" \
	"zstd level $LEVEL; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); best of $RUNS"
skipped=$("$CROFT" stats --json --config "$DIR/empty.conf" "$DIR/host" 2>/dev/null |
	python3 -c 'import json,sys; i=json.load(sys.stdin)["input"]; print(i["rows_read"], sum(i["skipped"].values()))')
echo "rows read, lines skipped (not rows): $skipped"
line "zstd -dc > /dev/null" "$JSON_BYTES" "$zstd_t"
line "croft stats, 1 thread" "$JSON_BYTES" "$c1_t"
line "croft stats, 2 threads" "$JSON_BYTES" "$c2_t"
line "croft profile --framework vllm, 1 thread" "$JSON_BYTES" "$p1_t"
line "croft stats --jansson, 1 segment" "$FIRST_BYTES" "$cj_t"
line "zstd -dc | jq select(gpu-held) | wc, 1 segment" "$FIRST_BYTES" "$jq_t"
if [ -n "$d1_t" ]; then
	line "DuckDB (node) same figures, 1 thread" "$JSON_BYTES" "$d1_t"
	line "DuckDB (node) same figures, 2 threads" "$JSON_BYTES" "$d2_t"
else
	echo "DuckDB: not installed (make deps), left out"
fi
zc=$(mbs "$JSON_BYTES" "$(cpu "$zstd_t")")
c1c=$(mbs "$JSON_BYTES" "$(cpu "$c1_t")")
c1w=$(mbs "$JSON_BYTES" "$(wall "$c1_t")")
c2w=$(mbs "$JSON_BYTES" "$(wall "$c2_t")")
jqc=$(mbs "$FIRST_BYTES" "$(cpu "$jq_t")")
p1c=$(mbs "$JSON_BYTES" "$(cpu "$p1_t")")
zw=$(mbs "$JSON_BYTES" "$(wall "$zstd_t")")
c2c=$(mbs "$JSON_BYTES" "$(cpu "$c2_t")")
echo "ratios:"
echo "$c2w $zw $c1c $zc $c2c" | awk '{ printf "  croft stats / zstd -dc                elapsed, 2 threads %.2f (goal >= 1.0)   per CPU-second, 1 thread %.2f, 2 threads %.2f (goal >= 0.6)\n", $1 / $2, $3 / $4, $5 / $4 }'
echo "$p1c $zc" | awk '{ printf "  croft profile / zstd -dc, per core    %.2f\n", $1 / $2 }'
echo "$c1c $jqc" | awk '{ printf "  croft / jq, per core                  %.1fx (goal >= 10)\n", $1 / $2 }'
if [ -n "$d1_t" ]; then
	d1w=$(mbs "$JSON_BYTES" "$(wall "$d1_t")")
	d2w=$(mbs "$JSON_BYTES" "$(wall "$d2_t")")
	echo "$c1w $d1w $c2w $d2w" | awk '{ printf "  croft / DuckDB, elapsed, 1 thread     %.1fx (goal > 1)\n  croft / DuckDB, elapsed, 2 threads    %.1fx (goal > 1)\n", $1 / $2, $3 / $4 }'
fi
echo "$c2w $c1w" | awk '{ printf "  2 threads / 1 thread, elapsed         %.2f  (goal near 2; needs 2 idle CPUs)\n", $1 / $2 }'
