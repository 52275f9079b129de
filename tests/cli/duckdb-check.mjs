// duckdb-check.mjs: runs the SQL on stdin in DuckDB (an engine no one here
// wrote) and prints the rows of its last statement as one JSON array: the
// blocks of docs/engines.md DuckDB blocks (tests/cli/docs-sql.sh cuts them out),
// which test-duckdb.sh checks against croft stats and the benches time.
// DUCKDB_THREADS=N limits DuckDB's threads (bench).  Test process.
import { DuckDBInstance } from '@duckdb/node-api';

const inst = await DuckDBInstance.create(':memory:');
const con = await inst.connect();
if (process.env.DUCKDB_THREADS)
  await con.run(`SET threads = ${Number(process.env.DUCKDB_THREADS)}`);
const num = (v) => (typeof v === 'bigint' ? Number(v) : v);

let sql = '';
for await (const chunk of process.stdin) sql += chunk;
const rows = (await con.runAndReadAll(sql)).getRowObjects();
console.log(JSON.stringify(rows.map((r) =>
  Object.fromEntries(Object.entries(r).map(([k, v]) => [k, num(v)])))));
