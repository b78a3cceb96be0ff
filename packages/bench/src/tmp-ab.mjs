// usage: node <tree>/packages/bench/src/tmp-ab.mjs <n> <ledger: memory|sqlite>
import { createRunner, createMemoryLedger } from '@retrysafe/core';
import { createSqliteLedger } from '@retrysafe/ledger-sqlite';
import { createNoopAdapter } from './noop-adapter.mjs';
import { mkdtempSync } from 'node:fs'; import { tmpdir } from 'node:os'; import { join } from 'node:path';
const n = Number(process.argv[2] ?? 20000); const kind = process.argv[3] ?? 'memory';
const ledger = kind === 'memory' ? createMemoryLedger() : createSqliteLedger({ path: join(mkdtempSync(join(tmpdir(), 'ab-')), 'l.db'), synchronous: 'NORMAL' });
const adapter = createNoopAdapter();
const runner = createRunner({ ledger, owner: 'ab', policy: { leaseMs: 30000 } });
const run = async (tag, k) => { for (let i = 0; i < k; i++) { const r = await runner.run(adapter, 'orders.create', { params: { orderRef: `${tag}-${i}`, amount: 1 } }); if (r.status !== 'done') throw new Error(r.status); } };
await run("warm", Number(process.env.WARM ?? 3000));
const c0 = process.cpuUsage(); const t0 = performance.now();
await run('m', n);
const c = process.cpuUsage(c0); const t = performance.now() - t0;
console.log(JSON.stringify({ kind, cpuUsPerOp: Math.round((c.user + c.system) / n), wallUsPerOp: Math.round((t * 1000) / n) }));
