// Bytes per operation. SQLite: growth of the database file per op, measured after a TRUNCATE checkpoint
// (so the WAL is folded in and empty) around N ops. PostgreSQL: WAL bytes per op (pg_wal_lsn_diff of
// pg_current_wal_lsn around N ops, after a CHECKPOINT) and the growth of the schema's tables and indexes
// (pg_total_relation_size).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dropPostgres, openSqlite, preparePostgres, prepareSqlite, setupWorkload, withClient } from './workloads.mjs';

const WARMUP = 200;

async function runOps(w, from, n) {
  for (let i = from; i < from + n; i++) await w.op(i);
}

function checkpointedSize(path) {
  const db = openSqlite(path);
  try {
    db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
  } finally {
    db.close();
  }
  return statSync(path).size;
}

/** SQLite: file bytes per op of `mode` (the ledger's own file for the runner). */
export async function sqliteBytesPerOp(mode, ops) {
  const dir = mkdtempSync(join(tmpdir(), 'retrysafe-bytes-'));
  try {
    const sqlitePath = join(dir, 'bench.db');
    prepareSqlite(sqlitePath);
    const w = await setupWorkload({ store: 'sqlite', mode, sqlitePath, worker: 0 });
    await runOps(w, 0, WARMUP);
    const before = checkpointedSize(sqlitePath);
    await runOps(w, WARMUP, ops);
    const after = checkpointedSize(sqlitePath);
    await w.close();
    return (after - before) / ops;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const schemaSize = (c, schema) =>
  c
    .query(
      `SELECT coalesce(sum(pg_total_relation_size(format('%I.%I', schemaname, tablename))), 0)::bigint AS n FROM pg_tables WHERE schemaname = $1`,
      [schema],
    )
    .then((r) => Number(r.rows[0].n));

/** PostgreSQL: WAL bytes and table+index bytes per op of `mode`, in a fresh schema. */
export async function postgresBytesPerOp(mode, ops, databaseUrl) {
  const schema = `rs_bytes_${randomBytes(4).toString('hex')}`;
  await preparePostgres(databaseUrl, schema, mode);
  try {
    const w = await setupWorkload({ store: 'postgres', mode, databaseUrl, schema, worker: 0 });
    await runOps(w, 0, WARMUP);
    const { lsn0, size0 } = await withClient(databaseUrl, async (c) => {
      await c.query('CHECKPOINT');
      return {
        lsn0: (await c.query('SELECT pg_current_wal_lsn() AS l')).rows[0].l,
        size0: await schemaSize(c, schema),
      };
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
