// Cold start of a function on the DynamoDB ledger: in a fresh Node process, the time to import the
// runner and the ledger, to create them, and to perform the first operation (the runner's claim and
// final write against dynalite on loopback, the bench's no-op adapter as the provider). Median of N.
// What a Lambda cold start adds on top (the runtime's own init, fetching credentials, TLS to the real
// endpoint) is not here.
//
//   node src/dynamodb-cold-start.mjs [--runs=7]
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { startDynalite } from './dynamodb.mjs';

const runs = Number(/--runs=(\d+)/.exec(process.argv.join(' '))?.[1] ?? 7);
const here = (f) => fileURLToPath(new URL(f, import.meta.url));

// The handler's module, as a function would have it: imports at the top, the runner made once per process.
const handler = (endpoint, table) => `
const t0 = performance.now();
const { createRunner } = await import('@retrysafe/core');
const { createDynamoDbLedger } = await import('@retrysafe/ledger-dynamodb');
const { DynamoDBClient } = await import('@aws-sdk/client-dynamodb');
const { createNoopAdapter } = await import(${JSON.stringify(here('./noop-adapter.mjs'))});
const t1 = performance.now();
const client = new DynamoDBClient({ endpoint: ${JSON.stringify(endpoint)}, region: 'local', credentials: { accessKeyId: 'bench', secretAccessKey: 'bench' } });
const runner = createRunner({ ledger: createDynamoDbLedger({ table: ${JSON.stringify(table)}, client }) });
const adapter = createNoopAdapter({ remember: false });
const t2 = performance.now();
const res = await runner.run(adapter, 'orders.create', { params: { orderRef: 'cold-' + process.pid, amount: 1 } });
if (res.status !== 'done') throw new Error(res.status);
const t3 = performance.now();
const res2 = await runner.run(adapter, 'orders.create', { params: { orderRef: 'warm-' + process.pid, amount: 1 } });
const t4 = performance.now();
process.stdout.write(JSON.stringify({ importMs: t1 - t0, createMs: t2 - t1, firstOpMs: t3 - t2, secondOpMs: t4 - t3 }));
client.destroy();
`;

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const dynamo = await startDynalite();
try {
  const table = await dynamo.table();
  const samples = [];
  for (let i = 0; i < runs; i++) {
    // Asynchronous: dynalite answers from this process's event loop.
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--input-type=module', '-e', handler(dynamo.endpoint, table)],
      { cwd: here('.'), encoding: 'utf8' },
    );
    samples.push(JSON.parse(stdout));
  }
  const m = (k) => median(samples.map((s) => s[k])).toFixed(0);
  console.log(
    `DynamoDB ledger cold start, node ${process.version}, median of ${runs} fresh processes (dynalite on loopback):`,
  );
  console.log(
    `  import ${m('importMs')} ms, create runner + ledger ${m('createMs')} ms, first operation ${m('firstOpMs')} ms (the next one ${m('secondOpMs')} ms)`,
  );
} finally {
  await dynamo.close();
}
