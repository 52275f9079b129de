#!/bin/bash
# test-ctl.sh: croftctl against daemons started by `croft run`: a killed
# daemon is shown down (non-zero) and croft run restarts it; reload with a
# broken croft.conf fails with file and line and leaves every daemon on the
# old configuration, a good one is taken; a user the test creates is refused
# status and reload, and gets status (not reload) once in the daemons' group.
# usage: test-ctl.sh CROFT CROFTCTL PROBE_BINARY
set -u
. "$(dirname "$0")/../lib/testlib.sh"
. "$(dirname "$0")/opslib.sh"
CROFT=$1 CROFTCTL=$2 PROBE_BIN=$3
require_root
require_cmd jq useradd userdel usermod setpriv
ops_probe_expected; probe=$?
[ $probe = 2 ] && fail "the probe cannot run on this CI host"
ops_setup

# The daemons' group must be the real croft group: without a croft user they
# run as nobody, and a group others share (nogroup) grants nothing (security
# review 4), so the group member's checks below would fail on a machine croft
# has never seen.  Make the croft user from our sysusers.d snippet when
# missing, and remove it again at the end.
made_croft=
if ! getent passwd croft >/dev/null; then
	src_sysusers=$(dirname "$0")/../../systemd/sysusers.d/croft.conf
	systemd-sysusers "$src_sysusers" >/dev/null 2>&1 && made_croft=1
fi
user=crofttest$$
useradd -M -N -s /usr/sbin/nologin "$user" || fail "useradd $user"
# gone USER: the user and its group removed, retried while another command
# holds /etc/passwd's lock or the daemons just stopped are still leaving (a
# croft user left behind would change every later test: .ci/run fails on it)
gone() {
	wait_for "! getent passwd '$1' >/dev/null || userdel '$1' 2>/dev/null; ! getent passwd '$1' >/dev/null" 30 &&
		wait_for "! getent group '$1' >/dev/null || groupdel '$1' 2>/dev/null; ! getent group '$1' >/dev/null" 30 ||
		echo "# could not remove user or group $1"
}
OPS_CLEANUP_EXTRA="gone $user; [ -z \"$made_croft\" ] || gone croft"
cp "$CROFTCTL" "$TEST_TMP/croftctl" && chmod 755 "$TEST_TMP/croftctl"

printf '[sampler]\npoll_interval = 1s\n\n[writer]\nzstd_level = 5\n' >"$C"
CROFT_RUN_WATCHDOG_S=8 ops_start
want="ops_up croft-writer && ops_up croft-sampler"
[ $probe = 0 ] && want="$want && ops_up croft-probe"
check "croft run: every daemon up" wait_for "$want" 30
if [ $probe = 0 ]; then check "croftctl status exits 0" quiet ctl status; fi

# A killed daemon: down, non-zero, then restarted by croft run.
wpid=$(ops_field croft-writer .pid)
kill -9 "$wpid"
wait_for "! kill -0 $wpid 2>/dev/null" 10
out=$(ctl status); rc=$?
check "croftctl status exits non-zero with the writer killed" [ $rc != 0 ]
check "the writer is shown down, and why" \
	grep -Eq '^croft-writer +down +.*not running' <<<"$out"
check "croft run logged the death and restarts the writer" \
	wait_for "grep -q 'restarting croft-writer in' '$LOG' && ops_up croft-writer" 30
check "the restarted writer has a new pid" [ "$(ops_field croft-writer .pid)" != "$wpid" ]

# A hung daemon (stopped, no watchdog pings) is killed and restarted; the
# watchdog is 8 s here (CROFT_RUN_WATCHDOG_S, see ops_start below).
spid=$(ops_field croft-sampler .pid)
kill -STOP "$spid"
check "croft run kills a sampler that stopped pinging its watchdog" \
	wait_for "grep -q 'croft-sampler (pid $spid) sent no watchdog ping' '$LOG'" 20
check "... and restarts it" \
	wait_for 'ops_up croft-sampler && [ "$(ops_field croft-sampler .pid)" != "$spid" ]' 20

# reload: a broken file is refused by every daemon, which stay on the old one.
printf '[sampler]\npoll_interval = 1s\nidle_every = often\n\n[writer]\nzstd_level = 7\n' >"$C"
out=$(ctl reload 2>&1); rc=$?
echo "$out" | sed 's/^/# /'
check "croftctl reload with a broken croft.conf exits non-zero" [ $rc != 0 ]
check "the message names the file and line" grep -q "$C:3: idle_every" <<<"$out"
check "the sampler refused it" grep -q '^croft-sampler: reload refused' <<<"$out"
check "the writer refused it" grep -q '^croft-writer: reload refused' <<<"$out"
if [ $probe = 0 ]; then check "the probe refused it" grep -q '^croft-probe: reload refused' <<<"$out"; fi
check "the daemons still run" wait_for "$want" 5
check "the sampler is still on the old poll_interval (1000 ms)" \
	[ "$(ops_field croft-sampler .status.poll_interval_ms)" = 1000 ]
check "the writer is still on the old zstd_level (5)" \
	[ "$(ops_field croft-writer .status.compression.level)" = 5 ]
printf '[sampler]\npoll_interval = 500ms\n\n[writer]\nzstd_level = 7\n' >"$C"
check "croftctl reload of a good file exits 0" quiet ctl reload
# A reload that comes while a poll runs takes effect when that poll ends.
check "the sampler took the new poll_interval (500 ms)" \
	wait_for '[ "$(ops_field croft-sampler .status.poll_interval_ms)" = 500 ]' 10
check "the writer took the new zstd_level (7)" \
	[ "$(ops_field croft-writer .status.compression.level)" = 7 ]

# label: to the sampler; set and clear.
check "croftctl label sets a container's label" quiet ctl label 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef exp-42
check "the sampler logged it" wait_for "grep -q 'label of container 0123456789ab set' '$LOG'" 5
check "croftctl label --clear clears it" quiet ctl label --clear 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
check "croftctl label without text is a usage error (2)" bash -c "'$CROFTCTL' --runtime-dir '$R' label x; [ \$? = 2 ]"

# SIGHUP to croft run reaches every daemon, which reloads.
printf '[sampler]\npoll_interval = 2s\n\n[writer]\nzstd_level = 4\n' >"$C"
kill -HUP "$RUN_PID"
check "SIGHUP: the sampler reloads (poll_interval 2000 ms)" \
	wait_for '[ "$(ops_field croft-sampler .status.poll_interval_ms)" = 2000 ]' 10
check "SIGHUP: the writer reloads (zstd_level 4)" \
	wait_for '[ "$(ops_field croft-writer .status.compression.level)" = 4 ]' 10
check "SIGHUP: every daemon still up" wait_for "$want" 5

# An unprivileged user: refused; in the daemons' group, status only.
as_user() { setpriv --reuid "$user" --regid "$(id -g "$user")" --init-groups \
	"$TEST_TMP/croftctl" --runtime-dir "$R" "$@"; }
out=$(as_user status 2>&1); rc=$?
check "status as $user (not in the group): non-zero" [ $rc != 0 ]
check "... and says permission denied" grep -q 'permission denied' <<<"$out"
out=$(as_user reload 2>&1); rc=$?
check "reload as $user: non-zero, refused" \
	bash -c "[ $rc != 0 ] && grep -q 'reload needs root\|refused' <<<'$out'"
group=$(stat -c %G "$R")
echo "# the daemons' group is $group"
usermod -a -G "$group" "$user"
out=$(as_user status 2>&1); rc=$?
check "status as $user in group $group: answered" grep -Eq '^croft-writer +up' <<<"$out"
check "status as $user in group $group: exit 0 when all are up" \
	bash -c "[ $probe != 0 ] || [ $rc = 0 ]"
out=$(as_user reload 2>&1); rc=$?
echo "$out" | sed 's/^/# /'
check "reload as $user in group $group: still refused, non-zero" \
	bash -c "[ $rc != 0 ] && grep -q 'refused\|needs root' <<<'$out'"
out=$(as_user label 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef x 2>&1); rc=$?
check "label as $user in group $group: refused, non-zero" \
	bash -c "[ $rc != 0 ] && grep -q 'refused\|needs root' <<<'$out'"
check "the daemon logged the refusal" grep -q 'control: refused uid' "$LOG"

ops_stop
check "croft run exits 0 after SIGINT" [ "$RUN_RC" = 0 ]
finish
