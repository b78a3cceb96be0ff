// `--only=wal-floor`: how few WAL bytes a clean operation can cost on PostgreSQL while the ledger keeps
// what it keeps, whatever the layout. Issue 23 asks for ≤ 800 WAL bytes per clean operation; the ledger
// writes ~2.1 kB (`--only=bytes`). This part stores the same content in six layouts, down to ones no
// ledger could run on, and measures each the way `bytes` does (WAL position around N operations after a
// CHECKPOINT, one process, sequential):
//
//   compact      the SQLite ledger's layout on PostgreSQL: the searchable fields in columns, everything
//                else in one body: the record's and receipts' JSON exactly as SQLite stores them, with the
//                indexes listing, retention and recovery
//                need at 10M rows (created_at; the open operations, partial)
//   pk-only      the same rows with the primary key alone (no listing, no recovery scan: not a ledger
//                anyone could run at 10M rows; the floor below the indexes)
//   body-only    the id and the body, nothing else: the content alone under its content-derived key
//
// and three layouts in which the completion writes only what it adds. PostgreSQL logs an update whose new
// tuple stays on the old one's page as the bytes between the longest common prefix and suffix of the two
// tuples (heapam.c, log_heap_update), so a row whose claim part comes first and never changes, with the
// completion's part in a last column, logs only that part. These layouts store the claim's body as it is
// and, as the completion's part, as many of the finished body's bytes as the body grew (316 − 210 = 106
// B): no encoding of a record could add less.
//
//   split-body-only  the id, the claim's body and the completion's part: the content alone, written once
//   split-brin       the split row with its searchable fields (unchanged ones first), listed by time through
//                    a BRIN index (no entry per row; it never stops an update from being HOT), and no index of
//                    open operations: recovery would read the whole table
//   split-brin-open  the same with the partial index of open operations that recovery needs at 10M rows (its
//                    predicate reads state, which the completion changes, so that update is not HOT and
//                    enters the primary key again: the price of finding open operations by index)
//
// The rows are a real clean operation's: the SQLite ledger writes one (the claim, born `dispatched`, then
// `succeeded` with its receipt) and each layout stores those exact column values and body bytes, under a
// fresh id of the same length per operation (ids derived from content are random, so every claim is a
// random insert into the primary key, as in a real ledger). With pg_walinspect (PostgreSQL ≥ 15, created
// if this role may), the bytes are split by record type.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { openSqlite } from './workloads.mjs';
import { createNoopAdapter } from './noop-adapter.mjs';

const WARMUP = 200;
const OPEN = `state NOT IN ('succeeded', 'rejected', 'abandoned')`;
const COLUMNS = `id text PRIMARY KEY, provider text NOT NULL, operation text NOT NULL, state text NOT NULL, fence bigint NOT NULL,
  lease_expires_at bigint, created_at bigint NOT NULL, updated_at bigint NOT NULL, body bytea NOT NULL`;

const ROW_CLAIM = (t) => `INSERT INTO ${t} VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`;
const ROW_DONE = (t) => `UPDATE ${t} SET state = $2, lease_expires_at = $3, updated_at = $4, body = $5 WHERE id = $1 AND fence = $6`;
const rowClaim = (id, c) => [id, c.provider, c.operation, c.state, c.fence, c.lease_expires_at, c.created_at, c.updated_at, c.body];
const rowDone = (id, c, d) => [id, d.state, d.lease_expires_at, d.updated_at, d.body, c.fence];

// The split rows: the columns a completion leaves alone first (they fall in the logged update's common
// prefix), then the ones it changes, the completion's part last.
const SPLIT = `id text PRIMARY KEY, provider text NOT NULL, operation text NOT NULL, created_at bigint NOT NULL, fence bigint NOT NULL,
  head bytea NOT NULL, state text NOT NULL, lease_expires_at bigint, updated_at bigint NOT NULL, tail bytea`;
const SPLIT_CLAIM = (t) => `INSERT INTO ${t} VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`;
const SPLIT_DONE = (t) => `UPDATE ${t} SET state = $2, lease_expires_at = $3, updated_at = $4, tail = $5 WHERE id = $1 AND fence = $6`;
const splitClaim = (id, c) => [id, c.provider, c.operation, c.created_at, c.fence, c.body, c.state, c.lease_expires_at, c.updated_at];
const splitDone = (id, c, d) => [id, d.state, d.lease_expires_at, d.updated_at, completionPart(c, d), c.fence];
/** The completion's part of a split row: the last (finished body − claimed body) bytes of the finished body. */
export const completionPart = (c, d) => d.body.subarray(d.body.length - Math.max(0, d.body.length - c.body.length));

/** Each layout: its tables and indexes, and its two statements with their values (id, the claimed row `c`, the finished row `d`). */
export const LAYOUTS = {
  compact: {
    ddl: (t) => [`CREATE TABLE ${t} (${COLUMNS})`, `CREATE INDEX ON ${t} (created_at)`, `CREATE INDEX ON ${t} (state, created_at) WHERE ${OPEN}`],
    claim: (t) => ROW_CLAIM(t),
    claimValues: rowClaim,
    done: (t) => ROW_DONE(t),
    doneValues: rowDone,
  },
  'pk-only': {
    ddl: (t) => [`CREATE TABLE ${t} (${COLUMNS})`],
    claim: (t) => ROW_CLAIM(t),
    claimValues: rowClaim,
    done: (t) => ROW_DONE(t),
    doneValues: rowDone,
  },
  'body-only': {
    ddl: (t) => [`CREATE TABLE ${t} (id text PRIMARY KEY, body bytea NOT NULL)`],
    claim: (t) => `INSERT INTO ${t} VALUES ($1, $2)`,
    claimValues: (id, c) => [id, c.body],
    done: (t) => `UPDATE ${t} SET body = $2 WHERE id = $1`,
    doneValues: (id, _c, d) => [id, d.body],
  },
  'split-body-only': {
    split: true,
    ddl: (t) => [`CREATE TABLE ${t} (id text PRIMARY KEY, head bytea NOT NULL, tail bytea)`],
    claim: (t) => `INSERT INTO ${t} VALUES ($1, $2)`,
    claimValues: (id, c) => [id, c.body],
    done: (t) => `UPDATE ${t} SET tail = $2 WHERE id = $1`,
    doneValues: (id, c, d) => [id, completionPart(c, d)],
  },
  'split-brin': {
    split: true,
    ddl: (t) => [`CREATE TABLE ${t} (${SPLIT})`, `CREATE INDEX ON ${t} USING brin (created_at)`],
    claim: SPLIT_CLAIM,
    claimValues: splitClaim,
    done: SPLIT_DONE,
    doneValues: splitDone,
  },
  'split-brin-open': {
    split: true,
    ddl: (t) => [`CREATE TABLE ${t} (${SPLIT})`, `CREATE INDEX ON ${t} USING brin (created_at)`, `CREATE INDEX ON ${t} (state, created_at) WHERE ${OPEN}`],
    claim: SPLIT_CLAIM,
    claimValues: splitClaim,
    done: SPLIT_DONE,
    doneValues: splitDone,
  },
};

/** One clean operation on the SQLite ledger: its row as the claim left it and as the completion did. */
export async function sampleCleanOperation() {
  const { createRunner } = await import('@retrysafe/core');
  const { createSqliteLedger } = await import('@retrysafe/ledger-sqlite');
  const dir = mkdtempSync(join(tmpdir(), 'retrysafe-walfloor-'));
  const path = join(dir, 'ledger.db');
  const ROW = `SELECT id, provider, operation, state, fence, lease_expires_at, created_at, updated_at, CAST(record || char(10) || coalesce(receipts, '') AS BLOB) AS body FROM retrysafe_operations`;
  const read = () => {
    const db = openSqlite(path);
    try {
      const r = db.prepare(ROW).get();
      return { ...r, body: Buffer.from(r.body) };
    } finally {
      db.close();
    }
  };
  const ledger = createSqliteLedger({ path });
  try {
    const inner = createNoopAdapter();
    let claimed;
    // The claim is committed before the provider is called: read it from there.
    const adapter = { ...inner, doExecute: async (...a) => ((claimed = read()), inner.doExecute(...a)) };
    const runner = createRunner({ ledger, owner: 'bench:wal-floor', policy: { leaseMs: 30_000 } });
    const res = await runner.run(adapter, 'orders.create', { params: { orderRef: 'w0-0', amount: 1 } });
    if (res.status !== 'done' || !claimed) throw new Error(`the sample operation did not complete (${res.status})`);
    await ledger.close();
    return { claimed, done: read() };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** WAL bytes per clean operation of `layout`, with the record types that make them up (null without pg_walinspect). */
export async function walFloor(databaseUrl, layoutName, sample, ops) {
  const layout = LAYOUTS[layoutName];
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const schema = `rs_walfloor_${randomBytes(4).toString('hex')}`;
  const t = `"${schema}".ops`;
  try {
    await client.query(`CREATE SCHEMA "${schema}"`);
    for (const sql of layout.ddl(t)) await client.query(sql);
    const { claimed: c, done: d } = sample;
    const prefix = c.id.slice(0, c.id.length - 32);
    const one = async () => {
      const id = prefix + randomBytes(16).toString('hex');
      await client.query({ name: `${schema}-claim`, text: layout.claim(t), values: layout.claimValues(id, c) });
      const r = await client.query({ name: `${schema}-done`, text: layout.done(t), values: layout.doneValues(id, c, d) });
      if (r.rowCount !== 1) throw new Error('the completion matched no row');
    };
    for (let i = 0; i < WARMUP; i++) await one();
    await client.query('CHECKPOINT');
    const lsn0 = (await client.query('SELECT pg_current_wal_lsn() AS l')).rows[0].l;
    for (let i = 0; i < ops; i++) await one();
    const lsn1 = (await client.query('SELECT pg_current_wal_lsn() AS l')).rows[0].l;
    const wal = Number((await client.query('SELECT pg_wal_lsn_diff($1, $2) AS d', [lsn1, lsn0])).rows[0].d);
    return { layout: layoutName, walPerOp: wal / ops, split: await walSplit(client, lsn0, lsn1, ops) };
  } finally {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
    await client.end();
  }
}

async function walSplit(client, lsn0, lsn1, ops) {
  try {
    await client.query('CREATE EXTENSION IF NOT EXISTS pg_walinspect');
    const { rows } = await client.query(
      `SELECT "resource_manager/record_type" AS type, count, combined_size AS bytes FROM pg_get_wal_stats($1::pg_lsn, $2::pg_lsn, true) WHERE count > 0 ORDER BY combined_size DESC`,
      [lsn0, lsn1],
    );
    return Object.fromEntries(rows.filter((r) => Number(r.bytes) / ops >= 5).map((r) => [r.type, Math.round(Number(r.bytes) / ops)]));
  } catch {
    return null;
  }
}

export async function runWalFloor(databaseUrl, ops) {
  const sample = await sampleCleanOperation();
  const rows = [];
  for (const name of Object.keys(LAYOUTS)) rows.push(await walFloor(databaseUrl, name, sample, ops));
  return { sample: { claimBody: sample.claimed.body.length, doneBody: sample.done.body.length, id: sample.claimed.id.length }, rows };
}

export function printWalFloor({ sample, rows }) {
  console.log(`\nWAL floor per clean operation (PostgreSQL; a real clean operation's SQLite row: id ${sample.id} chars, body ${sample.claimBody} B after the claim, ${sample.doneBody} B after the completion)`);
  for (const r of rows) {
    console.log(`${r.layout.padEnd(16)} ${Math.round(r.walPerOp).toLocaleString('en-US').padStart(6)} WAL bytes/op${r.split ? `   ${Object.entries(r.split).map(([k, v]) => `${k} ${v}`).join(' · ')}` : ''}`);
  }
}
