# wlib.sh: helpers for croft-writer's integration tests (source it after
# setting nothing; meson passes WRITER, WCLIENT, WCHECK, WCTL, GEN_ROWS and
# TESTLIB).  Starts real writers in a private temporary directory.
. "$TESTLIB"

wl_setup() {
	make_tmpdir
	RUN=$TEST_TMP/run
	DATA=${DATA:-$TEST_TMP/data}
	CONF=$TEST_TMP/croft.conf
	WLOG=$TEST_TMP/writer.log
	WPID=
	mkdir -p "$RUN"
	: > "$CONF"
	# the writer re-reads croft.conf at reload as its drop user
	chmod 0755 "$TEST_TMP"
	chmod 0644 "$CONF"
	trap 'wl_cleanup' EXIT
}

wl_cleanup() {
	[ -n "$WPID" ] && kill -KILL "$WPID" 2>/dev/null
	[ -n "${CPID:-}" ] && kill -KILL "$CPID" 2>/dev/null
	wait 2>/dev/null
	[ -n "${WL_UMOUNT:-}" ] && umount "$WL_UMOUNT"
	if [ -n "${KEEP:-}" ]; then echo "kept $TEST_TMP" >&2; else rm -rf "$TEST_TMP"; fi
}

wl_status() {
	"$WCTL" "$RUN/writer.ctl" status 2>/dev/null
}

# wl_spawn: starts the writer without waiting; WPID is its pid.
wl_spawn() {
	"$WRITER" --config "$CONF" --runtime-dir "$RUN" --data-dir "$DATA" "$@" >>"$WLOG" 2>&1 &
	WPID=$!
}

# wl_start: starts the writer and waits until its control socket answers
# (it does so only once recovery is done and the loop runs).
wl_start() {
	rm -f "$RUN/writer.ctl"
	wl_spawn "$@"
	wait_for 'wl_status >/dev/null' 20 || { cat "$WLOG" >&2; fail "writer did not start"; }
}

wl_stop() {
	kill -TERM "$WPID" && wait "$WPID"
	_rc=$?
	WPID=
	[ "$_rc" = 0 ] || fail "writer exited $_rc on SIGTERM"
}

wl_kill() {
	kill -KILL "$WPID" 2>/dev/null
	wait "$WPID" 2>/dev/null
	WPID=
}

# wl_segments: closed segment files in name (= time) order.
wl_segments() {
	ls "$DATA" | grep -E '^croft-dataset-[0-9]{8}T[0-9]{6}Z\.jsonl(\.zst)?$' | sort
}

# wl_dataset: everything in the data dir in time order, decompressed.  A
# segment caught between compression and unlink exists twice; its .jsonl
# is the one that counts.
wl_dataset() {
	for f in $(wl_segments); do
		case $f in
		*.zst) [ -e "$DATA/${f%.zst}" ] || zstd -q -dc "$DATA/$f" || return 1 ;;
		*) cat "$DATA/$f" ;;
		esac
	done
	[ -e "$DATA/croft-dataset.jsonl" ] && cat "$DATA/croft-dataset.jsonl"
	return 0
}

# wl_no_jsonl_segments: true once compression has caught up.
wl_no_jsonl_segments() {
	! ls "$DATA" | grep -qE '^croft-dataset-.*\.jsonl$'
}

wl_field() {
	# crude JSON lookup good enough for our flat status keys: wl_field KEY
	wl_status | tr ',{}' '\n\n\n' | sed -n "s/^\"$1\":\(.*\)$/\1/p" | head -1
}
