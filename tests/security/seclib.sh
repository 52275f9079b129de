# seclib.sh: helpers of the security suite (source it; meson passes WRITER,
# SAMPLER, CROFT, WCTL, TESTLIB).  Each test plays a local attacker against
# root-run croft: an unprivileged user made here with useradd and removed at
# exit (no test relies on a croft user existing or not), a private
# temporary directory, the real daemons.
. "$TESTLIB"

# sec_setup: root, a scratch dir others may enter, an attacker user A
# (uid in $A_UID), removed with everything at exit.
sec_setup() {
	require_root
	require_cmd useradd userdel setpriv timeout
	make_tmpdir
	chmod 0755 "$TEST_TMP"
	A=crofta$$
	# other tests on this host may hold /etc/passwd's lock a moment: retried
	wait_for "useradd --system --no-create-home --shell /usr/sbin/nologin --user-group '$A' 2>/dev/null || getent passwd '$A' >/dev/null" 30 ||
		fail "useradd $A"
	A_UID=$(id -u "$A")
	A_GID=$(id -g "$A")
	SEC_PIDS=
	trap 'sec_cleanup' EXIT
}

sec_cleanup() {
	for p in $SEC_PIDS; do
		kill -KILL "$p" 2>/dev/null
	done
	wait 2>/dev/null
	# what the attacker still runs (it may have forked), then the user
	pkill_pids=$(ps -o pid= -u "$A" 2>/dev/null)
	for p in $pkill_pids; do
		kill -KILL "$p" 2>/dev/null
	done
	# gone, whatever else holds /etc/passwd's lock a moment (none may be left behind)
	wait_for "! getent passwd '$A' >/dev/null || userdel '$A' 2>/dev/null; ! getent passwd '$A' >/dev/null" 30
	wait_for "! getent group '$A' >/dev/null || groupdel '$A' 2>/dev/null; ! getent group '$A' >/dev/null" 30
	if [ -n "${KEEP:-}" ]; then echo "kept $TEST_TMP" >&2; else rm -rf "$TEST_TMP"; fi
}

# the system python, which any user may run (a pyenv shim in root's PATH is not)
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3

# as_a CMD...: CMD as the attacker.
as_a() {
	setpriv --reuid="$A_UID" --regid="$A_GID" --clear-groups "$@"
}

# owner_mode PATH: "user:group mode" of PATH itself (not a symlink's target).
owner_mode() {
	stat -c '%u:%g %a' "$1"
}

# victim NAME: a root-owned 0755 directory (its "uid:gid mode" in $VICTIM_WAS).
victim() {
	mkdir -m 0755 "$TEST_TMP/$1"
	chown 0:0 "$TEST_TMP/$1"
	chmod 0755 "$TEST_TMP/$1"
	VICTIM_WAS=$(owner_mode "$TEST_TMP/$1")
}

# TAP
SEC_N=0
SEC_FAILED=0
check() {
	_what=$1
	shift
	SEC_N=$((SEC_N + 1))
	if "$@"; then
		echo "ok $SEC_N - $_what"
	else
		echo "not ok $SEC_N - $_what"
		SEC_FAILED=1
	fi
}
sec_done() {
	echo "1..$SEC_N"
	exit "$SEC_FAILED"
}
