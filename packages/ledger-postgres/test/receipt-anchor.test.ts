import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createRunner, verifyOperation } from '@retrysafe/core';
import { createSandboxAdapter, createSandboxProvider, startSandboxServer, REPLAYING_BEHAVIOUR } from '@retrysafe/sandbox';
import { createPostgresLedger, migrate, MIGRATIONS } from '../src/index.js';
import { databaseUrl, dropSchema, freshSchema } from './pg-test-db.js';

// Issue 18: rows written before migration 3 are anchored to the receipts they hold; from then on a
// deleted tail (or every receipt deleted) is a break that verifyOperation reports.
const schemas: string[] = [];
afterAll(async () => {
  for (const s of schemas) await dropSchema(s);
});

describe('receipt chain anchor on PostgreSQL', () => {
  it('migration 3 anchors existing rows; a deleted receipt is then caught', async () => {
    const schema = freshSchema('anchor');
    schemas.push(schema);
    const pool = new pg.Pool({ connectionString: databaseUrl(), max: 2 });
    const provider = createSandboxProvider({ ...REPLAYING_BEHAVIOUR });
    const server = await startSandboxServer({ provider, port: 0 });
    try {
      // A ledger at migration 2 (before anchoring) with one operation and its receipts, written by
      // today's runner: its receipt writes set receipt_head/count only once the columns exist.
      await migrate(pool, schema, MIGRATIONS.filter((m) => m.version <= 2));
      await pool.query(`INSERT INTO "${schema}".retrysafe_operations (business_operation_id, provider, operation, intent_fingerprint, params_fingerprint, params, state, fence, created_at, updated_at, attempt_count)
        VALUES ('old-op', 'sandbox', 'sandbox.records.create', 'sha256:i', 'sha256:p', '{}', 'succeeded', 1, 1, 1, 1)`);
      for (const seq of [1, 2]) {
        await pool.query(`INSERT INTO "${schema}".retrysafe_receipts (business_operation_id, seq, receipt) VALUES ('old-op', $1, $2::json)`, [seq, JSON.stringify({ seq, hash: `h${seq}` })]);
      }
      const report = await migrate(pool, schema);
      expect(report.applied).toContain(3);
      const { rows } = await pool.query(`SELECT receipt_head, receipt_count FROM "${schema}".retrysafe_operations WHERE business_operation_id = 'old-op'`);
      expect(rows[0]).toEqual({ receipt_head: 'h2', receipt_count: 2 });

      const ledger = createPostgresLedger({ connectionString: databaseUrl(), schema });
      try {
        const adapter = createSandboxAdapter({ baseUrl: server.url, timeoutMs: 2000, behaviour: REPLAYING_BEHAVIOUR });
        const r = await createRunner({ ledger }).run(adapter, 'records.create', { params: { ref: 'anchored-1', amount: 3 } });
        expect(r.status).toBe('done');
        const row = (await ledger.get(r.businessOperationId))!;
        const receipts = await ledger.receipts(r.businessOperationId);
        expect(row.receiptChain).toEqual({ head: receipts[receipts.length - 1]!.hash, length: receipts.length });
        expect(await verifyOperation(ledger, r.businessOperationId)).toEqual({ ok: true });
        // The receipts live in the row since migration 5: cut the last one off its array, then all of them.
        await pool.query(`UPDATE "${schema}".retrysafe_operations SET receipts = $2 WHERE business_operation_id = $1`, [r.businessOperationId, JSON.stringify(receipts.slice(0, -1))]);
        expect(await verifyOperation(ledger, r.businessOperationId)).toMatchObject({ ok: false, reason: expect.stringMatching(/anchors \d+ receipt/) });
        await pool.query(`UPDATE "${schema}".retrysafe_operations SET receipts = NULL WHERE business_operation_id = $1`, [r.businessOperationId]);
        expect(await verifyOperation(ledger, r.businessOperationId)).toMatchObject({ ok: false });
      } finally {
        await ledger.close();
      }
    } finally {
      await server.close();
      await pool.end();
    }
  });
});
