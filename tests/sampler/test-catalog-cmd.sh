#!/bin/sh
# test-catalog-cmd.sh: `croft catalog show` prints the built-in catalog and
# `croft catalog check` accepts it back and refuses broken files with file,
# entry and reason.  TAP; any user.  usage: test-catalog-cmd.sh CROFT
set -u
CROFT=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
echo "1..5"
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

# croft-frameworks(5)'s limits, at each edge: the most passes, one more is refused
python3 - "$T" <<'PY'
import json, sys
t = sys.argv[1]
def w(name, entries):
    with open(f"{t}/{name}.json", "w") as f:
        json.dump(entries, f)
w("names-ok", [{"name": "n" * 64, "cmdline": ["x"]}])
w("names-bad", [{"name": "n" * 65, "cmdline": ["x"]}])
w("pattern-ok", [{"name": "a", "cmdline": ["p" * 256]}])
w("pattern-bad", [{"name": "a", "cmdline": ["p" * 257]}])
w("patterns-ok", [{"name": "a", "libraries": [f"l{i}" for i in range(64)]}])
w("patterns-bad", [{"name": "a", "libraries": [f"l{i}" for i in range(65)]}])
w("entries-ok", [{"name": f"e{i}", "cmdline": ["x"]} for i in range(256)])
w("entries-bad", [{"name": f"e{i}", "cmdline": ["x"]} for i in range(257)])
w("key-bad", [{"name": "a", "cmdline": ["x"], "regex": ["y"]}])
w("size-bad", [{"name": "a", "cmdline": ["x" * 200] * 60} for _ in range(100)])
PY
limits_hold() {
	for k in names pattern patterns entries; do
		"$CROFT" catalog check "$T/$k-ok.json" >/dev/null 2>&1 || { echo "# $k-ok refused"; return 1; }
	done
	"$CROFT" catalog check "$T/names-bad.json" 2>&1 | grep -q "entry 1: name too long" &&
	"$CROFT" catalog check "$T/pattern-bad.json" 2>&1 | grep -q 'entry 1 ("a"): a pattern is too long' &&
	"$CROFT" catalog check "$T/patterns-bad.json" 2>&1 | grep -q "too many patterns in one list" &&
	"$CROFT" catalog check "$T/entries-bad.json" 2>&1 | grep -q "not an array of 1 to 256 framework entries" &&
	"$CROFT" catalog check "$T/key-bad.json" 2>&1 | grep -q 'unknown key "regex"' &&
	"$CROFT" catalog check "$T/size-bad.json" 2>&1 | grep -q "size-bad.json: file too large"
}
check "the limits croft-frameworks(5) states: 64-byte names, 256-byte patterns, 64 a list, 256 entries, 1 MiB" \
	limits_hold
