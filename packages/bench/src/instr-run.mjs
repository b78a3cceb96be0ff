// One workload run for src/instructions.mjs: `node instr-run.mjs <sqlite|memory|postgres> <mode> <ops> [driver]`,
// 200 warm-up ops then <ops> ops, in this process (run under callgrind by the caller). postgres: on
// DATABASE_URL, in a fresh schema of its own, dropped at the end.
import { join } from 'node:path';
import { dropPostgres, preparePostgres, prepareSqlite, setupWorkload } from './workloads.mjs';

const [store, mode, n, driver] = process.argv.slice(2);
const sqlitePath = join(process.env.BENCH_DIR ?? '.', 'bench.db');
const databaseUrl = process.env.DATABASE_URL;
const schema = `instr_${process.pid}_${Date.now()}`;
if (store === 'sqlite') prepareSqlite(sqlitePath, driver || undefined);
if (store === 'postgres') {
  if (!databaseUrl) throw new Error('store postgres needs DATABASE_URL');
  await preparePostgres(databaseUrl, schema, mode);
}
try {
  const w = await setupWorkload({ store, mode, sqlitePath, databaseUrl, schema, worker: 0, driver: driver || undefined });
  const ops = 200 + Number(n);
  for (let i = 0; i < ops; i++) await w.op(i);
  await w.close();
} finally {
  if (store === 'postgres') await dropPostgres(databaseUrl, schema);
}
