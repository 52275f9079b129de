#!/bin/sh
# test-confmissing.sh: a croft.conf that is missing or unreadable never
# means the defaults, except the default path missing at start.  A writer
# kept on retention_age = 90d holding a 40-day-old segment: its croft.conf
# renamed, `croftctl reload` and SIGHUP are refused naming the file and the
# segment stays (the default 30 d would delete it).  --config and
# CROFT_CONFIG naming a missing file are refused at start, croft run's
# --config too; a gpu_devices name no driver has is accepted but waiting.
. "$(dirname "$0")/rellib.sh"
require_cmd python3 timeout zstd
rl_setup
mkdir -p "$DATA" && chmod 755 "$DATA" # root's writer hands it over (one others may write it refuses)
printf '[writer]\nretention_age = 90d\n' > "$CONF"

# a closed segment that began 40 days ago: kept by 90 d, expired by 30 d
old=$(date -u -d '@'$(( $(date +%s) - 40 * 86400 )) +%Y%m%dT%H0000Z)
seg=$DATA/croft-dataset-$old.jsonl.zst
printf '{"unix_ms":1,"tgid":1}\n' | zstd -q -o "$seg"
chmod 666 "$seg"

rl_start_writer
[ -f "$seg" ] || fail "the 40-day-old segment was deleted under retention_age = 90d"
[ "$(rl_field writer segments.count)" = 1 ] || echo "# segments: $(rl_field writer segments)"

mv "$CONF" "$CONF.moved"
n0=$(grep -c 'reload refused' "$LOGS/writer.log")
if [ "$(id -u)" = 0 ]; then
	out=$("$CROFTCTL" --runtime-dir "$RUN" reload 2>&1) &&
		fail "croftctl reload accepted a missing croft.conf: $out"
	case $out in *"croft-writer: reload refused"*"$CONF: cannot read"*) ;;
	*) fail "croftctl reload does not say the writer refused, naming $CONF: $out" ;; esac
	echo "# croftctl reload: $(printf '%s' "$out" | tr '\n' ' ' | cut -c1-200)"
fi
kill -HUP "$WPID"
wait_for '[ "$(grep -c "reload refused" "$LOGS/writer.log")" -gt '"$n0"' ]' 10 ||
	fail "SIGHUP with croft.conf gone: no refusal logged"
grep -q "$CONF: cannot read" "$LOGS/writer.log" || fail "the refusal does not name $CONF"
kill -0 "$WPID" || fail "the writer died on a reload without its file"
rl_status writer > /dev/null || fail "the writer stopped answering"
[ -f "$seg" ] || fail "a refused reload deleted the 40-day-old segment (defaults applied)"
grep -q "deleted.*$old" "$LOGS/writer.log" && fail "the writer logged deleting $old"

# back in place: reload takes it, the segment still kept by 90 d
mv "$CONF.moved" "$CONF"
chmod 644 "$CONF"
kill -HUP "$WPID"
wait_for 'grep -q "reload: $CONF read" "$LOGS/writer.log"' 10 || fail "the good file was not reloaded"
[ -f "$seg" ] || fail "the segment went after the good reload"
rl_stop WPID

# start: a named file that cannot be read is refused, naming it
refused_start() {
	what=$1; shift
	out=$(timeout 10 "$@" 2>&1 </dev/null) && fail "$what started on a missing file"
	case $out in *"$TEST_TMP/typo.conf"*) ;; *) fail "$what: does not name the file: $out" ;; esac
	echo "# $what: $(printf '%s' "$out" | tail -n 1 | cut -c1-160)"
}
refused_start "croft-writer --config" "$WRITER" --config "$TEST_TMP/typo.conf" \
	--runtime-dir "$RUN" --data-dir "$DATA"
refused_start "croft-sampler --config -n" "$SAMPLER" -n --config "$TEST_TMP/typo.conf"
refused_start "CROFT_CONFIG croft-writer" env CROFT_CONFIG="$TEST_TMP/typo.conf" "$WRITER" \
	--runtime-dir "$RUN" --data-dir "$DATA"
refused_start "croft run --config" "$CROFT" run --config "$TEST_TMP/typo.conf" \
	--data-dir "$DATA" --runtime-dir "$TEST_TMP/run2"
[ -d "$TEST_TMP/run2" ] && [ -S "$TEST_TMP/run2/writer.sock" ] && fail "croft run started daemons"
refused_start "CROFT_CONFIG croft stats" env CROFT_CONFIG="$TEST_TMP/typo.conf" "$CROFT" stats \
	"$DATA"

# the default path missing: defaults, said once at notice (only where it is missing)
if [ ! -e /etc/croft/croft.conf ] && "$WRITER" -n 2>&1 | grep -q 'configuration OK'; then
	out=$("$WRITER" -n 2>&1)
	[ "$(printf '%s\n' "$out" | grep -c 'no such file; running on the defaults')" = 1 ] ||
		fail "the default path missing is not said once: $out"
fi

# a gpu_devices name no GPU driver has and /proc/devices lacks: waiting
printf '[probe]\ngpu_devices = nvdia, 1:7\n' > "$CONF"
rl_start_writer
rl_start_sampler
rl_wait_polls 2 || fail "sampler did not poll"
[ "$(rl_field sampler gpu_devices_waiting)" = nvdia ] ||
	fail "status does not show nvdia waiting: $(rl_field sampler gpu_devices_waiting)"
[ "$(grep -c 'gpu_devices: nvdia: no GPU driver' "$LOGS/sampler.log")" = 1 ] ||
	fail "the waiting name is not logged once: $(grep gpu_devices "$LOGS/sampler.log")"
rl_stop_suite
echo "ok missing croft.conf refused at reload (segment kept) and at start; gpu_devices typo waiting"
