// Memory: the SQLite ledger and the runner across N sequential operations (default 1,000,000),
// sampling RSS every tenth. Prints one JSON line.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRunner } from '@retrysafe/core';
import { createSqliteLedger } from '@retrysafe/ledger-sqlite';
import { createNoopAdapter } from './noop-adapter.mjs';

const total = Number(process.argv[2] ?? 1_000_000);
// Memory does not depend on fsync; NORMAL (still crash-safe in WAL) keeps a 1M run to minutes.
const SYNC = (process.env.BENCH_RSS_SQLITE_SYNC ?? 'NORMAL').toUpperCase();
const dir = mkdtempSync(join(tmpdir(), 'retrysafe-rss-'));
const ledger = createSqliteLedger({ path: join(dir, 'ledger.db'), synchronous: SYNC });
const runner = createRunner({ ledger, owner: `bench-rss:${process.pid}` });
const adapter = createNoopAdapter({ remember: false });
const mb = () => Math.round((process.memoryUsage().rss / 1048576) * 10) / 10;
const samples = [];
const t0 = performance.now();
const step = Math.max(1, Math.floor(total / 10));
for (let i = 0; i < total; i++) {
  const res = await runner.run(adapter, 'orders.create', { params: { orderRef: `rss-${i}`, amount: 1 } });
  if (res.status !== 'done') throw new Error(`runner returned ${res.status} at ${i}`);
  if ((i + 1) % step === 0) {
    samples.push({ ops: i + 1, rssMb: mb() });
    process.stderr.write(`rss: ${i + 1} ops, ${mb()} MB, ${Math.round(((i + 1) / (performance.now() - t0)) * 1000)} ops/s\n`);
  }
}
const seconds = (performance.now() - t0) / 1000;
await ledger.close();
rmSync(dir, { recursive: true, force: true });
console.log(JSON.stringify({ ops: total, synchronous: SYNC, seconds: Math.round(seconds), opsPerSec: Math.round(total / seconds), samples, finalRssMb: samples.at(-1)?.rssMb, maxRssMb: Math.max(...samples.map((s) => s.rssMb)) }));
