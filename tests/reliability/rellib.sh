# rellib.sh: helpers of the reliability suite (source it; meson passes
# WRITER, SAMPLER, PROBE, CROFTCTL, WCLIENT, WCTL, RELPROCS, RELCHECK,
# CRASHSHIM, CLOCKSHIM, TESTLIB).  Runs the real daemons, as root where the
# test needs it, in a private temporary directory; CROFT_SOAK=1 selects
# the long figures.
. "$TESTLIB"

SOAK=${CROFT_SOAK:-0}
# the system python: quick to start (a pyenv shim in PATH costs seconds a call)
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3

# short_or_soak SHORT SOAK: the figure for the mode we run in.
short_or_soak() {
	if [ "$SOAK" = 1 ]; then echo "$2"; else echo "$1"; fi
}

now_ms() {
	echo $(( $(date +%s%N) / 1000000 ))
}

rl_setup() {
	make_tmpdir
	chmod 755 "$TEST_TMP"   # the daemons drop to croft/nobody and must get in
	RUN=$TEST_TMP/run
	DATA=${DATA:-$TEST_TMP/data}
	CONF=$TEST_TMP/croft.conf
	LOGS=$TEST_TMP
	WPID= SPID= PPID_= HELPER_PID=
	: > "$CONF"
	chmod 644 "$CONF"
	trap 'rl_cleanup' EXIT
}

rl_cleanup() {
	# the process helper removes its cgroups on SIGTERM
	[ -n "$HELPER_PID" ] && kill -TERM "$HELPER_PID" 2>/dev/null && wait "$HELPER_PID"
	for p in $SPID $PPID_ $WPID ${EXTRA_PIDS:-}; do
		kill -KILL "$p" 2>/dev/null
	done
	wait 2>/dev/null
	[ -n "${RL_CLEANUP:-}" ] && eval "$RL_CLEANUP"
	if [ -n "${KEEP:-}" ]; then echo "kept $TEST_TMP" >&2; else rm -rf "$TEST_TMP"; fi
}

# rl_status DAEMON: its status JSON on stdout (empty when it does not answer):
# the envelope {daemon, version, pid, uptime_s, state, why, figures}.
rl_status() {
	"$WCTL" "$RUN/$1.ctl" status 2>/dev/null
}

# rl_json KEY.PATH < json: one value (python3), empty when absent; of a
# status envelope, a figure.
rl_json() {
	$PY -c 'import json,sys
try:
    v = json.load(sys.stdin)
    v = v.get("figures", v)
    for k in sys.argv[1].split("."):
        v = v[k]
    print(v if not isinstance(v, (dict, list)) else json.dumps(v))
except Exception:
    pass' "$1"
}

rl_field() {
	rl_status "$1" | rl_json "$2"
}

rl_spawn_writer() {
	rm -f "$RUN/writer.ctl"
	${WRITER_WRAP:-} "$WRITER" --config "$CONF" --runtime-dir "$RUN" --data-dir "$DATA" \
		"$@" >>"$LOGS/writer.log" 2>&1 &
	WPID=$!
}

rl_spawn_probe() {
	rm -f "$RUN/probe.ctl"
	"$PROBE" --config "$CONF" --runtime-dir "$RUN" "$@" >>"$LOGS/probe.log" 2>&1 &
	PPID_=$!
}

rl_spawn_sampler() {
	rm -f "$RUN/sampler.ctl"
	${SAMPLER_WRAP:-} "$SAMPLER" --config "$CONF" --runtime-dir "$RUN" "$@" \
		>>"$LOGS/sampler.log" 2>&1 &
	SPID=$!
}

# rl_wait_up DAEMON: until its control socket answers.
rl_wait_up() {
	wait_for "rl_status $1 >/dev/null" "${2:-30}" ||
		{ tail -n 20 "$LOGS/$1.log" >&2; fail "$1 did not come up"; }
}

rl_start_writer() { rl_spawn_writer "$@"; rl_wait_up writer; }
rl_start_probe() { rl_spawn_probe "$@"; rl_wait_up probe; }
rl_start_sampler() { rl_spawn_sampler "$@"; rl_wait_up sampler; }

# rl_start_suite: writer, probe (when root with BPF), sampler.
rl_start_suite() {
	rl_start_writer
	if [ "$(id -u)" = 0 ] && [ -n "$PROBE" ] && [ "$PROBE" != not-built ]; then
		rl_start_probe
	fi
	rl_start_sampler
}

# rl_kill VAR: SIGKILL the daemon whose pid is in VAR and reap it.
rl_kill() {
	eval "_p=\$$1"
	[ -n "$_p" ] || return 0
	kill -KILL "$_p" 2>/dev/null
	wait "$_p" 2>/dev/null
	eval "$1="
}

# rl_stop VAR: SIGTERM and reap; fails when it does not exit 0.
rl_stop() {
	eval "_p=\$$1"
	[ -n "$_p" ] || return 0
	kill -TERM "$_p"
	wait "$_p"
	_rc=$?
	eval "$1="
	[ "$_rc" = 0 ] || fail "$1 (pid $_p) exited $_rc on SIGTERM"
}

# rl_stop_suite: in the order croft run uses (sampler, probe, writer).
rl_stop_suite() {
	rl_stop SPID
	rl_stop PPID_
	rl_stop WPID
}

# rl_polls: the sampler's poll counter.
rl_polls() {
	rl_field sampler polls
}

# rl_wait_polls N: until the running sampler has polled N more times; when
# it does not, its log's tail says why (a sampler that never came back).
rl_wait_polls() {
	_base=$(rl_polls)
	wait_for "[ \"\$(rl_polls 2>/dev/null)\" -ge $(( ${_base:-0} + $1 )) ] 2>/dev/null" "${2:-60}" ||
		{ tail -n 20 "$LOGS/sampler.log" >&2; return 1; }
}

# rl_rss_kb PID: VmRSS in KiB.
rl_rss_kb() {
	awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null
}

# rl_cpu_ms PID: utime+stime in ms.
rl_cpu_ms() {
	awk -v hz="$(getconf CLK_TCK)" '{ print int(($14 + $15) * 1000 / hz) }' "/proc/$1/stat"
}

# rl_figure NAME VALUE: one measured figure, the form docs/testing.md's table copies.
rl_figure() {
	echo "figure: $1=$2"
}
