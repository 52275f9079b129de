#!/bin/sh
# test-duckdb.sh CROFT GEN_ROWS: docs/engines.md's DuckDB SQL, run by DuckDB
# (from npm, installed into tests/cli/node_modules by `make deps`), against
# croft stats on a generated three-host fleet (two identical nodes with the
# same tgids, one other; each host's rows cut into .jsonl.zst segments in a
# folder of its own; every 45th poll a vanished row without workload, which
# croft stats counts as no-gpu): process-hours and processes per workload
# state and per host, GPU-held and idle GPU-held hours per container and per GPU, processes
# and CPU-hours per framework, calls per syscall; then the same after the
# Parquet recipe there.  Prints TAP.  Without node or DuckDB it skips,
# saying why; under CI=true that fails.
set -eu
CROFT=$1
GEN=$2
HERE=${TESTS_CLI_DIR:-$(dirname "$0")}
TESTLIB_TAP=1
. "$HERE/../lib/testlib.sh"

command -v node >/dev/null 2>&1 || skip "node is not installed (make deps installs nodejs and npm)"
[ -d "$HERE/node_modules/@duckdb/node-api" ] ||
	skip "DuckDB is not installed: run make deps (npm ci --prefix tests/cli)"

tmp=$(mktemp -d)
: > "$tmp/empty.conf" # the defaults (a named file that is missing is refused)
trap 'rm -rf "$tmp"' EXIT
for host in node-a:1:120 node-b:1:120 node-c:3:60; do
	name=${host%%:*} seed=${host#*:} seed=${seed%%:*} procs=${host##*:}
	mkdir -p "$tmp/fleet/$name"
	"$GEN" --processes "$procs" --polls 900 --seed "$seed" --host "$name" --vanished-unread 45 \
		> "$tmp/$name.jsonl"
	grep -qv '"workload"' "$tmp/$name.jsonl" || fail "$name: no row without workload"
	split -n l/3 -d "$tmp/$name.jsonl" "$tmp/fleet/$name/croft-dataset-part"
	for f in "$tmp/fleet/$name"/croft-dataset-part*; do
		zstd -q --rm "$f" -o "$f.jsonl.zst"
	done
done
"$CROFT" stats --json --config "$tmp/empty.conf" "$tmp/fleet" > "$tmp/croft.json"
export CROFT_GLOB="$tmp/fleet/**/*.jsonl.zst" CROFT_PARQUET="$tmp/parquet"
mkdir -p "$tmp/parquet"
"$HERE/docs-sql.sh" "$HERE/../../docs/engines.md" fleet-view fleet-query > "$tmp/json.sql"
"$HERE/docs-sql.sh" "$HERE/../../docs/engines.md" fleet-view fleet-parquet fleet-query > "$tmp/parquet.sql"
grep -q "GROUP BY" "$tmp/json.sql" || fail "no fleet-query block in docs/engines.md"
(cd "$HERE" && node duckdb-check.mjs < "$tmp/json.sql") > "$tmp/duck.json"
(cd "$HERE" && node duckdb-check.mjs < "$tmp/parquet.sql") > "$tmp/parquet.json"
ls "$tmp/parquet"/*.parquet >/dev/null || fail "the Parquet recipe wrote no file"

echo "1..23"
status=0
python3 "$HERE/fleet_check.py" "$tmp/croft.json" "$tmp/duck.json" 1 || status=1
python3 - "$tmp" <<'PY' || status=1
import json, sys
tmp = sys.argv[1]
a, b = (json.load(open(f"{tmp}/{f}.json")) for f in ("duck", "parquet"))
key = lambda r: (r["figure"], str(r["key"]))
a, b = ({key(r): r["value"] for r in x} for x in (a, b))
same = a.keys() == b.keys() and all(abs(a[k] - b[k]) <= 1e-9 * max(1, abs(a[k])) for k in a)
print(f"{'ok' if same else 'not ok'} 23 - the Parquet copy gives the same {len(a)} figures")
sys.exit(0 if same else 1)
PY
exit $status
