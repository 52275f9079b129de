# opslib.sh: helpers of the ops tests (source after testlib.sh): start
# `croft run` in temporary directories, ask croftctl, stop it with SIGINT.
# Needs CROFT (the croft binary) and CROFTCTL set.

# ops_setup: TEST_TMP (searchable by the user the daemons drop to), D, R, C.
ops_setup() {
	# our own prefix: on a shared host, /tmp/croft-test.* has been seen swept
	# by hand while a test ran
	TEST_TMP=$(mktemp -d "${TMPDIR:-/tmp}/croft-ops.XXXXXX") || fail "mktemp"
	chmod 755 "$TEST_TMP"
	D=$TEST_TMP/data R=$TEST_TMP/run C=$TEST_TMP/croft.conf LOG=$TEST_TMP/run.log
	RUN_PID=
	trap ops_cleanup EXIT
}

ops_cleanup() {
	if [ -n "${RUN_PID:-}" ] && kill -0 "$RUN_PID" 2>/dev/null; then
		kill -INT "$RUN_PID" 2>/dev/null
		wait "$RUN_PID" 2>/dev/null
	fi
	[ -n "${OPS_CLEANUP_EXTRA:-}" ] && eval "$OPS_CLEANUP_EXTRA"
	rm -rf "$TEST_TMP"
}

# ops_start [croft run flags...]: starts croft run in the background.
ops_start() {
	"$CROFT" run --data-dir "$D" --runtime-dir "$R" --config "$C" "$@" >"$LOG" 2>&1 &
	RUN_PID=$!
}

ctl() { "$CROFTCTL" --runtime-dir "$R" "$@"; }

# ops_field DAEMON JQ-PATH: one figure of a daemon's status (empty when down).
ops_field() {
	ctl status --json 2>/dev/null |
		jq -r --arg d "$1" ".daemons[] | select(.daemon == \$d) | $2 // empty"
}

ops_up() { [ "$(ops_field "$1" .up)" = true ]; }

# ops_stop: SIGINT, wait; sets RUN_RC.
ops_stop() {
	kill -INT "$RUN_PID"
	wait "$RUN_PID"
	RUN_RC=$?
	RUN_PID=
}

# TAP
n=0 fails=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); echo "not ok $n - $*"; fails=$((fails + 1)); }
check() { # check DESCRIPTION COMMAND...
	_desc=$1; shift
	if "$@"; then ok "$_desc"; else not_ok "$_desc"; fi
}
quiet() { "$@" >/dev/null 2>&1; }
finish() {
	if [ "$fails" -gt 0 ] && [ -f "${LOG:-}" ]; then
		echo "# croft run log:"; sed 's/^/# /' "$LOG" | tail -n 60
	fi
	echo "1..$n"
	exit $((fails > 0))
}

# ops_probe_expected: 0 when this host can run the probe (root, BTF, BPF and
# the probe built); under CI=true it must.
ops_probe_expected() {
	[ "$(id -u)" = 0 ] && [ -r /sys/kernel/btf/vmlinux ] && [ -x "$PROBE_BIN" ] && return 0
	if [ "${CI:-}" = true ]; then
		echo "# CI=true: the probe must run here (root, BTF, $PROBE_BIN built)" >&2
		return 2
	fi
	return 1
}
