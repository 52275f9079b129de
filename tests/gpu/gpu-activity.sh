#!/bin/bash
# gpu-activity.sh: croft's GPU activity verdict on a real NVIDIA GPU, in
# under 8 minutes.  Root, the NVIDIA driver, nvidia-smi, Python 3 with
# PyTorch and CUDA; nothing is fetched.  Uses the built tree (BUILD,
# default build/): croft run with 1 s polls, a row each poll.
#
#   tests/gpu/gpu-activity.sh [RESULTS_DIR]
#
# Seven workloads, one after another, 45 s each once warmed up (WINDOW_S):
#   context     a CUDA context held while sleeping (the idle holder)
#   matmul      a warmed PyTorch matmul + backward loop
#   graphs      the same forward captured in a CUDA graph and replayed
#   blocking    matmul + backward with blocking sync (CU_CTX_SCHED_BLOCKING_SYNC)
#   managed     managed memory touched by the CPU, then by the GPU
#   prefetch    the same with cuMemPrefetchAsync both ways
#   smi         `nvidia-smi -l 1` beside an idle holder
# Beside them, nvidia-smi pmon (per-process SM, every second) and
# nvidia-smi's power.draw (every second) as the independent instruments.
# Prints one table per second of each workload (croft's GPU ioctls, GPU
# waits and verdict; pmon's SM; the device's power), then the pass rule:
#
#   PASS RULE (fixed before the run):
#   1. of all the workloads' process-seconds, those croft calls idle while
#      NVML (pmon) shows SM > 5% for the process are <= 1%;
#   2. the idle holder (context) is idle in >= 95% of its seconds.
#
# If croft-probe cannot load here (no BPF, a locked-down kernel), the run
# goes on with the sampler and writer and says so: the verdicts then rest on
# NVML alone.  Exit 0 pass, 1 fail, 77 no NVIDIA GPU or PyTorch here.
# Rehearsed without a GPU by DRY_RUN=1 (the checks before any GPU use, the
# workloads' syntax, the report on a recorded sample: REPORT_ONLY=DIR).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
WINDOW_S=${WINDOW_S:-45}
WARM_S=${WARM_S:-8}
OUT=${1:-$(mktemp -d /tmp/croft-gpu-activity-XXXXXX)}
REPORT=$HERE/gpu_activity_report.py
WORKLOADS="context matmul graphs blocking managed prefetch smi"
PIDS=()

say() { printf '%s gpu-activity: %s\n' "$(date -u +%H:%M:%S)" "$*"; }

if [ -n "${REPORT_ONLY:-}" ]; then
	exec python3 "$REPORT" "$REPORT_ONLY"
fi

preflight() {
	[ "$(id -u)" = 0 ] || { say "needs root (croft-probe)"; exit 77; }
	command -v nvidia-smi >/dev/null || { say "no nvidia-smi: no NVIDIA GPU here"; exit 77; }
	nvidia-smi -L >/dev/null 2>&1 || { say "nvidia-smi -L fails: no NVIDIA GPU here"; exit 77; }
	python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null ||
		{ say "PyTorch with CUDA not importable"; exit 77; }
	for b in cli/croft cli/croftctl sampler/croft-sampler writer/croft-writer; do
		[ -x "$BUILD/$b" ] || { say "$BUILD/$b not built (make)"; exit 1; }
	done
}

cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
}
trap cleanup EXIT

# start_croft: croft run in OUT, 1 s polls, a row each poll; waits for status.
start_croft() {
	mkdir -p "$OUT/data" "$OUT/run"
	printf '[sampler]\npoll_interval = 1s\nidle_every = 1\nonset_window = 5s\n' >"$OUT/croft.conf"
	"$BUILD/cli/croft" run --data-dir "$OUT/data" --runtime-dir "$OUT/run" \
		--config "$OUT/croft.conf" >"$OUT/croft.log" 2>&1 &
	PIDS+=($!)
	for _ in $(seq 100); do
		"$BUILD/cli/croftctl" --runtime-dir "$OUT/run" status --json >"$OUT/status.json" 2>/dev/null &&
			grep -q croft-sampler "$OUT/status.json" && break
		sleep 0.3
	done
	sleep 3 # a few polls: the probe attaches or says why not
	"$BUILD/cli/croftctl" --runtime-dir "$OUT/run" status --json >"$OUT/status.json" 2>&1
	python3 - "$OUT/status.json" <<'PY'
import json, sys
st = {d.get('daemon'): d.get('status') or {} for d in json.load(open(sys.argv[1])).get('daemons', [])}
probe, sampler = st.get('croft-probe'), st.get('croft-sampler', {})
print('# what ran: croft-sampler (NVML: %s), croft-writer, croft-probe: %s' % (
    sampler.get('nvml', '?'),
    'attached' if probe and str(sampler.get('probe', '')).startswith('connected')
    else 'NOT attached (%s): no GPU ioctls or waits; verdicts from NVML only' %
    sampler.get('probe', 'absent')))
PY
}

# instruments: pmon's per-process SM and the device's power, every second.
instruments() {
	nvidia-smi pmon -s u -o T -d 1 >"$OUT/pmon.txt" 2>&1 &
	PIDS+=($!)
	nvidia-smi --query-gpu=timestamp,index,power.draw --format=csv,noheader,nounits -l 1 \
		>"$OUT/power.csv" 2>&1 &
	PIDS+=($!)
}

# workload NAME: runs it (WARM_S to warm up, WINDOW_S measured) and logs its window.
workload() {
	local name=$1 pid smi=
	CROFT_LABEL=gpu-activity-$name python3 "$HERE/gpu_activity_work.py" "$name" "$WARM_S" \
		>"$OUT/$name.out" 2>&1 &
	pid=$!
	PIDS+=($pid)
	for _ in $(seq $((WARM_S * 10 + 300))); do
		grep -q '^ready' "$OUT/$name.out" 2>/dev/null && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if ! grep -q '^ready' "$OUT/$name.out"; then
		say "$name did not start: $(tail -3 "$OUT/$name.out")"
		echo "$name $pid 0 0 failed" >>"$OUT/windows.txt"
		return
	fi
	if [ "$name" = smi ]; then
		nvidia-smi -l 1 >/dev/null 2>&1 &
		smi=$!
		PIDS+=($smi)
	fi
	local t0 t1
	t0=$(date +%s%3N)
	say "$name (pid $pid${smi:+, nvidia-smi $smi}) for ${WINDOW_S} s"
	sleep "$WINDOW_S"
	t1=$(date +%s%3N)
	echo "$name $pid $t0 $t1 ok${smi:+ $smi}" >>"$OUT/windows.txt"
	kill "$pid" ${smi:+"$smi"} 2>/dev/null
	wait "$pid" ${smi:+"$smi"} 2>/dev/null
}

if [ -n "${DRY_RUN:-}" ]; then
	bash -n "$0" && python3 -m py_compile "$HERE/gpu_activity_work.py" "$REPORT" &&
		say "dry run: script and workloads parse; preflight here:" && (preflight; say "preflight passed")
	exit $?
fi

preflight
mkdir -p "$OUT"
: >"$OUT/windows.txt"
sed -n '/PASS RULE/,/seconds\./p' "$0" | sed 's/^# *//' | tee "$OUT/pass-rule.txt"
say "results in $OUT"
nvidia-smi -L | tee "$OUT/gpus.txt"
start_croft
instruments
for w in $WORKLOADS; do
	workload "$w"
done
sleep 3 # the last rows
"$BUILD/cli/croftctl" --runtime-dir "$OUT/run" status --json >"$OUT/status-end.json" 2>&1
kill -INT "${PIDS[0]}" 2>/dev/null
wait "${PIDS[0]}" 2>/dev/null
python3 "$REPORT" "$OUT"
