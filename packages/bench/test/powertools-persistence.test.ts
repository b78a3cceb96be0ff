// The Powertools comparison is only fair if the persistence layers written for it behave like
// Powertools' own (DynamoDB) layer: the function runs once per key, a repeat gets the stored result,
// a call while the first is in flight is refused as in progress, and a failed call leaves the key free.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  IdempotencyAlreadyInProgressError,
  IdempotencyConfig,
  makeIdempotent,
} from '@aws-lambda-powertools/idempotency';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresPersistenceLayer, SqlitePersistenceLayer } from '../src/powertools-persistence.mjs';

const dir = mkdtempSync(join(tmpdir(), 'rs-bench-pt-'));
const url = process.env.DATABASE_URL;
if (!url) throw new Error('DATABASE_URL is not set: these tests need a PostgreSQL (`source .ci/start-postgres.sh`)');
const schema = `rs_t_bench_${process.pid}`;
let client: pg.Client;
let db: { close(): void };

beforeAll(async () => {
  client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
  await PostgresPersistenceLayer.createTable(client, `"${schema}".pt`);
  // node:sqlite, as the ledger.
  const { DatabaseSync } = await import('node:sqlite');
  db = new DatabaseSync(join(dir, 'pt.db'));
});
afterAll(async () => {
  db?.close();
  rmSync(dir, { recursive: true, force: true });
  await client?.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await client?.end();
});

const config = () =>
  new IdempotencyConfig({
    eventKeyJmesPath: 'orderRef',
    lambdaContext: { getRemainingTimeInMillis: () => 30_000 } as never,
  });

const layers = {
  sqlite: () => new SqlitePersistenceLayer(db as never),
  postgres: () => new PostgresPersistenceLayer(client, `"${schema}".pt`),
};

describe.each(Object.keys(layers) as (keyof typeof layers)[])('Powertools on %s', (name) => {
  it('runs the function once per key and replays the stored result', async () => {
    let calls = 0;
    const fn = makeIdempotent(async (p: { orderRef: string }) => ({ id: `ord_${p.orderRef}`, n: ++calls }), {
      persistenceStore: layers[name](),
      config: config(),
    });
    const first = await fn({ orderRef: `${name}-a` });
    const again = await fn({ orderRef: `${name}-a` });
    const other = await fn({ orderRef: `${name}-b` });
    expect(first).toEqual({ id: `ord_${name}-a`, n: 1 });
    expect(again).toEqual(first);
    expect(other).toEqual({ id: `ord_${name}-b`, n: 2 });
    expect(calls).toBe(2);
  });

  it('refuses a second call while the first is in flight, and frees the key when the function fails', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let calls = 0;
    const fn = makeIdempotent(
      async (p: { orderRef: string; fail?: boolean }) => {
        calls++;
        if (p.fail) throw new Error('boom');
        await gate;
        return { id: p.orderRef };
      },
      { persistenceStore: layers[name](), config: config() },
    );
    const slow = fn({ orderRef: `${name}-slow` });
    await expect.poll(() => calls).toBe(1); // its in-progress record is stored before the function runs
    await expect(fn({ orderRef: `${name}-slow` })).rejects.toBeInstanceOf(IdempotencyAlreadyInProgressError);
    release();
    expect(await slow).toEqual({ id: `${name}-slow` });
    await expect(fn({ orderRef: `${name}-fail`, fail: true })).rejects.toThrow('boom');
    await expect(fn({ orderRef: `${name}-fail`, fail: true })).rejects.toThrow('boom');
    expect(calls).toBe(3);
  });
});
