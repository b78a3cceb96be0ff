// On demand (not a test): `node packages/core/bench/runner-overhead.mjs [N]` after building core and sandbox.
// Clean runs (claim → dispatched → succeeded → receipt) against the in-process sandbox, per ledger,
// next to the raw SQLite pattern of TOOLCHAIN.md (INSERT claim, then UPDATE complete: 2 transactions)
// measured in the same run. Absolute numbers vary by machine; read the ratios. Median of 3.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { createMemoryLedger, createRunner } from '@retrysafe/core';
import { createSqliteLedger } from '@retrysafe/ledger-sqlite';
import { createSandboxAdapter, createSandboxProvider } from '@retrysafe/sandbox';

const N = Number(process.argv[2] ?? 2000);
const dir = mkdtempSync(join(tmpdir(), 'retrysafe-bench-'));
let seq = 0;

async function viaRunner(makeLedger) {
  const provider = createSandboxProvider({
    replays: true,
    retentionMs: 86_400_000,
    parameterMatching: 'mismatch-error',
    concurrency: 'rejects-in-progress',
    lookup: 'get-by-key',
  });
  const adapter = createSandboxAdapter({ provider });
  const ledger = makeLedger();
  const runner = createRunner({ ledger });
  const run = ++seq;
  const t = performance.now();
  for (let i = 0; i < N; i++) await runner.run(adapter, 'records.create', { params: { ref: `b${run}-${i}` } });
  const ops = N / ((performance.now() - t) / 1000);
  await ledger.close();
  return ops;
}

function rawSqlite(sync) {
  const db = new DatabaseSync(join(dir, `raw-${++seq}.db`));
  db.exec('PRAGMA journal_mode = WAL');
  db.exec(`PRAGMA synchronous = ${sync}`);
  db.exec('CREATE TABLE t (id TEXT PRIMARY KEY, state TEXT, v TEXT)');
  const ins = db.prepare('INSERT INTO t VALUES (?, ?, ?)');
  const up = db.prepare('UPDATE t SET state = ? WHERE id = ?');
  const t = performance.now();
  for (let i = 0; i < N; i++) {
    ins.run(`k${i}`, 'claimed', '{}');
    up.run('done', `k${i}`);
  }
  const ops = N / ((performance.now() - t) / 1000);
  db.close();
  return ops;
}

const cases = {
  'runner + memory ledger': () => viaRunner(() => createMemoryLedger()),
  'runner + SQLite FULL': () => viaRunner(() => createSqliteLedger({ path: join(dir, `f${++seq}.db`) })),
  'runner + SQLite NORMAL': () =>
    viaRunner(() => createSqliteLedger({ path: join(dir, `n${++seq}.db`), synchronous: 'NORMAL' })),
  'raw SQLite FULL': async () => rawSqlite('FULL'),
  'raw SQLite NORMAL': async () => rawSqlite('NORMAL'),
};
const results = {};
for (let rep = 0; rep < 3; rep++) for (const [name, f] of Object.entries(cases)) (results[name] ??= []).push(await f());
const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
for (const [name, v] of Object.entries(results)) console.log(`${name.padEnd(24)} ${Math.round(median(v))} ops/s`);
console.log(
  `runner/raw, FULL:   ${(median(results['runner + SQLite FULL']) / median(results['raw SQLite FULL'])).toFixed(2)}`,
);
console.log(
  `runner/raw, NORMAL: ${(median(results['runner + SQLite NORMAL']) / median(results['raw SQLite NORMAL'])).toFixed(2)}`,
);
rmSync(dir, { recursive: true, force: true });
