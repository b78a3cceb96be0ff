// One workload run for src/instructions.mjs: `node instr-run.mjs <sqlite|memory> <mode> <ops> [driver]`,
// 200 warm-up ops then <ops> ops, in this process (run under callgrind by the caller).
import { join } from 'node:path';
import { prepareSqlite, setupWorkload } from './workloads.mjs';

const [store, mode, n, driver] = process.argv.slice(2);
const sqlitePath = join(process.env.BENCH_DIR ?? '.', 'bench.db');
if (store === 'sqlite') prepareSqlite(sqlitePath, driver || undefined);
const w = await setupWorkload({ store, mode, sqlitePath, worker: 0, driver: driver || undefined });
const ops = 200 + Number(n);
for (let i = 0; i < ops; i++) await w.op(i);
await w.close();
