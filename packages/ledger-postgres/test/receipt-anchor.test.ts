import { createRunner, verifyOperation } from '@retrysafe/core';
import {
  createSandboxAdapter,
  createSandboxProvider,
  REPLAYING_BEHAVIOUR,
  startSandboxServer,
} from '@retrysafe/sandbox';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { createPostgresLedger } from '../src/index.js';
import { databaseUrl, testSchema } from './pg-test-db.js';

// Issue 18: every receipt write moves the row's chain anchor (head hash and length) in the same
// statement, so a deleted tail (or every receipt deleted) is a break that verifyOperation reports.

describe('receipt chain anchor on PostgreSQL', () => {
  it('the anchor follows every receipt; a deleted receipt is then caught', async () => {
    const schema = testSchema('anchor');
    const pool = new pg.Pool({ connectionString: databaseUrl(), max: 2 });
    const provider = createSandboxProvider({ ...REPLAYING_BEHAVIOUR });
    const server = await startSandboxServer({ provider, port: 0 });
    try {
      const ledger = createPostgresLedger({ connectionString: databaseUrl(), schema });
      try {
        const adapter = createSandboxAdapter({ baseUrl: server.url, timeoutMs: 2000, behaviour: REPLAYING_BEHAVIOUR });
        const r = await createRunner({ ledger }).run(adapter, 'records.create', {
          params: { ref: 'anchored-1', amount: 3 },
        });
        expect(r.status).toBe('done');
        const row = (await ledger.get(r.businessOperationId))!;
        const receipts = await ledger.receipts(r.businessOperationId);
        expect(row.receiptChain).toEqual({ head: receipts[receipts.length - 1]!.hash, length: receipts.length });
        expect(await verifyOperation(ledger, r.businessOperationId)).toEqual({ ok: true });
        // The receipts live in the row: cut the last one off its array, then all of them.
        await pool.query(`UPDATE "${schema}".retrysafe_operations SET receipts = $2 WHERE business_operation_id = $1`, [
          r.businessOperationId,
          JSON.stringify(receipts.slice(0, -1)),
        ]);
        expect(await verifyOperation(ledger, r.businessOperationId)).toMatchObject({
          ok: false,
          reason: expect.stringMatching(/anchors \d+ receipt/),
        });
        await pool.query(
          `UPDATE "${schema}".retrysafe_operations SET receipts = NULL WHERE business_operation_id = $1`,
          [r.businessOperationId],
        );
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
