#!/bin/sh
# bench-writer.sh: croft-writer's figures.  (1) rows/s and MB/s through
# writer.sock to disk (each batch fdatasynced and committed before its ack),
# fed realistic rows of a 5 000-process host from croft-gen-rows; (2) the
# compressor's ratio and MB/s at the default zstd level beside
# `zstd -T1 -<level>` on the same file in the same run; (3) the disk one
# hour and one day of a 300-process host's rows take at the default level,
# and the days the default retention_size holds them.
# Env: BUILD (build dir, default build), BENCH_DIR (where to write; default
# a temporary dir under /var/tmp, a real disk), POLLS (default 60),
# SEGMENT_MB (compression input, default 300), LEVELS (extra levels to sweep),
# ROUNDS (best of, default 3), HOUR_MB (a 300-process host's hourly segment,
# default 300).  Each level also prints the writer's CPU-seconds to compress
# one hourly segment and that as a share of one core; with LEVELS the last
# line names the highest-ratio level within BUDGET_PCT (default 0.5) of one
# core.  The writer's compressor also fsyncs its output; the CLI's timing
# includes its process start.
set -eu
BUILD=${BUILD:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
GEN=$BUILD/bench/croft-gen-rows
CBENCH=$BUILD/bench/croft-compress-bench
WRITER=$BUILD/writer/croft-writer
WCLIENT=$BUILD/tests/writer/wclient
WCTL=$BUILD/tests/writer/wctl
for b in "$GEN" "$CBENCH" "$WRITER" "$WCLIENT" "$WCTL"; do
	[ -x "$b" ] || { echo "bench-writer: $b not built (ninja -C $BUILD)" >&2; exit 1; }
done
command -v zstd >/dev/null || { echo "bench-writer: needs the zstd CLI" >&2; exit 1; }
T=$(mktemp -d "${BENCH_DIR:-/var/tmp}/croft-bench-writer.XXXXXX")
WPID=
cleanup() { [ -n "$WPID" ] && kill "$WPID" 2>/dev/null; wait 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
chmod 0755 "$T"
. "$ROOT/bench/benchlib.sh"
level=$(default_zstd_level "$ROOT")
[ -n "$level" ] || { echo "bench-writer: no default zstd_level in common/config.c" >&2; exit 1; }
now_ns() { date +%s%N; }

# --- 1: throughput through the socket
polls=${POLLS:-60}
"$GEN" --processes 5000 --polls "$polls" > "$T/rows.jsonl"
rows_per_poll=$(( $(wc -l < "$T/rows.jsonl") / polls ))
mkdir "$T/run"
printf '[writer]\nrotate_size = 1GiB\nrotate_interval = 1h\n' > "$T/croft.conf"
"$WRITER" --config "$T/croft.conf" --runtime-dir "$T/run" --data-dir "$T/data" 2>"$T/writer.log" &
WPID=$!
i=0
until "$WCTL" "$T/run/writer.ctl" status >/dev/null 2>&1; do
	i=$((i + 1)); [ $i -lt 200 ] || { cat "$T/writer.log"; exit 1; }; sleep 0.05
done
out=$("$WCLIENT" --socket "$T/run/writer.sock" --rows-file "$T/rows.jsonl" --window 4 --epoch 0xbe)
rows_s=$(echo "$out" | sed -n 's/.*rows_per_s \([0-9.]*\).*/\1/p')
mb_s=$(echo "$out" | sed -n 's/.*MB_per_s \([0-9.]*\).*/\1/p')
# the writer's own CPU time: a figure a busy shared machine does not bend much
cpu_ticks=$(awk '{ print $14 + $15 }' "/proc/$WPID/stat")
kill "$WPID"; wait "$WPID" || true; WPID=
cmp -s "$T/rows.jsonl" "$T/data/croft-dataset.jsonl" || { echo "bench-writer: dataset differs" >&2; exit 1; }
goal=$((5000 * 100 / 2))
echo "writer throughput: $out"
echo "  5000-process host: $rows_per_poll rows per 2 s poll; goal >= 100x its 5000 rows/2 s = $goal rows/s"
awk -v r="$rows_s" -v g="$goal" 'BEGIN { printf "  rows/s %.0f = %.0fx the row rate of a 5000-process host (%s)\n", r, r / 2500, (r >= g) ? "goal met" : "GOAL MISSED" }'
echo "  MB/s through the socket to disk (fdatasync + commit per group): $mb_s"
awk -v t="$cpu_ticks" -v hz="$(getconf CLK_TCK)" -v rows="$(wc -l < "$T/rows.jsonl")" -v b="$(wc -c < "$T/rows.jsonl")" 'BEGIN {
	s = t / hz; if (s <= 0) s = 1 / hz
	printf "  writer CPU %.2f s: %.0f rows per CPU-second, %.0f MB per CPU-second\n", s, rows / s, b / s / 1e6 }'

# --- 2: compression of one segment of realistic rows (300-process host)
"$GEN" --processes 300 --bytes "${SEGMENT_MB:-300}M" > "$T/seg.jsonl"
size=$(wc -c < "$T/seg.jsonl")
# best of ROUNDS alternating runs of each, by wall time and by CPU time (a
# shared machine's noise bends the wall clock far more than CPU seconds)
best() { awk -v a="$1" -v b="$2" 'BEGIN { print (b > a) ? b : a }'; }
speed() { awk -v n="$size" -v s="$1" 'BEGIN { printf "%.1f", (s > 0) ? n / s / 1e6 : 0 }'; }
field() { echo " $1" | sed -n "s/.* $2 \([0-9.]*\).*/\1/p"; }
compress_at() {
	ww=0; wc=0; cw=0; cc=0; r=0
	while [ "$r" -lt "${ROUNDS:-3}" ]; do
		cp "$T/seg.jsonl" "$T/w.jsonl"
		w=$("$CBENCH" "$T/w.jsonl" "$1")
		zstd -q -dc "$T/w.jsonl.zst" | cmp -s - "$T/seg.jsonl" ||
			{ echo "bench-writer: round trip differs" >&2; exit 1; }
		wr=$(field "$w" ratio)
		ww=$(best "$ww" "$(speed "$(field "$w" seconds)")")
		wc=$(best "$wc" "$(speed "$(field "$w" cpu_seconds)")")
		c=$("$CBENCH" --exec zstd -q -f -T1 "-$1" "$T/seg.jsonl" -o "$T/cli.zst")
		cr=$(awk -v a="$size" -v b="$(wc -c < "$T/cli.zst")" 'BEGIN { printf "%.2f", a / b }')
		cw=$(best "$cw" "$(speed "$(field "$c" seconds)")")
		cc=$(best "$cc" "$(speed "$(field "$c" cpu_seconds)")")
		rm -f "$T/w.jsonl.zst" "$T/cli.zst"
		r=$((r + 1))
	done
	# an hourly segment of HOUR_MB compressed once an hour on one core
	hour_cpu=$(awk -v mb="${HOUR_MB:-300}" -v wc="$wc" 'BEGIN { printf "%.1f", mb / wc }')
	echo "$1 $wr $hour_cpu" >> "$T/levels"
	awk -v l="$1" -v wr="$wr" -v ww="$ww" -v wc="$wc" -v cr="$cr" -v cw="$cw" -v cc="$cc" -v h="$hour_cpu" 'BEGIN {
		printf "  level %2d: writer %.2fx %6.1f MB/s (%6.1f per CPU-s; %5.1f CPU-s per hourly segment = %.2f%% of a core) | zstd -T1 -%d %.2fx %6.1f MB/s (%6.1f per CPU-s) | writer/CLI %.0f%% wall, %.0f%% CPU\n",
			l, wr, ww, wc, h, h / 36, l, cr, cw, cc, 100 * ww / cw, 100 * wc / cc }'
}
echo "compression of $size bytes of rows (300 processes), writer vs zstd CLI, same file, same run:"
compress_at "$level"
echo "  default level $level; goals: ratio >= 13x, speed within 10% of the CLI"
for l in ${LEVELS:-}; do compress_at "$l"; done
# the budget: the highest ratio among the measured levels whose hourly
# segment costs at most BUDGET_PCT of one core (3600 CPU-s an hour = 100%)
awk -v pct="${BUDGET_PCT:-0.5}" -v mb="${HOUR_MB:-300}" '
	$3 <= pct * 36 && $2 > best_ratio { best_ratio = $2; best = $1 }
	END { if (best) printf "  budget %.2f%% of one core for a %d MB hourly segment: level %d (%.2fx) is the highest ratio within it\n", pct, mb, best, best_ratio
	      else printf "  budget %.2f%% of one core: no measured level is within it\n", pct }' "$T/levels"

# --- 3: the disk a 300-process host's dataset takes at the defaults: one
# hour of its rows (1800 polls at 2 s; idle processes every 15th poll),
# compressed by the writer's compressor at the default level, a day of it,
# and the days the default retention_size keeps (retention_age 30 d)
"$GEN" --processes 300 --polls 1800 > "$T/hour.jsonl"
hour_raw=$(wc -c < "$T/hour.jsonl")
"$CBENCH" "$T/hour.jsonl" "$level" >/dev/null
hour_zst=$(wc -c < "$T/hour.jsonl.zst")
awk -v raw="$hour_raw" -v zst="$hour_zst" -v rows="$(zstd -q -dc "$T/hour.jsonl.zst" | wc -l)" -v l="$level" 'BEGIN {
	day = 24 * zst; keep = 10 * 1024 ^ 3
	printf "a 300-process host at the defaults: %d rows an hour, %.1f MB raw, %.1f MB at level %d (%.2fx): %.0f MB a day; the 10 GiB retention_size holds %.1f days (before the 30 d retention_age), plus the live hour uncompressed\n",
		rows, raw / 1e6, zst / 1e6, l, raw / zst, day / 1e6, keep / day }'
