// Ledger size per operation and cost per operation against the rows already stored.
//
//   bytes   SQLite: growth of the database file per op, measured after a TRUNCATE checkpoint (so the
//           WAL is folded in and empty) around N ops; PostgreSQL: WAL bytes per op
//           (pg_wal_lsn_diff of pg_current_wal_lsn around N ops, after a CHECKPOINT) and the growth of
//           the schema's tables and indexes (pg_total_relation_size).
//   scale   ops/s of each workload on a store that already holds 1k, 100k or 1M operations, pre-filled
//           in one transaction by cloning a real row of each table under fresh pseudo-random ids.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { dropPostgres, openSqlite, preparePostgres, prepareSqlite, setupWorkload } from './workloads.mjs';

const WARMUP = 200;

async function runOps(w, from, n) {
  for (let i = from; i < from + n; i++) await w.op(i);
}

function checkpointedSize(path, driver) {
  const db = openSqlite(path, driver);
  try {
    db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
  } finally {
    db.close();
  }
  return statSync(path).size;
}

/** SQLite: file bytes per op of `mode` (the ledger's own file for the runner). */
export async function sqliteBytesPerOp(mode, ops, driver) {
  const dir = mkdtempSync(join(tmpdir(), 'retrysafe-bytes-'));
  try {
    const sqlitePath = join(dir, 'bench.db');
    prepareSqlite(sqlitePath, driver);
    const w = await setupWorkload({ store: 'sqlite', mode, sqlitePath, worker: 0, driver });
    await runOps(w, 0, WARMUP);
    const before = checkpointedSize(sqlitePath, driver);
    await runOps(w, WARMUP, ops);
    const after = checkpointedSize(sqlitePath, driver);
    await w.close();
    return (after - before) / ops;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function withClient(databaseUrl, fn) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

const schemaSize = (c, schema) =>
  c.query(`SELECT coalesce(sum(pg_total_relation_size(format('%I.%I', schemaname, tablename))), 0)::bigint AS n FROM pg_tables WHERE schemaname = $1`, [schema]).then((r) => Number(r.rows[0].n));

/** PostgreSQL: WAL bytes and table+index bytes per op of `mode`, in a fresh schema. */
export async function postgresBytesPerOp(mode, ops, databaseUrl) {
  const schema = `rs_bytes_${randomBytes(4).toString('hex')}`;
  await preparePostgres(databaseUrl, schema, mode);
  try {
    const w = await setupWorkload({ store: 'postgres', mode, databaseUrl, schema, worker: 0 });
    await runOps(w, 0, WARMUP);
    const { lsn0, size0 } = await withClient(databaseUrl, async (c) => {
      await c.query('CHECKPOINT');
      return { lsn0: (await c.query('SELECT pg_current_wal_lsn() AS l')).rows[0].l, size0: await schemaSize(c, schema) };
    });
    await runOps(w, WARMUP, ops);
    const out = await withClient(databaseUrl, async (c) => {
      const wal = Number((await c.query('SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1) AS d', [lsn0])).rows[0].d);
      return { walPerOp: wal / ops, tablePerOp: ((await schemaSize(c, schema)) - size0) / ops };
    });
    await w.close();
    return out;
  } finally {
    await dropPostgres(databaseUrl, schema);
  }
}

/**
 * The id of filled row x. A runner id ends in 32 hex digits of the intent fingerprint (`noop.orders.create:<hex>`):
 * a filled id keeps the template's prefix and gets 32 pseudo-random hex digits, so new operations' ids land
 * between filled ones and every claim is a random insert into the `id` index, as in a real ledger (filled
 * ids that all sorted before new ones made each insert an append). Other ids (the raw pattern's
 * `<tag>-<i>`) get `fill-<hash>-<x>`. The same function of x in every table.
 */
const SQLITE_HASH = (k) => `printf('%08x', ((x + ${k}) * 2654435761) % 4294967296)`;
const SQLITE_FILL_ID = (col) => `CASE WHEN lower(substr(${col}, -32)) GLOB '${'[0-9a-f]'.repeat(32)}'
  THEN substr(${col}, 1, length(${col}) - 32) || ${[0, 1, 2, 3].map((k) => SQLITE_HASH(k * 7919)).join(' || ')}
  ELSE printf('fill-%08x-%d', (x * 2654435761) % 4294967296, x) END`;
const PG_FILL_ID = (col) => `CASE WHEN right(${col}, 32) ~ '^[0-9a-f]{32}$' THEN left(${col}, -32) || md5(x::text) ELSE 'fill-' || md5(x::text) END`;

/** SQLite: clones one row of every table that has rows until each holds `rows` rows (one transaction). */
export function prefillSqlite(path, driver, rows) {
  const db = openSqlite(path, driver);
  try {
    const tables = db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '%migrations'`).all().map((t) => t.name);
    db.exec('BEGIN IMMEDIATE');
    for (const t of tables) {
      const have = db.prepare(`SELECT count(*) AS n FROM "${t}"`).get().n;
      if (have === 0 || have >= rows) continue;
      const cols = db.prepare(`PRAGMA table_info("${t}")`).all();
      const pks = cols.filter((c) => c.pk > 0);
      // Filled row x of n is created n + 1 - x ms before the template, so the fill inserts in creation order
      // and packs pages as a real history does.
      const ledgerTable = t === 'retrysafe_operations';
      const age = `(${rows - have + 1} - x)`;
      const select = cols.map((c) => {
        if (c.pk > 0 && pks.length === 1 && /^INTEGER$/i.test(c.type)) return 'NULL';
        if ((c.pk > 0 && /TEXT/i.test(c.type)) || (c.name === 'id' && pks.length === 0)) return SQLITE_FILL_ID(`one."${c.name}"`);
        if (ledgerTable && (c.name === 'created_at' || c.name === 'updated_at')) return `one."${c.name}" - ${age}`;
        return `"${c.name}"`;
      });
      const names = cols.map((c) => `"${c.name}"`);
      db.exec(`WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < ${rows - have})
        INSERT INTO "${t}" (${names.join(', ')}) SELECT ${select.join(', ')} FROM n, (SELECT * FROM "${t}" LIMIT 1) one`);
    }
    db.exec('COMMIT');
    db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
  } finally {
    db.close();
  }
}

/** PostgreSQL: the same for every table of `schema` (foreign keys hold: ids are the same function of x). */
export async function prefillPostgres(databaseUrl, schema, rows) {
  await withClient(databaseUrl, async (c) => {
    const { rows: tables } = await c.query(`SELECT tablename FROM pg_tables WHERE schemaname = $1 AND tablename NOT LIKE '%migrations' ORDER BY (tablename LIKE '%receipts') , tablename`, [schema]);
    await c.query('BEGIN');
    for (const { tablename: t } of tables) {
      const q = `"${schema}"."${t}"`;
      const have = Number((await c.query(`SELECT count(*) AS n FROM ${q}`)).rows[0].n);
      if (have === 0 || have >= rows) continue;
      const { rows: cols } = await c.query(`SELECT column_name AS name FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position`, [schema, t]);
      const { rows: pk } = await c.query(`SELECT a.attname AS name FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) WHERE i.indrelid = $1::regclass AND i.indisprimary`, [q]);
      const keys = new Set(pk.map((k) => k.name));
      const idCol = [...keys].find((k) => k !== 'seq') ?? 'id';
      const select = cols.map(({ name }) => (name === idCol ? PG_FILL_ID(`one."${name}"`) : `"${name}"`));
      await c.query(`INSERT INTO ${q} (${cols.map((col) => `"${col.name}"`).join(', ')}) SELECT ${select.join(', ')} FROM generate_series(1, ${rows - have}) x, (SELECT * FROM ${q} LIMIT 1) one`);
    }
    await c.query('COMMIT');
    for (const { tablename: t } of tables) await c.query(`VACUUM ANALYZE "${schema}"."${t}"`);
    // Write the fill out now: otherwise the server's next checkpoint writes a million rows' pages (and
    // the vacuum's) while the measured runs go, and their ops/s swing by several times (seventh round:
    // 250 to 1,812 ops/s between runs of one mode). CHECKPOINT returns when the pages are on disk.
    await c.query('CHECKPOINT');
  });
}
