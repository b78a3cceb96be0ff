// The bench's `layout` mode stands for "the ledger's layout with none of the runner's code" only while it
// sends what the ledger sends: these tests capture the statements of a real clean run (the runner on the
// PostgreSQL ledger, its own connections) and compare them with src/ledger-statements.mjs, then check that
// what `layout` writes is a row the ledger reads back as a finished operation of the same sizes.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LEDGER_STATEMENTS } from '../src/ledger-statements.mjs';
import { createNoopAdapter } from '../src/noop-adapter.mjs';
import { dropPostgres, preparePostgres, setupWorkload } from '../src/workloads.mjs';

const url = process.env.DATABASE_URL;
if (!url) throw new Error('DATABASE_URL is not set: these tests need a PostgreSQL (`source .ci/start-postgres.sh`)');
const schema = `rs_t_layout_${process.pid}`;
const ops = `"${schema}".retrysafe_operations`;
const flat = (text: string) => text.replace(/\s+/g, ' ').trim();

beforeAll(() => preparePostgres(url, schema, 'runner'));
afterAll(() => dropPostgres(url, schema));

/** The statements (text, values) the clients of this process send while `fn` runs. */
async function captured(fn: () => Promise<void>): Promise<{ text: string; values: unknown[] }[]> {
  const seen: { text: string; values: unknown[] }[] = [];
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, q: unknown, v?: unknown) {
    const text = typeof q === 'string' ? q : (q as { text: string }).text;
    seen.push({ text, values: (typeof q === 'string' ? v : (q as { values?: unknown[] }).values) as unknown[] });
    return (query as (...a: unknown[]) => unknown).call(this, q, v);
  } as typeof query;
  try {
    await fn();
  } finally {
    pg.Client.prototype.query = query;
  }
  return seen;
}

describe('the layout mode', () => {
  it('sends the statements the ledger sends for a clean operation', async () => {
    const { createRunner } = await import('@retrysafe/core');
    const { createPostgresLedger } = await import('@retrysafe/ledger-postgres');
    const ledger = createPostgresLedger({ connectionString: url, schema, poolSize: 2, migrate: false });
    const runner = createRunner({ ledger, owner: 'bench:test', policy: { leaseMs: 30_000 } });
    const adapter = createNoopAdapter({ remember: false });
    try {
      // The first run also probes the database clock; the second is the steady clean operation.
      await runner.run(adapter, 'orders.create', { params: { orderRef: 'warm', amount: 1 } });
      const seen = await captured(async () => {
        const res = await runner.run(adapter, 'orders.create', { params: { orderRef: 'x-1', amount: 1 } });
        expect(res.status).toBe('done');
      });
      expect(seen.map((s) => flat(s.text))).toEqual([flat(LEDGER_STATEMENTS.claim(ops)), flat(LEDGER_STATEMENTS.complete(ops))]);
      expect(seen.map((s) => s.values.length)).toEqual([10, 11]);
    } finally {
      await ledger.close();
    }
  });

  it('writes a row the ledger reads as a succeeded operation with one receipt, of the runner’s sizes', async () => {
    const { createPostgresLedger } = await import('@retrysafe/ledger-postgres');
    const w = await setupWorkload({ store: 'postgres', mode: 'layout', databaseUrl: url, schema, worker: 7 });
    const seen = await captured(async () => {
      await w.op(0);
      await w.op(1);
    });
    await w.close();
    const pair = [flat(LEDGER_STATEMENTS.claim(ops)), flat(LEDGER_STATEMENTS.complete(ops))];
    expect(seen.map((s) => flat(s.text))).toEqual([...pair, ...pair]);
    const id = seen[0]!.values[0] as string;
    const ledger = createPostgresLedger({ connectionString: url, schema, poolSize: 1, migrate: false });
    try {
      const rec = await ledger.get(id);
      expect(rec).toMatchObject({ businessOperationId: id, state: 'succeeded', fence: 1, attemptCount: 1, lastOutcome: 'succeeded', result: { id: 'ord_w7-0' }, providerRef: 'ord_w7-0' });
      expect(rec!.leaseOwner ?? null).toBeNull();
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      try {
        const { rows } = await c.query(`SELECT receipt_count, length(receipts) AS receipts, business_operation_id LIKE 'noop.orders.create:%' AS shaped FROM ${ops} ORDER BY created_at`);
        // The runner's clean op above wrote the first two rows; layout's are the same shape and size (±10 %).
        const runnerLen = rows[1].receipts as number;
        for (const r of rows.slice(2)) {
          expect(r.receipt_count).toBe(1);
          expect(r.shaped).toBe(true);
          expect(Math.abs((r.receipts as number) - runnerLen) / runnerLen).toBeLessThan(0.1);
        }
        expect(rows).toHaveLength(4);
      } finally {
        await c.end();
      }
    } finally {
      await ledger.close();
    }
  });

  it('refuses to run on a store it has no form for', async () => {
    await expect(setupWorkload({ store: 'sqlite', mode: 'layout', sqlitePath: '/nonexistent/x.db', worker: 0 })).rejects.toThrow(/PostgreSQL only/);
  });
});
