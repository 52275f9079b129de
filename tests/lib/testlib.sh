# testlib.sh: helpers for croft's shell tests (source it).  Skips exit 77
# (meson's "skipped"), except under CI=true where a skip is a failure; waits
# poll a condition with a deadline instead of sleeping.

# skip REASON: exit 77, or exit 1 with the reason when CI=true.
# With TESTLIB_TAP=1 a skip is printed as TAP "1..0 # SKIP" and exits 0.
skip() {
	if [ "${CI:-}" = true ]; then
		echo "FAIL: skip not allowed under CI=true: $*" >&2
		[ "${TESTLIB_TAP:-}" = 1 ] && echo "Bail out! $*"
		exit 1
	fi
	echo "SKIP: $*" >&2
	if [ "${TESTLIB_TAP:-}" = 1 ]; then
		echo "1..0 # SKIP $*"
		exit 0
	fi
	exit 77
}

require_root() {
	[ "$(id -u)" = 0 ] || skip "needs root"
}

# require_bpf: root, a BPF-capable kernel with BTF, and bpffs/tracefs present.
require_bpf() {
	require_root
	[ -r /sys/kernel/btf/vmlinux ] || skip "kernel has no BTF (/sys/kernel/btf/vmlinux)"
	if [ -r /proc/sys/kernel/unprivileged_bpf_disabled ] &&
	   ! grep -q bpf /proc/filesystems; then
		skip "kernel has no bpf filesystem"
	fi
}

# require_cmd NAME...: each command must be installed.
require_cmd() {
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 || skip "needs $c"
	done
}

# wait_for 'CONDITION COMMAND' TIMEOUT_SECONDS: polls every 50 ms; 0 when the
# condition held, 1 (with a message) when the time ran out.
wait_for() {
	_wf_cond=$1
	_wf_deadline=$(( $(date +%s%N) / 1000000 + ${2:-10} * 1000 ))
	while :; do
		if eval "$_wf_cond"; then
			return 0
		fi
		if [ $(( $(date +%s%N) / 1000000 )) -ge "$_wf_deadline" ]; then
			echo "timed out after ${2:-10}s waiting for: $_wf_cond" >&2
			return 1
		fi
		sleep 0.05
	done
}

# fail MESSAGE: print and exit 1.
fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# make_tmpdir: sets TEST_TMP to a private temporary directory, removed at
# exit (call it in the test's own shell, not in $(...); a test with its own
# EXIT trap removes "$TEST_TMP" there itself).
make_tmpdir() {
	TEST_TMP=$(mktemp -d "${TMPDIR:-/tmp}/croft-test.XXXXXX") || fail "mktemp"
	trap 'rm -rf "$TEST_TMP"' EXIT
}
