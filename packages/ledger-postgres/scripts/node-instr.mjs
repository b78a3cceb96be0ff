// N clean operations in one process and nothing else, for callgrind's instruction count of the Node side
// (issue 23, seventh round). Run it at two lengths and divide the difference by the difference of the
// lengths: start-up, migration and module loading cancel.
//   valgrind --tool=callgrind node --single-threaded packages/ledger-postgres/scripts/node-instr.mjs <mode> <N>
// modes: runner (this build; the ledger opens its own connections, as a user's `connectionString` does),
// before (the same with BENCH_BASELINE=<dir with core-dist/ and pg-dist/>, as the bench's `before`),
// powertools, raw (the bench's workloads), memory (the runner on the memory ledger: its own code alone).
// The ledger's connections commit with synchronous_commit off (the loop waits for no disk), and its leases
// are judged on the caller's clock (under valgrind the runner's `now` is seconds old when it claims).
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createNoopAdapter } from '../../bench/src/noop-adapter.mjs';
import { dropPostgres, preparePostgres, setupWorkload } from '../../bench/src/workloads.mjs';

const [mode = 'runner', count = '2000'] = process.argv.slice(2);
const n = Number(count);
const url = process.env.DATABASE_URL;
if (!url && mode !== 'memory') throw new Error('DATABASE_URL is not set');
const asyncUrl = () => {
  const u = new URL(url);
  u.searchParams.set('options', '-c synchronous_commit=off');
  return u.toString();
};
const schema = `rs_instr_${randomBytes(4).toString('hex')}`;
let op;
let close;
if (mode === 'runner' || mode === 'before') {
  const base = process.env.BENCH_BASELINE;
  if (mode === 'before' && !base) throw new Error('mode before needs BENCH_BASELINE');
  const { createRunner } = await import(mode === 'before' ? `${base}/core-dist/index.bundle.js` : '@retrysafe/core');
  const { createPostgresLedger, migrate } = await import(mode === 'before' ? `${base}/pg-dist/index.js` : '../dist/index.js');
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await migrate(admin, schema);
  await admin.end();
  const ledger = createPostgresLedger({ connectionString: asyncUrl(), schema, poolSize: 2, migrate: false, leaseClock: 'caller' });
  const runner = createRunner({ ledger, owner: 'instr:1', policy: { leaseMs: 30_000 } });
  const adapter = createNoopAdapter({ remember: false });
  const tag = randomBytes(3).toString('hex');
  op = async (i) => {
    const r = await runner.run(adapter, 'orders.create', { params: { orderRef: `${tag}-${i}`, amount: 1 } });
    if (r.status !== 'done') throw new Error(`runner returned ${r.status}`);
  };
  close = () => ledger.close();
} else if (mode === 'memory') {
  const w = await setupWorkload({ store: 'memory', mode: 'runner', worker: 0 });
  op = (i) => w.op(i);
  close = () => w.close();
} else {
  await preparePostgres(url, schema, 'runner');
  const w = await setupWorkload({ store: 'postgres', mode, databaseUrl: asyncUrl(), schema, worker: 0 });
  op = (i) => w.op(i);
  close = () => w.close();
}
for (let i = 0; i < n; i++) await op(i);
await close();
if (mode !== 'memory') await dropPostgres(url, schema);
