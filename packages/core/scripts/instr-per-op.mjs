// N clean operations through runner.run with the bench's no-op adapter, for instruction counts under
// valgrind (issue 23): run it with N=200 and N=1200 and take (I1200 - I200) / 1000 to cancel start-up.
//   valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.%p node packages/core/scripts/instr-per-op.mjs memory 200
// usage: node instr-per-op.mjs <memory|sqlite> <N>   (RETRYSAFE_CORE=<path of a core build's entry> to measure another build)
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const { createMemoryLedger, createRunner, createSqliteLedger } = await import(process.env.RETRYSAFE_CORE ? pathToFileURL(resolve(process.env.RETRYSAFE_CORE)).href : '@retrysafe/core');
import { createNoopAdapter } from '../../bench/src/noop-adapter.mjs';

const [store = 'memory', nText = '200'] = process.argv.slice(2);
const n = Number(nText);
const dir = mkdtempSync(join(tmpdir(), 'instr-per-op-'));
const ledger = store === 'sqlite' ? createSqliteLedger({ path: join(dir, 'ledger.db') }) : createMemoryLedger();
const adapter = createNoopAdapter({ remember: false });
const runner = createRunner({ ledger, owner: 'instr:1', policy: { leaseMs: 30_000 } });
for (let i = 0; i < n; i++) {
  const res = await runner.run(adapter, 'orders.create', { params: { orderRef: `o-${i}`, amount: 1 } });
  if (res.status !== 'done') throw new Error(`runner returned ${res.status}`);
}
await ledger.close?.();
rmSync(dir, { recursive: true, force: true });
