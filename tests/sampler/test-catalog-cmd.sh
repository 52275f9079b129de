#!/bin/sh
# test-catalog-cmd.sh: `croft catalog show` prints the built-in catalog and
# `croft catalog check` accepts it back and refuses broken files with file,
# entry and reason.  TAP; any user.  usage: test-catalog-cmd.sh CROFT
set -u
CROFT=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
echo "1..4"
n=0
check() { n=$((n + 1)); if eval "$2"; then echo "ok $n - $1"; else echo "not ok $n - $1"; fi; }

"$CROFT" catalog show > "$T/builtin.json"
check "show then check round-trips the 13 built-in frameworks" \
	'"$CROFT" catalog check "$T/builtin.json" | grep -q "OK, 13 frameworks: sglang vllm"'
printf '[{"name":"a","cmdline":["x"]},{"name":"a","cmdline":["y"]}]' > "$T/dup.json"
check "a duplicate name is refused with file, entry and reason" \
	'! "$CROFT" catalog check "$T/dup.json" 2>&1 | grep -q OK &&
	 "$CROFT" catalog check "$T/dup.json" 2>&1 | grep -q "$T/dup.json: entry 2 (\"a\"): duplicate name"'
printf '[{"name":"a"}]' > "$T/nopat.json"
check "an entry without patterns is refused" \
	'! "$CROFT" catalog check "$T/nopat.json" 2>/dev/null &&
	 "$CROFT" catalog check "$T/nopat.json" 2>&1 | grep -q "entry 1 (\"a\"): no pattern"'
printf '[{"name":' > "$T/broken.json"
check "broken JSON is refused with its line and column" \
	'"$CROFT" catalog check "$T/broken.json" 2>&1 | grep -q "broken.json: line 1 column .*: broken JSON"'
