#!/bin/sh
# test-retention.sh: croft-writer deletes segments older than retention_age
# (from the start in the name) at start, then the oldest while all exceed
# retention_size (after a reload here); the newest segment is judged like
# any other, the live file is never a segment; every deletion is logged with
# name, age and size.  A bad reload keeps the running limits and reports the
# error.
. "$(dirname "$0")/wlib.sh"
wl_setup
mkdir -p "$DATA"
stamp() { date -u -d "@$1" +%Y%m%dT%H%M%SZ; }
now_s=$(date +%s)
hour=$((now_s - now_s % 3600))
old=
for d in 40 35 31; do
	f=croft-dataset-$(stamp $((hour - d * 86400))).jsonl.zst
	head -c 10000 /dev/urandom > "$DATA/$f"
	old="$old $f"
done
recent=
for h in 3 2 1; do
	f=croft-dataset-$(stamp $((hour - h * 3600))).jsonl.zst
	head -c 10000 /dev/urandom > "$DATA/$f"
	recent="$recent $f"
done
newest=$f
cat > "$CONF" <<CONF
[writer]
retention_age = 30d
retention_size = 1GiB
CONF
wl_start
for f in $old; do
	[ ! -e "$DATA/$f" ] || fail "$f (over 30 days) not deleted"
	grep -E "retention: deleted $f \(age [34][0-9]d [0-9]{2}h[0-9]{2}m, 10000 bytes\)" "$WLOG" >/dev/null ||
		fail "deletion of $f not logged with age and size"
done
for f in $recent; do
	[ -e "$DATA/$f" ] || fail "$f (hours old) deleted"
done
echo "ok by age: 3 deleted, 3 kept"

# the rest reloads through writer.ctl, which serves reload to root only
if [ "$(id -u)" != 0 ]; then
	[ "${CI:-}" = true ] && fail "the reload checks need root (CI=true)"
	wl_stop
	echo "# reload checks (by size, a bad file) need root: writer.ctl reload is root's; not run"
	exit 0
fi

# a bad file keeps the running limits and says why
printf '[writer]\nretention_size = tiny\n' > "$CONF"
out=$("$WCTL" "$RUN/writer.ctl" reload) && fail "a bad reload was accepted"
echo "$out" | grep -q "croft.conf:2" || fail "reload error lacks file:line: $out"
for f in $recent; do [ -e "$DATA/$f" ] || fail "$f deleted after a refused reload"; done

# by size: 16 KiB over three 10000-byte segments: the two oldest go
printf '[writer]\nretention_age = 30d\nretention_size = 16KiB\n' > "$CONF"
"$WCTL" "$RUN/writer.ctl" reload >/dev/null || fail "reload"
set -- $recent
[ ! -e "$DATA/$1" ] || fail "$1 (oldest) kept over retention_size"
[ ! -e "$DATA/$2" ] || fail "$2 kept over retention_size"
[ -e "$DATA/$newest" ] || fail "the newest segment was deleted"
[ -e "$DATA/croft-dataset.jsonl" ] || fail "the live file was deleted"
grep -q "retention: deleted $2 " "$WLOG" || fail "size deletion not logged"

# the newest goes too: by age (it began over an hour ago) ...
printf '[writer]\nretention_age = 30m\nretention_size = 1GiB\n' > "$CONF"
"$WCTL" "$RUN/writer.ctl" reload >/dev/null || fail "reload"
[ ! -e "$DATA/$newest" ] || fail "the newest segment kept past retention_age"
grep -Eq "retention: deleted $newest \(age 0d 0[12]h" "$WLOG" || fail "age deletion of the newest not logged"
# ... and by size when it alone exceeds the limit; the live file is no segment
head -c 10000 /dev/urandom > "$DATA/$newest"
printf '[writer]\nretention_size = 4KiB\n' > "$CONF"
"$WCTL" "$RUN/writer.ctl" reload >/dev/null || fail "reload"
[ ! -e "$DATA/$newest" ] || fail "the newest segment kept alone over retention_size"
"$WCLIENT" --socket "$RUN/writer.sock" --batches 50 --rows 10 --acks "$TEST_TMP/acks" >/dev/null || fail "client"
"$WCHECK" "$TEST_TMP/acks" 10 50 < "$DATA/croft-dataset.jsonl" || fail "live file touched by retention"
wl_stop
echo "ok by size: oldest deleted, then the newest past age or alone over size; live file kept; bad reload refused"
