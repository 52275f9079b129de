#!/bin/sh
# gpu-host.sh: croft on a real NVIDIA host, prepared here.
#
#   bench/gpu-host.sh bundle [OUT_DIR]
#       (here) OUT_DIR/croft-gpu-host.tar.gz (default OUT_DIR: $BUILD/gpu-host):
#       croft's binaries, the shared libraries they load on this machine (ldd)
#       with this machine's loader, a wrapper per binary that runs it through
#       that loader, the job and the report.  Needs nothing on the host but
#       x86-64 Linux, root, the NVIDIA driver, Python 3 and PyTorch.
#   ./gpu-host.sh run [RESULTS_DIR]
#       (on the host, as root, in the unpacked bundle) one process opens the
#       GPU, then croft run starts (1 s polls, 10 s onset), then a PyTorch job
#       computes 20 s and holds its context idle 20 s; nvidia-smi's compute
#       apps are taken every 4 s; then a loop of GPU ioctls on /dev/nvidiactl
#       with croft-probe attached and after croft stopped.  Prints the report
#       (gpu-host-report.py) and keeps every file it read in RESULTS_DIR.
#   ./gpu-host.sh report DIR
#       the report of a run's results (or of a recorded sample).
# Env: BUILD (build dir, default build), COMPUTE_S (20), IDLE_S (20),
# IOCTLS (ioctls per loop, 2000000), IDLE_EVERY (idle_every, 5).  To rehearse
# `run` without a GPU, tests/ops/test-gpu-host.sh points NVIDIA_PROC
# (/proc/driver/nvidia) and NVIDIACTL (/dev/nvidiactl) at stand-ins and sets
# GPU_DEVICES (croft.conf's gpu_devices; default empty: the default set).
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
COMPUTE_S=${COMPUTE_S:-20}
IDLE_S=${IDLE_S:-20}
IOCTLS=${IOCTLS:-2000000}
IDLE_EVERY=${IDLE_EVERY:-5}
GPU_DEVICES=${GPU_DEVICES:-}
NVIDIA_PROC=${NVIDIA_PROC:-/proc/driver/nvidia}
NVIDIACTL=${NVIDIACTL:-/dev/nvidiactl}
# where each binary lives in the build tree, and so in the bundle: croft run
# finds the daemons at ../<dir>/ from the directory of its executable, which
# under the loader is lib/
BINARIES="cli/croft cli/croftctl probe/croft-probe sampler/croft-sampler writer/croft-writer bench/probe-bench"

die() {
	echo "gpu-host: $*" >&2
	exit 1
}

# libs_of BINARY: the paths ldd resolves (the loader included).
libs_of() {
	ldd "$1" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'
}

# wrapper NAME: runs real/NAME with the bundle's loader and libraries only.
wrapper() {
	cat <<EOF
#!/bin/sh
b=\$(cd "\$(dirname "\$0")/.." && pwd)
exec "\$b/lib/ld-linux-x86-64.so.2" --inhibit-cache --library-path "\$b/lib" --argv0 "\$0" "\$b/real/$1" "\$@"
EOF
}

bundle() {
	build=${BUILD:-build}
	root=$(cd "$HERE/.." && pwd)
	case $build in /*) ;; *) build=$root/$build ;; esac
	out=${1:-$build/gpu-host}
	[ "$(uname -m)" = x86_64 ] || die "the bundle is for x86-64 hosts; this is $(uname -m)"
	stage=$out/croft-gpu-host
	rm -rf "$stage"
	mkdir -p "$stage/real" "$stage/lib"
	for b in $BINARIES; do
		[ -x "$build/$b" ] || die "$build/$b is not built (ninja -C $build; the probe needs clang, bpftool, libbpf)"
		cp "$build/$b" "$stage/real/"
		mkdir -p "$stage/$(dirname "$b")"
		wrapper "$(basename "$b")" > "$stage/$b"
		chmod 755 "$stage/$b"
		for lib in $(libs_of "$build/$b"); do
			cp -L "$lib" "$stage/lib/$(basename "$lib")"
		done
	done
	[ -f "$stage/lib/ld-linux-x86-64.so.2" ] || die "ldd named no ld-linux-x86-64.so.2"
	cp "$HERE/gpu-host.sh" "$HERE/gpu-host-job.py" "$HERE/gpu-host-report.py" "$stage/"
	{ git -C "$root" describe --always --dirty 2>/dev/null || echo unknown; } > "$stage/VERSION"
	tar -C "$out" -czf "$out/croft-gpu-host.tar.gz" croft-gpu-host
	echo "$out/croft-gpu-host.tar.gz ($(du -k "$out/croft-gpu-host.tar.gz" | cut -f1) KiB):" \
		"tar xzf it on the host, then: sudo ./croft-gpu-host/gpu-host.sh run"
}

# ---- on the host ----

# status_field FILE KEY: a sampler status figure from croftctl status --json.
status_field() {
	python3 -c 'import json, sys
d = [x for x in json.load(open(sys.argv[1]))["daemons"] if x["daemon"] == "croft-sampler"]
print((d[0].get("status") or {}).get(sys.argv[2], "") if d else "")' "$1" "$2" 2>/dev/null
}

# wait_polls N: until the sampler has polled N times more than now.
wait_polls() {
	"$HERE/cli/croftctl" --runtime-dir "$R/run" status --json > "$R/.st" 2>/dev/null || true
	p=$(status_field "$R/.st" polls)
	want=$((${p:-0} + $1)) i=0
	while :; do
		"$HERE/cli/croftctl" --runtime-dir "$R/run" status --json > "$R/.st" 2>/dev/null || true
		p=$(status_field "$R/.st" polls)
		[ "${p:-0}" -ge "$want" ] && return 0
		i=$((i + 1)); [ $i -lt 600 ] || die "the sampler did not poll (see $R/croft.log)"
		sleep 0.1
	done
}

# preflight: what the run needs; exit 77 (a skip) where there is no GPU.
preflight() {
	[ "$(id -u)" = 0 ] || die "run as root (the probe attaches eBPF programs)"
	ls "$NVIDIA_PROC"/gpus/*/information >/dev/null 2>&1 || {
		echo "gpu-host: no NVIDIA GPU here ($NVIDIA_PROC/gpus/*/information: none); nothing run" >&2
		exit 77
	}
	command -v nvidia-smi >/dev/null || die "nvidia-smi is not on the PATH"
	python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' ||
		die "python3 with a CUDA PyTorch is needed (import torch; torch.cuda.is_available())"
}

host_facts() {
	cp /proc/devices "$R/devices"
	mkdir -p "$R/information"
	for f in "$NVIDIA_PROC"/gpus/*/information; do
		cp "$f" "$R/information/$(basename "$(dirname "$f")")"
	done
	{
		printf '%s, kernel %s, ' "$(head -1 "$NVIDIA_PROC/version" 2>/dev/null | sed 's/  */ /g')" "$(uname -r)"
		printf 'torch %s, croft %s\n' "$(python3 -c 'import torch; print(torch.__version__)')" "$(cat "$HERE/VERSION")"
	} > "$R/host.txt"
}

# until the job says it ends: nvidia-smi's compute apps every 4 s, each file
# named by the times nvidia-smi started and returned (the job is reaped at
# once after: a zombie holds no file)
smi_loop() {
	mkdir -p "$R/smi"
	while ! grep -q '"end"' "$R/job.out" && kill -0 "$1" 2>/dev/null; do
		# the libraries that make it pytorch, once it computes
		[ -s "$R/job-maps.txt" ] || ! grep -q compute "$R/job.out" ||
			grep -o '[^ /]*libtorch[^ /]*\.so[^ ]*' "/proc/$1/maps" 2>/dev/null | sort -u > "$R/job-maps.txt" || true
		t=$(($(date +%s%N) / 1000000))
		nvidia-smi --query-compute-apps=pid,gpu_uuid --format=csv > "$R/smi/.csv" 2>/dev/null || true
		mv "$R/smi/.csv" "$R/smi/$t-$(($(date +%s%N) / 1000000)).csv"
		i=0; while [ $i -lt 40 ] && ! grep -q '"end"' "$R/job.out"; do i=$((i + 1)); sleep 0.1; done
	done
}

# a run stopped midway stops what it started
cleanup() {
	[ -n "${JOB:-}" ] && kill "$JOB" 2>/dev/null
	[ -n "${CROFT:-}" ] && kill -INT "$CROFT" 2>/dev/null && wait "$CROFT" 2>/dev/null
	[ -n "${HOLDER:-}" ] && kill "$HOLDER" 2>/dev/null
	return 0
}

run() {
	preflight
	trap cleanup EXIT
	R=${1:-$HERE/results-$(date -u +%Y%m%dT%H%M%SZ)}
	mkdir -p "$R/data" "$R/run"
	host_facts
	# idle rows every 5 polls, so that the job's idle stretch has several
	printf '[sampler]\npoll_interval = 1s\nidle_every = %s\nonset_window = 10s\n[probe]\ngpu_devices = %s\n[writer]\nrotate_interval = 30d\n' \
		"$IDLE_EVERY" "$GPU_DEVICES" > "$R/croft.conf"
	# the holder opens the GPU before croft starts
	mkfifo "$R/.hold"
	python3 "$HERE/gpu-host-job.py" hold < "$R/.hold" > "$R/holder.out" 2>"$R/holder.err" &
	HOLDER=$!
	exec 9> "$R/.hold"
	i=0; until grep -q ready "$R/holder.out"; do i=$((i + 1)); [ $i -lt 1200 ] || die "holder: $(cat "$R/holder.err")"; sleep 0.1; done
	"$HERE/cli/croft" run --data-dir "$R/data" --runtime-dir "$R/run" --config "$R/croft.conf" > "$R/croft.log" 2>&1 &
	CROFT=$!
	wait_polls 3
	"$HERE/cli/croftctl" --runtime-dir "$R/run" status --json > "$R/status.json"
	python3 "$HERE/gpu-host-job.py" job "$COMPUTE_S" "$IDLE_S" > "$R/job.out" 2>"$R/job.err" &
	JOB=$!
	smi_loop $JOB
	wait $JOB || die "the job failed: $(tail -3 "$R/job.err")"
	JOB=
	wait_polls 3
	echo "$NVIDIACTL" > "$R/ioctl-device"
	"$HERE/bench/probe-bench" ioctl "$IOCTLS" "$NVIDIACTL" 3 > "$R/ioctl-probe.txt" &
	echo $! > "$R/ioctl-probe.pid"
	wait $!
	wait_polls 2
	"$HERE/cli/croftctl" --runtime-dir "$R/run" status --json > "$R/status-end.json"
	kill -INT $CROFT
	wait $CROFT || echo "gpu-host: croft run exited $? (see $R/croft.log)" >&2
	CROFT=
	"$HERE/bench/probe-bench" ioctl "$IOCTLS" "$NVIDIACTL" > "$R/ioctl-bare.txt"
	exec 9>&-
	wait $HOLDER || true
	HOLDER=
	rm -f "$R/.hold" "$R/.st"
	rc=0
	python3 "$HERE/gpu-host-report.py" "$R" > "$R/report.txt" || rc=$?
	cat "$R/report.txt"
	echo "gpu-host: every file of this run is in $R"
	return $rc
}

case ${1:-} in
bundle) shift; bundle "$@" ;;
run) shift; run "$@" ;;
report) [ $# = 2 ] || die "usage: gpu-host.sh report DIR"; exec python3 "$HERE/gpu-host-report.py" "$2" ;;
*) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" >&2; exit 2 ;;
esac
