#!/bin/sh
# test-duckdb.sh CROFT GEN_ROWS: croft stats against DuckDB (from npm, installed
# into tests/cli/node_modules by `make deps`) on a generated dataset stored as
# .jsonl.zst segments in one folder per host: rows per workload, processes
# and CPU-hours per framework, GPU-held and idle hours per GPU (workloads and
# the system holder apart), rows per host taken from the path.  Prints TAP.
# Without node or DuckDB it skips, saying why; under CI=true that fails.
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
mkdir -p "$tmp/data/host-a" "$tmp/data/host-b"
# host-a: one stream cut into four hourly-style segments; host-b: another seed
"$GEN" --processes 120 --polls 900 --seed 3 > "$tmp/a.jsonl"
split -n l/4 -d "$tmp/a.jsonl" "$tmp/data/host-a/croft-dataset-part"
for f in "$tmp"/data/host-a/croft-dataset-part*; do
	zstd -q --rm "$f" -o "$f.jsonl.zst"
done
"$GEN" --processes 30 --polls 200 --seed 7 | zstd -q -o "$tmp/data/host-b/croft-dataset-20261020T140000Z.jsonl.zst"

echo "1..7"
# Processes are told apart per host: the check runs on host-a's folder.
node "$HERE/duckdb-check.mjs" "$tmp/data/host-a/*.jsonl.zst" 2000 60000 > "$tmp/duck-a.json"
node "$HERE/duckdb-check.mjs" "$tmp/data/*/*.jsonl.zst" 2000 60000 > "$tmp/duck-all.json"
"$CROFT" stats --json --config "$tmp/empty.conf" "$tmp/data/host-a" > "$tmp/croft-a.json"
"$CROFT" stats --json --config "$tmp/empty.conf" "$tmp/data/host-b" > "$tmp/croft-b.json"
# README "Many hosts": the sql block after the "tested" marker, on these folders
python3 - "$HERE/../../README.md" "$tmp/data/*/*.jsonl.zst" > "$tmp/readme.sql" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
m = re.search(r"<!-- tested: tests/cli/test-duckdb.sh runs the sql block below -->\s*```sql\n(.*?)```", text, re.S)
print(m.group(1).replace("/srv/croft/*/*.jsonl.zst", sys.argv[2]) if m else "")
PY
node "$HERE/duckdb-check.mjs" --sql < "$tmp/readme.sql" > "$tmp/readme.json"

python3 - "$tmp" <<'PY'
import json, sys
tmp = sys.argv[1]
duck = json.load(open(f"{tmp}/duck-a.json"))
alld = json.load(open(f"{tmp}/duck-all.json"))
ca = json.load(open(f"{tmp}/croft-a.json"))
cb = json.load(open(f"{tmp}/croft-b.json"))
n = 0
def check(ok, what, detail):
    global n
    n += 1
    print(f"{'ok' if ok else 'not ok'} {n} - {what}")
    if not ok:
        print("# " + json.dumps(detail))
rows = {w["workload"]: w["rows"] for w in ca["workloads"] if w["rows"]}
check(rows == duck["rows_per_workload"], "rows per workload", [rows, duck["rows_per_workload"]])
procs = {f["framework"] or "(none)": f["processes"] for f in ca["frameworks"]}
check(procs == {k: v["processes"] for k, v in duck["frameworks"].items()},
      "processes per framework", [procs, duck["frameworks"]])
cpu = {f["framework"] or "(none)": f["cpu_hours"] for f in ca["frameworks"]}
bad = {k: (cpu.get(k), v["cpu_hours"]) for k, v in duck["frameworks"].items()
       if cpu.get(k) is None or abs(cpu[k] - v["cpu_hours"]) > 2e-6}
check(not bad and len(cpu) == len(duck["frameworks"]), "CPU-hours per framework", bad)
def close(a, b):
    return all(abs(a[k][f] - b[k][f]) <= 2e-6 for k in a for f in ("held", "idle")) and a.keys() == b.keys()
gpus = {str(g["gpu"]): {"held": g["gpu_held_hours"], "idle": g["idle_gpu_held_hours"]}
        for g in ca["gpu_held_by_gpu"]}
check(close(gpus, duck["gpus"]) and len(gpus) == 8, "GPU-held and idle hours per GPU", [gpus, duck["gpus"]])
system = {g["holder"]: {"held": g["gpu_held_hours"], "idle": g["idle_gpu_held_hours"]}
          for g in ca["gpu_held_system"]}
# the daemon holds all 8 GPUs: DuckDB's per-GPU sums are 8 times its hours
dsys = duck["system"]
ok = len(dsys) == 8 and all(close({"x": v}, {"x": dsys["0"]}) for v in dsys.values()) and \
    system.keys() == {"nvidia-persistenced"} and close({"x": system["nvidia-persistenced"]}, {"x": dsys["0"]})
check(ok, "system holder's hours (gpu_system_holders) apart", [system, dsys])
hosts = {"host-a": ca["rows"], "host-b": cb["rows"]}
check(hosts == alld["rows_per_host"], "rows per host from the path", [hosts, alld["rows_per_host"]])
readme = json.load(open(f"{tmp}/readme.json"))
want = {(h, w["workload"]): w["rows"] for h, c in (("host-a", ca), ("host-b", cb))
        for w in c["workloads"] if w["rows"]}
got = {(r["host"], r["workload"]): r["rows"] for r in readme}
check(got == want, "README Many hosts query: rows per host and workload", [str(got), str(want)])
sys.exit(0)
PY
