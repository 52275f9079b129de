#!/bin/bash
# test-gpu-host.sh: what of bench/gpu-host.sh runs without a GPU.  The
# bundle builds; every binary in it runs through its wrapper and loads only
# the bundle's libraries; `run` here says there is no GPU (exit 77); the
# report on a recorded sample (gpu-host-sample/: nvidia-smi snapshots,
# information files, rows, the job's clock) passes, and fails where that
# sample is broken; `run` itself, rehearsed on stand-ins for the driver's
# files, nvidia-smi and torch, passes its report; the bundle's croft run
# (probe included, as root) counts exactly the bundled ioctl loop's ioctls
# on a stand-in device (/dev/null through gpu_devices = 1:3).
# usage: test-gpu-host.sh SOURCE_ROOT BUILD_DIR FAKE_LIBTORCH_SO
set -u
. "$(dirname "$0")/../lib/testlib.sh"
SRC=$1 BUILD=$2 TORCH_LIB=$3
CROFT=unused CROFTCTL=unused
. "$(dirname "$0")/opslib.sh"
require_root
require_cmd python3 ldd tar unshare jq
[ -x "$BUILD/probe/croft-probe" ] || skip "croft-probe is not built (the bundle needs it)"
ops_setup
SAMPLE=$(dirname "$0")/gpu-host-sample

out=$(BUILD=$BUILD "$SRC/bench/gpu-host.sh" bundle "$TEST_TMP/out" 2>&1)
check "the bundle builds ($(tail -1 <<<"$out" | grep -o '[0-9]* KiB'))" [ -f "$TEST_TMP/out/croft-gpu-host.tar.gz" ]
tar -C "$TEST_TMP" -xzf "$TEST_TMP/out/croft-gpu-host.tar.gz"
B=$TEST_TMP/croft-gpu-host
versions=0 foreign=
for w in cli/croft probe/croft-probe sampler/croft-sampler writer/croft-writer; do
	"$B/$w" --version | grep -q '0\.' && versions=$((versions + 1))
done
for r in "$B"/real/*; do
	foreign+=$("$B/lib/ld-linux-x86-64.so.2" --list --inhibit-cache --library-path "$B/lib" "$r" |
		awk -v lib="$B/lib/" '$2 == "=>" && index($3, lib) != 1 { print $3 }')
done
check "the daemons and croft run through their wrappers ($versions of 4)" [ $versions = 4 ]
check "every library they load is the bundle's (others: ${foreign:-none})" [ -z "$foreign" ]

out=$("$B/gpu-host.sh" run "$TEST_TMP/results" 2>&1); rc=$?
check "run without an NVIDIA GPU: exit 77, saying so" [ $rc = 77 ]
check "... naming what it looked for" grep -q "no NVIDIA GPU here" <<<"$out"

report=$("$B/gpu-host.sh" report "$SAMPLE"); rc=$?
check "the recorded sample's report passes ($(tail -1 <<<"$report"))" [ $rc = 0 ]
check "... gpus against nvidia-smi, [N/A] left out" grep -q "PASS  every process nvidia-smi lists holds its GPUs in croft's row (11 of 11)" <<<"$report"
check "... the probe's cost per ioctl" grep -q "without croft-probe 612.9 ns, with 687.3 ns: +74.4 ns per ioctl" <<<"$report"
cp -r "$SAMPLE" "$TEST_TMP/broken"
python3 - "$TEST_TMP/broken/data/croft-dataset.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
for r in rows:
    if r["tgid"] == 4242 and r["unix_ms"] in (1796000010000, 1796000011000):
        r["gpus"] = [1]           # both sides of a snapshot where nvidia-smi says GPU 0
    if r["tgid"] == 4242 and r["unix_ms"] == 1796000036000:
        r["ioctl_count"] = 5      # inside the idle window
open(sys.argv[1], "w").write("".join(json.dumps(r) + "\n" for r in rows))
PY
report=$("$B/gpu-host.sh" report "$TEST_TMP/broken"); rc=$?
check "a broken sample's report fails (exit $rc)" [ $rc = 1 ]
check "... on gpus and on the idle window" \
	test "$(grep -c -e "FAIL  every process nvidia-smi" -e "FAIL  ioctl_count 0 in every row of the idle" <<<"$report")" = 2

# `run` rehearsed with stand-ins (tests/ops/gpu-host-fake): /proc/devices
# (bind-mounted in a mount namespace of its own) names mem's major nvidia
# and gpu_devices is 1:7, so /dev/full (held by nothing else) is GPU 7 by
# NVIDIA's numbering; a torch whose CUDA tensors make ioctls on /dev/full;
# an nvidia-smi listing the job's processes; /proc/driver/nvidia's files.
# Everything else is real: croft run from the bundle with the probe, the
# job's and holder's processes.
FAKE=$(cd "$(dirname "$0")" && pwd)/gpu-host-fake
sed 's/^ *1 mem$/  1 nvidia/' /proc/devices > "$TEST_TMP/devices"
: > "$TEST_TMP/empty"
out=$(PATH=$FAKE/bin:$PATH PYTHONPATH=$FAKE FAKE_GPU=/dev/full FAKE_TORCH_LIB=$TORCH_LIB \
	NVIDIA_PROC=$FAKE/nvidia NVIDIACTL=/dev/full GPU_DEVICES=1:7 IDLE_EVERY=2 \
	COMPUTE_S=14 IDLE_S=10 IOCTLS=200000 \
	unshare -m --propagation private sh -c 'mount --bind "$1" /proc/devices && shift && exec "$@"' \
	sh "$TEST_TMP/devices" "$B/gpu-host.sh" run "$TEST_TMP/rehearsal" < "$TEST_TMP/empty" 2>&1); rc=$?
echo "$out" | sed 's/^/# /'
check "run, rehearsed on stand-ins: every check of its report passes" [ $rc = 0 ]
check "... state sequences, gpus against nvidia-smi, the loop's count" \
	test "$(grep -c -e "PASS  gpu-onset, then gpu-held" -e "PASS  every process nvidia-smi" \
		-e "PASS  croft counted the loop's ioctls" -e "PASS  gpu-held from its first row" <<<"$out")" = 4

# the bundle's croft run here: all three daemons, rows, exact ioctl counts
CROFT=$B/cli/croft CROFTCTL=$B/cli/croftctl
printf '[sampler]\npoll_interval = 500ms\n[probe]\ngpu_devices = 1:3\n' > "$C"
ops_start
wait_for "ops_up croft-sampler && ops_up croft-probe" 60
check "the bundle's croft run has all three daemons up" [ "$(ctl status --json | jq .all_up)" = true ]
loop=$("$B/bench/probe-bench" ioctl 200000 /dev/null 2 & echo "pid $!"; wait)
pid=$(sed -n 's/^pid //p' <<<"$loop") made=$(awk 'NF == 2 && $1 != "pid" { print $2 }' <<<"$loop")
counted() {
	python3 -c 'import json, sys
print(sum(r.get("ioctl_count", 0) for r in map(json.loads, open(sys.argv[1])) if r["tgid"] == int(sys.argv[2])))' \
		"$D/croft-dataset.jsonl" "$pid"
}
# the loop's last row comes at the first poll after it ended
wait_for '[ "$(counted)" = "$made" ]' 30
ops_stop
counted=$(counted)
check "croft run exits 0 on SIGINT" [ "$RUN_RC" = 0 ]
check "croft counted the bundled loop's ioctls: $counted of $made" [ "$counted" = "$made" ]
finish
