// On demand (not a test): how long the SQLite ledger's conversion to layout 5 takes at open
// (docs/decisions/2026-12-01-sqlite-rowid-creation-order.md), and what a listing and a prune cost after it.
//   node packages/core/bench/layout5-migration.mjs <core bundle of a layout-4 build> <this build's bundle> <file> <rows>
// e.g. the bundle of 3583d5c (layout 4) and packages/core/dist/index.bundle.js, 1000000 rows. The old
// build writes one operation; SQL copies it to `rows` rows created up to 100 s earlier (out of
// insertion order, one ms after their update); this build then opens the file.
import { pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';

const [oldBundle, newBundle, path, count = '1000000'] = process.argv.slice(2);
if (!oldBundle || !newBundle || !path) throw new Error('usage: layout5-migration.mjs <old core bundle> <new core bundle> <file> [rows]');
const rows = Number(count);
const old = await import(pathToFileURL(oldBundle).href);
const seed = old.createSqliteLedger({ path, synchronous: 'NORMAL' });
const T = Date.now();
const id = 'noop.orders.create:0123456789abcdef0123456789abcdef';
const c = await seed.claim({ businessOperationId: id, provider: 'noop', operation: 'noop.orders.create', intentFingerprint: 'sha256:x', paramsFingerprint: 'sha256:y', params: { a: 1 }, providerKey: 'k', owner: 'o', leaseMs: 1000, now: T, dispatch: true });
await seed.setState({ businessOperationId: id, fence: c.record.fence }, { state: 'succeeded', now: T + 1 });
await seed.close();
const db = new Database(path);
db.exec(`WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < ${rows - 1})
  INSERT INTO retrysafe_operations (id, provider, operation, state, fence, lease_expires_at, created_at, updated_at, body)
  SELECT 'fill-' || x, provider, operation, state, fence, lease_expires_at, created_at - (x * 7919 % 100000), created_at - (x * 7919 % 100000) + 1, body
  FROM n, (SELECT * FROM retrysafe_operations LIMIT 1)`);
const layout = db.prepare('PRAGMA user_version').get().user_version;
db.close();
const neu = await import(pathToFileURL(newBundle).href);
const t0 = performance.now();
const ledger = neu.createSqliteLedger({ path });
console.log(`${rows.toLocaleString('en-US')} rows: layout ${layout} → 5 at open in ${((performance.now() - t0) / 1000).toFixed(2)} s`);
const t1 = performance.now();
await ledger.list({ newestFirst: true, limit: 100 });
console.log(`list({ newestFirst, limit: 100 }): ${(performance.now() - t1).toFixed(1)} ms`);
const t2 = performance.now();
const dry = await ledger.prune({ before: T - 50_000, dryRun: true });
console.log(`prune dry run of the older half: ${dry.pruned.toLocaleString('en-US')} rows in ${(performance.now() - t2).toFixed(0)} ms`);
await ledger.close();
