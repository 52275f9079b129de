#!/bin/sh
# test-badconf.sh: broken croft.conf and catalog files (huge lines, invalid
# UTF-8, wrong types, negative sizes, binary junk, a symlink to /dev/zero;
# an empty catalog) make every daemon refuse to start with one short message
# naming the file, quickly; a reload with any of them is refused, the daemon
# keeps running on its old configuration, and SIGHUP does the same.
. "$(dirname "$0")/rellib.sh"
require_cmd python3 timeout
rl_setup
B=$TEST_TMP/bad
mkdir "$B"
$PY - "$B" <<'PY'
import os, sys
d = sys.argv[1]
def w(name, data):
    with open(os.path.join(d, name), 'wb') as f:
        f.write(data)
w('conf-hugeline', b'[sampler]\npoll_interval = ' + b'9' * (1 << 20) + b's\n')
w('conf-utf8', b'[sampler]\npoll_interval = 2\xff\xfes\n')
w('conf-utf8-key', b'[sampler]\npoll_\xc3interval = 2s\n')
w('conf-type', b'[sampler]\nidle_every = lots\n')
w('conf-negative', b'[writer]\nrotate_size = -1GiB\n')
w('conf-negative-dur', b'[writer]\nretention_age = -30d\n')
w('conf-binary', os.urandom(4096).replace(b'\n', b'x') + b'\n')
w('conf-two-errors', b'[sampler]\nidle_every = lots\n[writer]\nzstd_level = 99\n')
w('conf-section', b'[sampler\npoll_interval = 2s\n')
w('cat-empty', b'')
w('cat-hugeline', b'[{"name": "' + b'a' * (1 << 20) + b'"}')
w('cat-utf8', b'[{"name": "x\xff", "libraries": ["libx"]}]\n')
w('cat-type', b'[{"name": 3, "libraries": "libx"}]\n')
w('cat-object', b'{"name": "x"}\n')
w('cat-nopattern', b'[{"name": "x"}]\n')
w('cat-dup', b'[{"name": "x", "cmdline": ["a"]}, {"name": "x", "cmdline": ["b"]}]\n')
PY
ln -s /dev/zero "$B/conf-zero"
ln -s /dev/zero "$B/cat-zero"
chmod -R a+rX "$B"

# refused COMMAND...: non-zero within 10 s, 1..3 lines naming the file
refused() {
	what=$1; shift
	out=$(timeout 10 "$@" 2>&1 </dev/null)
	rc=$?
	[ "$rc" != 0 ] || fail "$what accepted: $*"
	[ "$rc" != 124 ] || fail "$what: still running after 10 s: $*"
	[ "$rc" -lt 128 ] || fail "$what: died of a signal ($rc)"
	lines=$(printf '%s\n' "$out" | wc -l)
	[ "$lines" -le 3 ] || fail "$what: $lines lines of complaint: $(printf '%s' "$out" | head -c 600)"
	[ "$(printf '%s' "$out" | wc -c)" -le 2000 ] || fail "$what: a $(printf '%s' "$out" | wc -c)-byte message"
	case $out in *"$B/"*) ;; *) fail "$what: message does not name the file: $out" ;; esac
	# several errors: each on a line of its own, whole
	case $what in *two-errors*)
		[ "$(printf '%s\n' "$out" | grep -c "$B/conf-two-errors:[0-9]*: ")" = 2 ] ||
			fail "$what: the two errors are not one per line: $out" ;;
	esac
	echo "# $what: $(printf '%s' "$out" | head -n 1 | cut -c1-150)"
}
n=0
for f in "$B"/conf-*; do
	for d in "$WRITER" "$SAMPLER" ${PROBE:+"$PROBE"}; do
		[ "$d" = not-built ] && continue
		refused "$(basename "$d") $(basename "$f")" "$d" -n --config "$f"
		n=$((n + 1))
	done
	# a real start too, not only -n
	refused "croft-writer start $(basename "$f")" "$WRITER" --config "$f" --runtime-dir "$RUN" \
		--data-dir "$DATA"
done
for f in "$B"/cat-*; do
	refused "croft-sampler $(basename "$f")" "$SAMPLER" -n --config "$CONF" --frameworks "$f"
	n=$((n + 1))
done

# reload: good start, then each bad file in place of the good one
cp "$(dirname "$0")/../../catalog/frameworks.json" "$TEST_TMP/frameworks.json" 2>/dev/null ||
	echo '[{"name": "pytorch", "libraries": ["libtorch"]}]' > "$TEST_TMP/frameworks.json"
chmod 644 "$TEST_TMP/frameworks.json"
printf '[sampler]\npoll_interval = 300ms\nidle_every = 2\n' > "$CONF"
cp "$CONF" "$TEST_TMP/good.conf"
rl_start_writer
rl_spawn_sampler --frameworks "$TEST_TMP/frameworks.json"
rl_wait_up sampler
[ "$(rl_field sampler poll_interval_ms)" = 300 ] || fail "good config not in effect"
cat0=$(rl_field sampler catalog)
r=0
for f in "$B"/conf-*; do
	cp -P "$f" "$CONF"
	for d in writer sampler; do
		out=$("$CROFTCTL" --runtime-dir "$RUN" reload 2>&1) && fail "reload with $(basename "$f") accepted"
		kill -0 "$SPID" && kill -0 "$WPID" || fail "a daemon died on reload with $(basename "$f")"
	done
	kill -HUP "$SPID" "$WPID"
	[ "$(rl_field sampler poll_interval_ms)" = 300 ] || fail "sampler lost its configuration ($(basename "$f"))"
	rm -f "$CONF"
	r=$((r + 1))
done
for f in "$B"/cat-*; do
	cp -P "$f" "$TEST_TMP/frameworks.json.new"
	mv "$TEST_TMP/frameworks.json" "$TEST_TMP/frameworks.good"
	mv "$TEST_TMP/frameworks.json.new" "$TEST_TMP/frameworks.json"
	cp "$TEST_TMP/good.conf" "$CONF"
	if [ "$(id -u)" = 0 ]; then
		"$WCTL" "$RUN/sampler.ctl" reload > "$TEST_TMP/reply" 2>&1 && fail "catalog $(basename "$f") accepted on reload"
		grep -q 'refused' "$TEST_TMP/reply" || fail "reload reply does not say it was refused: $(cat "$TEST_TMP/reply")"
	else  # reload over the socket is root's; SIGHUP is the daemon user's
		n0=$(grep -c 'reload refused' "$LOGS/sampler.log")
		kill -HUP "$SPID"
		wait_for '[ "$(grep -c "reload refused" "$LOGS/sampler.log")" -gt '"$n0"' ]' 10 ||
			fail "SIGHUP with catalog $(basename "$f"): no refusal logged"
	fi
	kill -0 "$SPID" || fail "sampler died on catalog $(basename "$f")"
	[ "$(rl_field sampler catalog)" = "$cat0" ] || fail "catalog changed by a refused reload"
	mv "$TEST_TMP/frameworks.good" "$TEST_TMP/frameworks.json"
	r=$((r + 1))
done
cp "$TEST_TMP/good.conf" "$CONF"
if [ "$(id -u)" = 0 ]; then
	"$CROFTCTL" --runtime-dir "$RUN" reload > /dev/null 2>&1 || fail "good reload refused after the bad ones"
else
	kill -HUP "$SPID" "$WPID"
fi
rl_wait_polls 2 || fail "sampler stopped polling"
rl_stop_suite
grep -c 'reload refused' "$LOGS/sampler.log" > /dev/null || fail "refused reloads not logged"
rl_figure badconf_starts_refused "$n"
rl_figure badconf_reloads_refused "$r"
echo "ok $n broken starts refused with one message each; $r broken reloads refused, old configuration kept"
