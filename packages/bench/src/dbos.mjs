// The DBOS part of `pnpm bench`: workflows/s of one DBOS application on one PostgreSQL, each workflow
// performing one create as one DBOS step, with and without retrysafe around it (@retrysafe/dbos, the
// ledger on the same PostgreSQL as DBOS's system database). Both against the same in-process no-op
// provider, so the difference is what retrysafe adds: its two ledger writes and the runner's work.
//
//   node src/dbos.mjs [--seconds=3] [--reps=3] [--concurrency=16]    (needs DATABASE_URL)
//
// Prints one JSON line last: { plain, retrysafe, ratio, runs }.
import { randomBytes } from 'node:crypto';
import { DBOS } from '@dbos-inc/dbos-sdk';
import { createDbosRetrysafe } from '@retrysafe/dbos';
import { createNoopAdapter } from './noop-adapter.mjs';
import { dropPostgres } from './workloads.mjs';

const args = Object.fromEntries(
  process.argv.slice(2).map((a) => {
    const [k, v] = a.replace(/^--/, '').split('=');
    return [k, v ?? 'true'];
  }),
);
const seconds = Number(args.seconds ?? 3);
const reps = Number(args.reps ?? 3);
const concurrency = Number(args.concurrency ?? 16);
const url = process.env.DATABASE_URL;
if (!url) {
  console.error('DATABASE_URL is not set: the DBOS bench needs PostgreSQL (`source .ci/start-postgres.sh`)');
  process.exit(2);
}
if (!['127.0.0.1', 'localhost', '::1', '[::1]'].includes(new URL(url).hostname)) {
  console.error('DATABASE_URL must point at loopback for the benchmarks');
  process.exit(2);
}

const tag = randomBytes(4).toString('hex');
const dbosSchema = `dbos_bench_${tag}`;
const ledgerSchema = `rs_bench_${tag}`;
const adapter = createNoopAdapter();
const rs = createDbosRetrysafe({ databaseUrl: url, ledgerSchema });

// Without retrysafe: the provider call as a plain DBOS step (DBOS's checkpoint is the only record).
const plain = DBOS.registerWorkflow(
  async (orderRef) =>
    DBOS.runStep(async () => (await adapter.doExecute('orders.create', { orderRef, amount: 1 }, {})).providerRef, {
      name: 'create',
    }),
  { name: 'plain' },
);
// With retrysafe: the same call through @retrysafe/dbos (one DBOS step, retries off, ledger writes inside).
const wrapped = DBOS.registerWorkflow(
  async (orderRef) => {
    const r = await rs.run(adapter, 'orders.create', { params: { orderRef, amount: 1 } });
    if (r.status !== 'done') throw new Error(`bench: expected done, got ${r.status}`);
    return r.providerRef;
  },
  { name: 'wrapped' },
);

DBOS.setConfig({
  name: `bench-${tag}`,
  ...rs.dbosConfig(),
  systemDatabaseSchemaName: dbosSchema,
  systemDatabasePoolSize: 20,
  logLevel: 'error',
});
await DBOS.launch();

let n = 0;
/** Workflows completed per second with `concurrency` in flight, for `ms`. */
async function measure(wf, ms) {
  const until = Date.now() + ms;
  const startedAt = Date.now();
  let done = 0;
  const lane = async () => {
    while (Date.now() < until) {
      const h = await DBOS.startWorkflow(wf, { workflowID: `${tag}-${++n}` })(`o-${tag}-${n}`);
      await h.getResult();
      done++;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
  return done / ((Date.now() - startedAt) / 1000);
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const runs = { plain: [], retrysafe: [] };
try {
  await measure(plain, 500); // warm-up: connections, prepared plans, JIT
  await measure(wrapped, 500);
  for (let r = 0; r < reps; r++) {
    // Interleaved, so drift hits both alike.
    runs.plain.push(await measure(plain, seconds * 1000));
    runs.retrysafe.push(await measure(wrapped, seconds * 1000));
  }
} finally {
  await DBOS.shutdown();
  await rs.close();
  await dropPostgres(url, dbosSchema, ledgerSchema);
}
const p = median(runs.plain);
const w = median(runs.retrysafe);
console.log(JSON.stringify({ seconds, reps, concurrency, plain: p, retrysafe: w, ratio: w / p, runs }));
