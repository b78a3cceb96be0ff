// On demand (not a test): what the SQLite ledger's INSERT pays for a rowid by each rule of layout 5
// (docs/decisions/2026-12-01-sqlite-rowid-creation-order.md), on the ledger's table and open-rows index.
// `node packages/core/bench/rowid-insert.mjs <variant> <n>` inserts n rows in one transaction into an
// in-memory database, two per millisecond. Variants:
//   none     the default rowid (max + 1): no rule, the floor
//   created  the default rowid and layout 4's created_at index
//   search   the rowid the INSERT finds itself (NEW_ROWID: one after its bucket's highest)
//   guess    a rowid bound by the caller (the claim's guess, a BigInt)
// Made to run under callgrind at two n and divide the difference:
//   for n in 5000 15000; do valgrind --tool=callgrind --callgrind-out-file=/tmp/ri.$n node --single-threaded packages/core/bench/rowid-insert.mjs search $n; done
import Database from 'better-sqlite3';

const K = 2 ** 20;
const LAST = 2 ** 43 - 1;
const TABLE = `CREATE TABLE t (id TEXT NOT NULL UNIQUE, provider TEXT NOT NULL, operation TEXT NOT NULL, state TEXT NOT NULL,
  fence INTEGER NOT NULL, lease_expires_at INTEGER, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, body BLOB NOT NULL);
  CREATE INDEX o ON t (state, updated_at) WHERE state <> 'succeeded' AND state <> 'rejected' AND state <> 'abandoned';`;
const SEARCH = `(SELECT CASE WHEN n < (b + 1) * ${K} THEN n ELSE 'bucket full' END FROM
  (SELECT coalesce((SELECT max(rowid) + 1 FROM t WHERE rowid >= b * ${K} AND rowid < (b + 1) * ${K}), b * ${K}) AS n, b
   FROM (SELECT max(0, min(CAST(? AS INTEGER), ${LAST})) AS b)))`;
const COLUMNS = 'id, provider, operation, state, fence, lease_expires_at, created_at, updated_at, body';
const bucket = (c) => Math.max(0, Math.min(Math.trunc(c), LAST));
const variants = {
  none: { sql: `INSERT INTO t (${COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?)`, rowid: () => [] },
  created: { sql: `INSERT INTO t (${COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?)`, rowid: () => [], index: 'CREATE INDEX c ON t (created_at);' },
  search: { sql: `INSERT INTO t (${COLUMNS}, rowid) VALUES (?,?,?,?,?,?,?,?,?,${SEARCH})`, rowid: (c) => [c] },
  guess: { sql: `INSERT INTO t (${COLUMNS}, rowid) VALUES (?,?,?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING`, rowid: (c, i) => [BigInt(bucket(c)) * BigInt(K) + BigInt(i & 1)] },
};
const [name = 'search', count = '100000'] = process.argv.slice(2);
const v = variants[name];
if (!v) throw new Error(`variant: one of ${Object.keys(variants).join(', ')}`);
const db = new Database(':memory:');
db.exec(TABLE + (v.index ?? ''));
const insert = db.prepare(v.sql);
const body = Buffer.alloc(480, 7);
const T = Date.UTC(2026, 11, 1);
const n = Number(count);
const start = performance.now();
db.exec('BEGIN');
for (let i = 0; i < n; i++) {
  const c = T + (i >> 1);
  insert.run(`noop.orders.create:${((i * 2654435761) % 4294967296).toString(16).padStart(8, '0')}${i}`, 'noop', 'noop.orders.create', 'dispatched', 1, c + 30000, c, c, body, ...v.rowid(c, i));
}
db.exec('COMMIT');
console.log(`${name}: ${(((performance.now() - start) * 1000) / n).toFixed(2)} µs per insert (noisy; callgrind for instructions)`);
db.close();
