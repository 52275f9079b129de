#!/bin/sh
# test-privilege.sh: least privilege of the running suite (as root).  Reads
# /proc/<pid>/status of each daemon: probe no capabilities after attach,
# sampler exactly CAP_SYS_PTRACE + CAP_DAC_READ_SEARCH, writer none;
# NoNewPrivs 1 and Seccomp 2 everywhere.  A user outside the daemons' group
# cannot connect to any socket, and with the sockets opened up by mistake
# the daemons still refuse it and log its uid.  A SECRET in a watched
# process's environment appears in no file; segments are 0640.
. "$(dirname "$0")/rellib.sh"
require_root
require_cmd useradd userdel setpriv zstd python3
rl_setup

cat > "$CONF" <<CONF
[sampler]
poll_interval = 200ms
idle_every = 1
[writer]
rotate_size = 16KiB
CONF
SECRET=croft-secret-$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')
env SECRET="$SECRET" sh -c 'while :; do :; done' &
EXTRA_PIDS=$!
rl_start_suite
rl_wait_polls 10 || fail "sampler does not poll"

# --- capabilities, no_new_privs, seccomp -------------------------------
status_of() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
check_daemon() {  # NAME PID CAPS
	for k in CapEff CapPrm; do
		v=$(status_of "$2" $k)
		[ $((0x$v)) = $(($3)) ] || fail "$1 $k is $v, want $(printf %016x $(($3)))"
	done
	[ "$(status_of "$2" CapAmb)" = 0000000000000000 ] || fail "$1 has ambient capabilities"
	[ "$(status_of "$2" NoNewPrivs)" = 1 ] || fail "$1 NoNewPrivs is not 1"
	[ "$(status_of "$2" Seccomp)" = 2 ] || fail "$1 has no seccomp filter (Seccomp not 2)"
	[ "$(awk '$1 == "Uid:" { print $3 }' "/proc/$2/status")" != 0 ] || fail "$1 runs as root"
	echo "ok $1: CapEff=$(status_of "$2" CapEff) NoNewPrivs=1 Seccomp=2 uid=$(awk '$1 == "Uid:" { print $3 }' "/proc/$2/status")"
}
check_daemon writer "$WPID" 0
check_daemon sampler "$SPID" '(1 << 19) | (1 << 2)'  # CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH
if [ -n "$PPID_" ]; then
	check_daemon probe "$PPID_" 0
else
	[ "${CI:-}" = true ] && fail "probe not built"
	echo "# probe not running here (not built): its check skipped"
fi

# --- an outsider ----------------------------------------------------------
OUTSIDER=croftrel$$
useradd --no-create-home --shell /usr/sbin/nologin --user-group "$OUTSIDER" ||
	fail "useradd $OUTSIDER"
RL_CLEANUP="userdel $OUTSIDER 2>/dev/null"
OUID=$(id -u "$OUTSIDER")
as_outsider() {
	setpriv --reuid="$OUID" --regid="$(id -g "$OUTSIDER")" --clear-groups "$@"
}
try_connect() {  # PATH TYPE: prints ok or the errno name
	as_outsider /usr/bin/python3 -c 'import socket, sys
t = socket.SOCK_SEQPACKET if sys.argv[2] == "seq" else socket.SOCK_STREAM
s = socket.socket(socket.AF_UNIX, t)
try:
    s.connect(sys.argv[1]); print("ok")
except OSError as e:
    import errno; print(errno.errorcode.get(e.errno, e.errno))' "$1" "$2"
}
for s in writer.sock:stream probe.sock:seq writer.ctl:stream sampler.ctl:stream probe.ctl:stream; do
	[ -S "$RUN/${s%%:*}" ] || continue
	r=$(try_connect "$RUN/${s%%:*}" "${s#*:}")
	[ "$r" = EACCES ] || fail "outsider uid $OUID connecting to ${s%%:*}: $r (want EACCES)"
done
out=$(as_outsider "$CROFTCTL" --runtime-dir "$RUN" reload 2>&1) && fail "croftctl reload by uid $OUID succeeded: $out"
echo "ok outsider uid $OUID: every socket EACCES; croftctl reload: $(echo "$out" | head -n 1)"

# Defence in depth: open the directory and sockets to everyone; the daemons
# themselves must still refuse the outsider (SO_PEERCRED) and log its uid.
chmod 755 "$RUN"
chmod 666 "$RUN"/*.ctl "$RUN"/*.sock
for d in writer sampler probe; do
	[ -S "$RUN/$d.ctl" ] || continue
	out=$(as_outsider "$WCTL" "$RUN/$d.ctl" reload 2>&1) && fail "$d accepted reload from uid $OUID: $out"
	out=$(as_outsider "$WCTL" "$RUN/$d.ctl" status 2>&1) && fail "$d answered status to uid $OUID: $out"
	wait_for "grep -q 'uid $OUID' '$LOGS/$d.log'" 10 || fail "$d did not log the refusal of uid $OUID"
done
# the data socket: the writer must not take batches from the outsider
r=$(as_outsider "$WCLIENT" --socket "$RUN/writer.sock" --batches 3 --rows 1 --timeout 5 2>&1) &&
	fail "writer took batches from uid $OUID: $r"
echo "ok opened sockets: status/reload refused by each daemon and logged with uid $OUID; writer.sock refused"
chmod 750 "$RUN"

# --- no environment anywhere; modes -------------------------------------
rl_wait_polls 5
kill -KILL "$EXTRA_PIDS"; EXTRA_PIDS=
wait_for '[ -n "$(ls "$DATA" | grep "\.zst$")" ]' 60 || fail "no compressed segment"
rl_stop_suite
for f in "$DATA"/* "$RUN"/* "$LOGS"/*.log; do
	[ -f "$f" ] || continue
	case $f in *.zst) zstd -q -dc "$f" ;; *) cat "$f" ;; esac | grep -q "$SECRET" &&
		fail "$f carries the environment variable SECRET"
done
for f in "$DATA"/croft-dataset*; do
	m=$(stat -c %a "$f")
	case $f in
	*.jsonl|*.zst) [ "$m" = 640 ] || fail "$f has mode $m, want 640" ;;
	*) [ $((0$m & 7)) = 0 ] || fail "$f is readable by others (mode $m)" ;;
	esac
done
[ $((0$(stat -c %a "$DATA") & 7)) = 0 ] || fail "data dir open to others"
$PY "$RELCHECK" lines "$DATA" || fail "dataset check"
echo "ok no SECRET in $(ls "$DATA" "$RUN" | wc -l) data/runtime files and the logs; segments 0640"
