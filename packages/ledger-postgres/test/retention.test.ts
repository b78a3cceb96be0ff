// Issue 23: retention (prune) and the index layout on a real PostgreSQL.

import type { asBusinessOperationId } from '@retrysafe/contract';
import { createRunner, pruneLedger, verifyOperation } from '@retrysafe/core';
import { createSandboxAdapter, createSandboxProvider, REPLAYING_BEHAVIOUR } from '@retrysafe/sandbox';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { createPostgresLedger, migrate, type PostgresLedger } from '../src/index.js';
import { claimOf, databaseUrl, testSchema } from './pg-test-db.js';

describe('PostgreSQL retention and index layout', () => {
  it('prune keeps what the key retention protects unless forced, then deletes closed operations with their receipts', async () => {
    const schema = testSchema('retention');
    const pool = new pg.Pool({ connectionString: databaseUrl(), max: 2 });
    try {
      const ledger = createPostgresLedger({ pool, schema });
      const provider = createSandboxProvider({ ...REPLAYING_BEHAVIOUR });
      const adapter = createSandboxAdapter({ provider });
      const first = await createRunner({ ledger }).run(adapter, 'records.create', {
        params: { ref: 'kept-1', amount: 1 },
      });
      expect(first.status).toBe('done');
      // A rejected, a handed-off and an open operation beside it.
      await closeBy(ledger, 'op-rejected', (ref) =>
        ledger.setState(ref, { state: 'rejected', lastOutcome: 'rejected', now: Date.now() }),
      );
      await closeBy(ledger, 'op-handed-off', (ref) =>
        ledger.handOff(ref, { reason: 'retry-exhausted', lastKnown: {} } as never, Date.now()),
      );
      await closeBy(ledger, 'op-open', async () => undefined);
      const next = await createRunner({ ledger }).run(adapter, 'records.create', {
        params: { ref: 'after', amount: 1 },
      });
      expect(next.status).toBe('done');
      expect(await verifyOperation(ledger, first.businessOperationId)).toEqual({ ok: true });
      expect((await ledger.list({ newestFirst: true, limit: 1 }))[0]!.businessOperationId).toBe(
        next.businessOperationId,
      );
      // The new one is younger than the sandbox card's key retention: refused without force; with it, every closed one goes.
      const cards = Object.values(adapter.operations).map((o) => o.card);
      await expect(pruneLedger(ledger, { olderThan: 0, cards, now: Date.now() + 1000 })).rejects.toThrow(
        /key retention/,
      );
      const report = await pruneLedger(ledger, { olderThan: 0, cards, force: true, now: Date.now() + 1000 });
      expect(report).toMatchObject({ pruned: 3, byState: { succeeded: 2, rejected: 1 }, floor: { forced: true } });
      expect(await ledger.get(first.businessOperationId)).toBeNull();
      expect(await ledger.receipts(first.businessOperationId)).toEqual([]);
      // Their receipts went with their rows; the handed-off and the open operation stay.
      const { rows } = await pool.query(
        `SELECT business_operation_id AS id FROM "${schema}".retrysafe_operations ORDER BY id`,
      );
      expect(rows.map((r) => r.id)).toEqual(['op-handed-off', 'op-open']);
      await ledger.close();
    } finally {
      await pool.end();
    }
  });

  it('a prune that exports nothing fetches the keys of each page, not the records it deletes unread', async () => {
    const ledger = createPostgresLedger({ connectionString: databaseUrl(), schema: testSchema('keys'), poolSize: 2 });
    try {
      for (const id of ['old-1', 'old-2', 'old-3'])
        await closeBy(ledger, id, (ref) =>
          ledger.setState(ref, { state: 'succeeded', result: { id: `r-${id}` }, now: Date.now() }),
        );
      // The driver parses every json column it is sent (params, result) with this parser.
      const { JSON: json } = pg.types.builtins;
      const parse = pg.types.getTypeParser(json);
      let parsed = 0;
      pg.types.setTypeParser(json, (text: string) => (parsed++, parse(text)));
      try {
        expect(await ledger.prune!({ before: Date.now() + 1000, dryRun: true })).toMatchObject({ pruned: 3 });
        expect(await ledger.prune!({ before: Date.now() + 1000 })).toMatchObject({ pruned: 3 });
      } finally {
        pg.types.setTypeParser(json, parse);
      }
      expect(parsed).toBe(0);
      expect(await ledger.list()).toEqual([]);
    } finally {
      await ledger.close();
    }
  });

  it('listings, lookups, recovery and prune are served by indexes (plans with sequential scans off, on 20k rows)', async () => {
    const schema = testSchema('plans');
    const client = new pg.Client({ connectionString: databaseUrl() });
    await client.connect();
    try {
      await migrate(client, schema);
      const t = `"${schema}".retrysafe_operations`;
      await client.query(`INSERT INTO ${t} (business_operation_id, provider, operation, intent_fingerprint, params_fingerprint, state, fence, created_at, updated_at)
        SELECT 'op-' || x, 'sandbox', 'sandbox.records.create', 'i', 'p', CASE WHEN x % 1000 = 0 THEN 'handed-off' ELSE 'succeeded' END, 1, x, x FROM generate_series(1, 20000) x`);
      await client.query(`ANALYZE ${t}`);
      await client.query('SET enable_seqscan = off');
      const plan = async (sql: string, values: unknown[] = []) =>
        (await client.query(`EXPLAIN ${sql}`, values)).rows.map((r) => r['QUERY PLAN']).join('\n');
      const noSeq = (p: string) => expect(p).not.toMatch(/Seq Scan/);
      noSeq(await plan(`SELECT * FROM ${t} ORDER BY created_at DESC, business_operation_id DESC LIMIT 100`));
      noSeq(
        await plan(
          `SELECT * FROM ${t} WHERE state = ANY('{handed-off}'::text[]) AND state NOT IN ('succeeded', 'rejected', 'abandoned') ORDER BY created_at DESC LIMIT 100`,
        ),
      );
      noSeq(await plan(`SELECT * FROM ${t} WHERE business_operation_id = 'op-7'`));
      noSeq(
        await plan(
          `SELECT * FROM ${t} WHERE state IN ('claimed', 'dispatched', 'unknown', 'in-progress', 'reconciling') ORDER BY updated_at, business_operation_id LIMIT 10`,
        ),
      );
      noSeq(
        await plan(
          `SELECT * FROM ${t} WHERE state = 'succeeded' AND created_at < 100 AND updated_at < 100 AND (created_at, business_operation_id) > (-1, '') ORDER BY created_at, business_operation_id LIMIT 500`,
        ),
      );
      // A later page starts where the last one ended: created_at bounds the index scan (the created_at index holds no id).
      expect(
        await plan(
          `SELECT * FROM ${t} WHERE state = 'succeeded' AND created_at < 15000 AND updated_at < 15000 AND (created_at, business_operation_id) > (10000, 'op-10000') ORDER BY created_at, business_operation_id LIMIT 500`,
        ),
      ).toMatch(/Index Cond: .*created_at >= 10000/);
    } finally {
      await client.end();
    }
  });
});

/** Claims `id` (a lease of an hour) and lets `then` move it on. */
async function closeBy(
  ledger: PostgresLedger,
  id: string,
  then: (ref: { businessOperationId: ReturnType<typeof asBusinessOperationId>; fence: number }) => Promise<unknown>,
): Promise<void> {
  const c = await ledger.claim(claimOf(id, 'w', Date.now(), 3_600_000));

  if (c.kind !== 'claimed') throw new Error(c.kind);
  await then({ businessOperationId: c.record.businessOperationId, fence: c.record.fence });
}
