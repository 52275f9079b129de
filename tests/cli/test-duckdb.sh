#!/bin/sh
# test-duckdb.sh CROFT GEN_ROWS: the README's "Many hosts" SQL, run by DuckDB
# (from npm, installed into tests/cli/node_modules by `make deps`), against
# croft stats on a generated three-host fleet (two identical nodes with the
# same tgids, one other; each host's rows cut into .jsonl.zst segments in a
# folder of its own): process-hours and processes per workload state and per
# host, GPU-held and idle GPU-held hours per container and per GPU, processes
# and CPU-hours per framework, calls per syscall; then the same after the
# README's Parquet recipe.  Prints TAP.  Without node or DuckDB it skips,
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
	"$GEN" --processes "$procs" --polls 900 --seed "$seed" --host "$name" > "$tmp/$name.jsonl"
	split -n l/3 -d "$tmp/$name.jsonl" "$tmp/fleet/$name/croft-dataset-part"
	for f in "$tmp/fleet/$name"/croft-dataset-part*; do
		zstd -q --rm "$f" -o "$f.jsonl.zst"
	done
done
"$CROFT" stats --json --config "$tmp/empty.conf" "$tmp/fleet" > "$tmp/croft.json"
export CROFT_GLOB="$tmp/fleet/**/*.jsonl.zst" CROFT_PARQUET="$tmp/parquet"
mkdir -p "$tmp/parquet"
"$HERE/readme-sql.sh" "$HERE/../../README.md" fleet-view fleet-query > "$tmp/json.sql"
"$HERE/readme-sql.sh" "$HERE/../../README.md" fleet-view fleet-parquet fleet-query > "$tmp/parquet.sql"
grep -q "GROUP BY" "$tmp/json.sql" || fail "no fleet-query block in the README"
(cd "$HERE" && node duckdb-check.mjs < "$tmp/json.sql") > "$tmp/duck.json"
(cd "$HERE" && node duckdb-check.mjs < "$tmp/parquet.sql") > "$tmp/parquet.json"
ls "$tmp/parquet"/*.parquet >/dev/null || fail "the Parquet recipe wrote no file"

echo "1..11"
python3 - "$tmp" <<'PY'
import json, sys
tmp = sys.argv[1]
c = json.load(open(f"{tmp}/croft.json"))
duck = {}
for r in json.load(open(f"{tmp}/duck.json")):
    duck.setdefault(r["figure"], {})[r["key"]] = r["value"]
n = 0
HOURS = 2e-6  # croft --json rounds hours to 6 decimals

def check(what, want, figure, slack):
    global n
    n += 1
    got = duck.get(figure, {})
    bad = {k: (v, got.get(k)) for k, v in want.items()
           if got.get(k) is None or abs(got[k] - v) > slack}
    extra = [k for k, v in got.items() if k not in want and abs(v) > slack]
    ok = want and not bad and not extra
    print(f"{'ok' if ok else 'not ok'} {n} - {what} ({len(want)} figures)")
    if not ok:
        print("# " + json.dumps({"differ": bad, "only in DuckDB": extra})[:2000])

wl = c["workloads"]
check("process-hours per workload state", {w["workload"]: w["process_hours"] for w in wl if w["rows"]},
      "process_hours", HOURS)
check("processes per workload state", {w["workload"]: w["processes"] for w in wl if w["rows"]},
      "processes", 0)
check("process-hours per host", {h["host"]: h["process_hours"] for h in c["hosts"]},
      "host_process_hours", HOURS)
by_c = c["gpu_held_by_container"]
check("GPU-held hours per container", {g["container_id"]: g["gpu_held_hours"] for g in by_c},
      "gpu_held_hours", HOURS)
check("idle GPU-held hours per container",
      {g["container_id"]: g["idle_gpu_held_hours"] for g in by_c}, "idle_gpu_held_hours", HOURS)
by_g = c["gpu_held_by_gpu"]
check("GPU-held hours per GPU", {str(g["gpu"]): g["gpu_held_hours"] for g in by_g},
      "gpu_held_hours_by_gpu", HOURS)
check("idle GPU-held hours per GPU", {str(g["gpu"]): g["idle_gpu_held_hours"] for g in by_g},
      "idle_gpu_held_hours_by_gpu", HOURS)
fw = c["frameworks"]
check("processes per framework", {f["framework"]: f["processes"] for f in fw},
      "framework_processes", 0)
check("CPU-hours per framework", {f["framework"]: f["cpu_hours"] for f in fw},
      "framework_cpu_hours", HOURS)
# croft lists the top 20 syscalls: each of those, to the call
calls = {s["name"]: s["calls"] for s in c["syscalls"]}
got = duck.get("calls", {})
n += 1
bad = {k: (v, got.get(k)) for k, v in calls.items() if got.get(k) is None or abs(got[k] - v) > 1}
top = sorted(got, key=lambda k: -got[k])[:len(calls)]
ok = calls and not bad and set(top) == set(calls)
print(f"{'ok' if ok else 'not ok'} {n} - calls per syscall, croft's top {len(calls)}")
if not ok:
    print("# " + json.dumps(bad)[:2000])
PY
python3 - "$tmp" <<'PY'
import json, sys
tmp = sys.argv[1]
a, b = (json.load(open(f"{tmp}/{f}.json")) for f in ("duck", "parquet"))
key = lambda r: (r["figure"], str(r["key"]))
a, b = ({key(r): r["value"] for r in x} for x in (a, b))
same = a.keys() == b.keys() and all(abs(a[k] - b[k]) <= 1e-9 * max(1, abs(a[k])) for k in a)
print(f"{'ok' if same else 'not ok'} 11 - the Parquet copy gives the same {len(a)} figures")
PY
