// On demand (not a test): `node packages/core/bench/deferred-connection.mjs <mode> [N]` (better-sqlite3).
// A clean operation's two statements on the SQLite ledger's table, as it runs them: the claim's INSERT at
// synchronous = FULL, then the completion's guarded UPDATE without waiting for the disk, four ways:
//   switch  one connection, the completion between PRAGMA synchronous = NORMAL and = FULL (the ledger today)
//   second  a second connection to the file kept at NORMAL runs the UPDATE (no PRAGMA per operation)
//   own     one connection kept at NORMAL; the claim's commit followed by fsync of the -wal file from Node
//           (what FULL adds to NORMAL in WAL mode: a sync of the WAL after each commit)
//   normal  one connection at NORMAL, no sync at all: the floor, not durable (for comparison only)
// Under callgrind at two N, difference ÷ the difference of N
// (docs/decisions/2026-12-02-sqlite-second-connection.md):
//   for m in switch second own normal; do for n in 1000 3000; do valgrind --tool=callgrind --callgrind-out-file=/tmp/dc.$m.$n node --single-threaded packages/core/bench/deferred-connection.mjs $m $n; done; done
// System calls: strace -f -c node packages/core/bench/deferred-connection.mjs <mode> N, at two N.
import { fsyncSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const MODES = ['switch', 'second', 'own', 'normal'];
const mode = process.argv[2];
if (!MODES.includes(mode)) throw new Error(`mode: one of ${MODES.join(', ')}`);
const N = Number(process.argv[3] ?? 2000);
const Database = createRequire(import.meta.url)('better-sqlite3');

const dir = mkdtempSync(join(tmpdir(), 'retrysafe-deferred-connection-'));
const path = join(dir, 'bench.db');
const main = new Database(path);
main.exec('PRAGMA journal_mode = WAL');
main.exec(`PRAGMA synchronous = ${mode === 'switch' || mode === 'second' ? 'FULL' : 'NORMAL'}`);
// The ledger's table and open-rows index (layout 5).
main.exec(`CREATE TABLE retrysafe_operations (id TEXT NOT NULL UNIQUE, provider TEXT NOT NULL, operation TEXT NOT NULL, state TEXT NOT NULL,
  fence INTEGER NOT NULL, lease_expires_at INTEGER, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, body BLOB NOT NULL);
CREATE INDEX retrysafe_operations_open ON retrysafe_operations (state, updated_at) WHERE state <> 'succeeded' AND state <> 'rejected' AND state <> 'abandoned';`);
let relaxed = main;
if (mode === 'second') {
  relaxed = new Database(path);
  relaxed.exec('PRAGMA synchronous = NORMAL');
}
const insert = main.prepare(
  'INSERT INTO retrysafe_operations (id, provider, operation, state, fence, lease_expires_at, created_at, updated_at, body, rowid) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING',
);
const update = relaxed.prepare('UPDATE retrysafe_operations SET state = ?, fence = ?, lease_expires_at = ?, updated_at = ?, body = ? WHERE id = ? AND body = ?');
let walFd = -1;

const total = 200 + N;
const start = 1_796_000_000_000;
for (let i = 0; i < total; i++) {
  // Ids spread over the unique index as UUIDs do; bodies of a clean operation's sizes (~300 bytes).
  const id = `${((i * 2654435761) % 4294967296).toString(16).padStart(8, '0')}-op-${i}`;
  const now = start + i;
  const claimed = Buffer.alloc(300, 1);
  claimed.writeUInt32LE(i, 0);
  insert.run(id, 'sandbox', 'records.create', 'dispatched', 1, now + 30_000, now, now, claimed, BigInt(now) * 2n ** 20n);
  if (mode === 'own') {
    if (walFd < 0) walFd = openSync(`${path}-wal`, 'r');
    fsyncSync(walFd);
  }
  const done = Buffer.alloc(320, 2);
  done.writeUInt32LE(i, 0);
  if (mode === 'switch') main.exec('PRAGMA synchronous = NORMAL');
  const res = update.run('succeeded', 1, null, now + 1, done, id, claimed);
  if (mode === 'switch') main.exec('PRAGMA synchronous = FULL');
  if (res.changes !== 1) throw new Error(`operation ${i}: the UPDATE changed ${res.changes} rows`);
}
if (relaxed !== main) relaxed.close();
main.close();
rmSync(dir, { recursive: true, force: true });
