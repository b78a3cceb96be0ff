// The scale figures (cost per op with 1k, 100k, 1M operations stored) only mean something if the filled
// rows sit where real ones would: a new operation's id must land between filled ids, so each claim is a
// random insert into the `id` index. Filled ids that all sort on one side make every insert an append.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { prefillPostgres, prefillSqlite } from '../src/storage.mjs';
import { defaultSqliteDriver, dropPostgres, openSqlite, preparePostgres, prepareSqlite, setupWorkload } from '../src/workloads.mjs';

const dir = mkdtempSync(join(tmpdir(), 'rs-bench-fill-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const url = process.env.DATABASE_URL;
if (!url) throw new Error('DATABASE_URL is not set: these tests need a PostgreSQL (`source .ci/start-postgres.sh`)');

/** Where new ids fall among filled ones: the share of filled ids that sort before each new id. */
function ranks(filled: string[], fresh: string[]): number[] {
  const sorted = [...filled].sort();
  return fresh.map((id) => sorted.filter((f) => f < id).length / sorted.length);
}

function expectInterleaved(filled: string[], fresh: string[], prefix: string) {
  expect(new Set(filled).size).toBe(filled.length);
  for (const id of filled) expect(id.startsWith(prefix)).toBe(true);
  const r = ranks(filled, fresh);
  // Eight new ids drawn at random in the filled ids' range: not all at one end.
  expect(r.some((x) => x > 0.05 && x < 0.95)).toBe(true);
  expect(Math.min(...r)).toBeLessThan(0.5);
  expect(Math.max(...r)).toBeGreaterThan(0.5);
}

describe('scale prefill', () => {
  for (const mode of ['runner', 'hand', 'rawid'] as const) {
    it(`SQLite ${mode}: filled ids keep the ledger's id prefix and interleave with new operations' ids`, async () => {
      const driver = await defaultSqliteDriver();
      const sqlitePath = join(dir, `${mode}.db`);
      prepareSqlite(sqlitePath, driver);
      const seed = await setupWorkload({ store: 'sqlite', mode, sqlitePath, driver, worker: 'seed' });
      await seed.op(0);
      await seed.close();
      prefillSqlite(sqlitePath, driver, 2000);
      const w = await setupWorkload({ store: 'sqlite', mode, sqlitePath, driver, worker: 'new' });
      for (let i = 0; i < 8; i++) await w.op(i);
      await w.close();
      const db = openSqlite(sqlitePath, driver);
      const table = { runner: 'retrysafe_operations', hand: 'hand_ops', rawid: 'raw_ops' }[mode];
      const ids = (db.prepare(`SELECT id FROM ${table} ORDER BY rowid`).all() as Array<{ id: string }>).map((r) => r.id);
      // Filled rows are spread over past milliseconds as a history is (not a million in one millisecond).
      const place = mode === 'runner' ? (db.prepare(`SELECT count(DISTINCT created_at) AS times FROM ${table}`).get() as { times: number }) : null;
      // A ledger's table grows at its end, so its pages are full; a fill that inserted the history
      // backwards left them half full.
      const packing = mode === 'runner' ? (db.prepare(`SELECT (SELECT sum(length(record) + coalesce(length(receipts), 0)) FROM ${table}) AS payload, (SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()) AS file`).get() as { payload: number; file: number }) : null;
      db.close();
      // Stored JSON over file bytes (the file also holds the indexes and row headers).
      if (packing) expect(packing.payload / packing.file).toBeGreaterThan(0.45);
      if (place) expect(place.times).toBeGreaterThanOrEqual(2000);
      expect(ids).toHaveLength(2008);
      const prefix = ids[0]!.slice(0, -32);
      expectInterleaved(ids.slice(0, 2000), ids.slice(2000), prefix);
    });
  }

  it("rawid's ids have the shape of the runner's ledger ids: the operation, then 32 hex digits of a digest", async () => {
    const driver = await defaultSqliteDriver();
    const idsOf = async (mode: 'runner' | 'rawid') => {
      const sqlitePath = join(dir, `same-ids-${mode}.db`);
      prepareSqlite(sqlitePath, driver);
      const w = await setupWorkload({ store: 'sqlite', mode, sqlitePath, driver, worker: 'same' });
      for (let i = 0; i < 3; i++) await w.op(i);
      await w.close();
      const db = openSqlite(sqlitePath, driver);
      const table = mode === 'runner' ? 'retrysafe_operations' : 'raw_ops';
      const ids = (db.prepare(`SELECT id FROM ${table} ORDER BY rowid`).all() as Array<{ id: string }>).map((r) => r.id);
      db.close();
      return ids;
    };
    const shape = (ids: string[]) => ids.map((id) => id.replace(/[0-9a-f]{32}$/, '<hex>'));
    const runner = await idsOf('runner');
    const rawid = await idsOf('rawid');
    expect(runner).toHaveLength(3);
    expect(new Set(rawid).size).toBe(3);
    expect(shape(rawid)).toEqual(shape(runner));
    expect(shape(runner)).toEqual(Array(3).fill('noop.orders.create:<hex>'));
  });

  it('PostgreSQL runner: the same', async () => {
    const schema = `rs_t_fill_${process.pid}`;
    await preparePostgres(url, schema, 'runner');
    try {
      const seed = await setupWorkload({ store: 'postgres', mode: 'runner', databaseUrl: url, schema, worker: 'seed' });
      await seed.op(0);
      await seed.close();
      await prefillPostgres(url, schema, 2000);
      const before = new pg.Client({ connectionString: url });
      await before.connect();
      // The fill is on disk before anything is measured: no page of the table is left dirty for the
      // server's next checkpoint to write during the runs.
      await before.query('CREATE EXTENSION IF NOT EXISTS pg_buffercache');
      const dirty = await before.query(
        `SELECT count(*)::int AS n FROM pg_buffercache WHERE isdirty AND relfilenode = pg_relation_filenode($1::regclass) AND reldatabase = (SELECT oid FROM pg_database WHERE datname = current_database())`,
        [`"${schema}".retrysafe_operations`],
      );
      expect(dirty.rows[0].n).toBe(0);
      const filled = (await before.query(`SELECT business_operation_id AS id FROM "${schema}".retrysafe_operations`)).rows.map((r) => r.id as string);
      await before.end();
      const w = await setupWorkload({ store: 'postgres', mode: 'runner', databaseUrl: url, schema, worker: 'new' });
      for (let i = 0; i < 8; i++) await w.op(i);
      await w.close();
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      const all = (await c.query(`SELECT business_operation_id AS id FROM "${schema}".retrysafe_operations`)).rows.map((r) => r.id as string);
      await c.end();
      const known = new Set(filled);
      const fresh = all.filter((id) => !known.has(id));
      expect(filled).toHaveLength(2000);
      expect(fresh).toHaveLength(8);
      expectInterleaved(filled, fresh, filled[0]!.slice(0, -32));
    } finally {
      await dropPostgres(url, schema);
    }
  });
});
