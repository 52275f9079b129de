// duckdb-check.mjs GLOB POLL_MS GAP_MS: the figures croft stats gives, computed
// by DuckDB (an engine no one here wrote) straight from the .jsonl.zst files:
// rows per workload, processes and CPU-hours per framework (croft's process
// rule: a tgid with the same exe and comm and no gap over GAP_MS; a first row
// stands for POLL_MS; a process counts under the framework its last row
// names), GPU-held and idle GPU-held hours per GPU index of the workloads
// and of the system holder the generator writes (nvidia-persistenced),
// and rows per host taken from the path (dir/HOST/file).
// Prints one JSON object.  With --sql: runs the query on stdin instead.  DUCKDB_THREADS=N limits DuckDB's threads (bench).
import { DuckDBInstance } from '@duckdb/node-api';

const [glob, pollMs, gapMs] = process.argv.slice(2);
const inst = await DuckDBInstance.create(':memory:');
const con = await inst.connect();
if (process.env.DUCKDB_THREADS)
  await con.run(`SET threads = ${Number(process.env.DUCKDB_THREADS)}`);
const q = async (sql) => (await con.runAndReadAll(sql)).getRowObjects();
const num = (v) => (typeof v === 'bigint' ? Number(v) : v);

// duckdb-check.mjs --sql: run the query on stdin (the README's), print its rows.
if (glob === '--sql') {
  let sql = '';
  for await (const chunk of process.stdin) sql += chunk;
  const rows = (await q(sql)).map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, num(v)])));
  console.log(JSON.stringify(rows));
  process.exit(0);
}

await con.run(`
CREATE TABLE r AS
SELECT unix_ms, tgid, process.exe AS exe, process.comm AS comm,
       process.framework AS fw, workload, usage.cpu_cores AS cpu, ioctl_count, gpus,
       regexp_extract(filename, '/([^/]+)/[^/]+$', 1) AS host
FROM read_json('${glob}', format = 'newline_delimited', filename = true,
  columns = {unix_ms: 'BIGINT', tgid: 'BIGINT', workload: 'VARCHAR',
             process: 'STRUCT(exe VARCHAR, comm VARCHAR, framework VARCHAR)',
             ioctl_count: 'BIGINT', gpus: 'BIGINT[]',
             usage: 'STRUCT(cpu_cores DOUBLE)'})`);
await con.run(`
CREATE TABLE p AS
WITH o AS (
  SELECT *, unix_ms - lag(unix_ms) OVER w AS gap,
         lag(exe) OVER w AS pexe, lag(comm) OVER w AS pcomm
  FROM r WINDOW w AS (PARTITION BY tgid ORDER BY unix_ms)
), n AS (
  SELECT *, CASE WHEN gap IS NULL OR gap > ${gapMs} OR exe IS DISTINCT FROM pexe
                   OR comm IS DISTINCT FROM pcomm THEN 1 ELSE 0 END AS new_proc
  FROM o
)
SELECT *, sum(new_proc) OVER (PARTITION BY tgid ORDER BY unix_ms
                              ROWS UNBOUNDED PRECEDING) AS pno,
       CASE WHEN new_proc = 1 THEN ${pollMs} ELSE gap END AS weight_ms
FROM n`);

const out = { rows_per_workload: {}, frameworks: {}, rows_per_host: {}, gpus: {}, system: {} };
for (const row of await q(`SELECT workload, count(*) AS n FROM r GROUP BY workload`))
  out.rows_per_workload[row.workload] = num(row.n);
for (const row of await q(`
  WITH procs AS (
    SELECT tgid, pno, arg_max(fw, unix_ms) FILTER (WHERE fw IS NOT NULL AND fw <> '') AS fw,
           sum(coalesce(cpu, 0) * weight_ms) AS cpu_ms
    FROM p GROUP BY tgid, pno)
  SELECT fw, count(*) AS processes, sum(cpu_ms) / 3600000.0 AS cpu_hours
  FROM procs GROUP BY fw`))
  out.frameworks[row.fw ?? '(none)'] = { processes: num(row.processes), cpu_hours: num(row.cpu_hours) };
// a gpu-held row stands for its time on each GPU it names; idle: ioctl_count 0
for (const row of await q(`
  WITH h AS (
    SELECT unnest(gpus) AS gpu, weight_ms, ioctl_count = 0 AS idle,
           regexp_extract(exe, '[^/]*$') = 'nvidia-persistenced' AS system
    FROM p WHERE workload = 'gpu-held')
  SELECT gpu, system, sum(weight_ms) / 3600000.0 AS held_h,
         sum(CASE WHEN idle THEN weight_ms ELSE 0 END) / 3600000.0 AS idle_h
  FROM h GROUP BY gpu, system`))
  out[row.system ? 'system' : 'gpus'][num(row.gpu)] = { held: num(row.held_h), idle: num(row.idle_h) };
for (const row of await q(`SELECT host, count(*) AS n FROM r GROUP BY host`))
  out.rows_per_host[row.host] = num(row.n);
console.log(JSON.stringify(out));
