// Issue 23: migration 5 moves each operation's receipts into its row. The fixture (fixtures/legacy/
// ledger-v4.json) holds every row a migration-4 build wrote (receipts in their own table), as text,
// and what that build read back; make-legacy-pg.mjs wrote it with that build's code.
import { describe, expect, it } from 'vitest';
import type { BusinessOperationId, Receipt } from '@retrysafe/contract';
import { createRunner, verifyOperation } from '@retrysafe/core';
import { createSandboxAdapter, createSandboxProvider, REPLAYING_BEHAVIOUR } from '@retrysafe/sandbox';
import { createPostgresLedger, migrate } from '../src/index.js';
import { LEGACY_V4 as FIXTURE, withLegacySchema } from './pg-test-db.js';

const id = (s: string) => s as BusinessOperationId;

describe('PostgreSQL migration 5: receipts in the operation row', () => {
  it('a migration-4 schema written by the previous build upgrades and reads back exactly what that build read', () =>
    withLegacySchema('mig5_read', 4, async (pool, schema) => {
      expect((await migrate(pool, schema)).applied).toEqual([5, 6]);
      const tables = await pool.query(`SELECT tablename FROM pg_tables WHERE schemaname = $1 ORDER BY tablename`, [schema]);
      expect(tables.rows.map((r) => r.tablename)).toEqual(['retrysafe_operations', 'retrysafe_schema_migrations']);
      const ledger = createPostgresLedger({ pool, schema, leaseClock: 'caller' });
      for (const [k, want] of Object.entries(FIXTURE.expected)) {
        expect(await ledger.get(id(k))).toEqual(want.record);
        // Each receipt keeps the text it was stored with: the same bytes, so the same hashes.
        expect(JSON.stringify(await ledger.receipts(id(k)))).toBe(JSON.stringify(want.receipts));
        if (want.receipts.length) expect(await verifyOperation(ledger, id(k))).toEqual({ ok: true });
      }
      expect((await ledger.list()).map((r) => r.businessOperationId)).toEqual(['legacy-ok', 'legacy-two', 'legacy-rejected', 'legacy-open']);
      expect((await ledger.list({ states: ['handed-off'] })).map((r) => r.businessOperationId)).toEqual(['legacy-two']);
      expect((await migrate(pool, schema)).applied).toEqual([]);
      await ledger.close();
    }));

  it('the migrated schema keeps working: the runner runs on it, receipts append to old rows, a handoff resolves, prune exports and deletes', () =>
    withLegacySchema('mig5_work', 4, async (pool, schema) => {
      const ledger = createPostgresLedger({ pool, schema });
      const provider = createSandboxProvider({ ...REPLAYING_BEHAVIOUR });
      const run = await createRunner({ ledger }).run(createSandboxAdapter({ provider }), 'records.create', { params: { ref: 'after-migration-5', amount: 1 } });
      expect(run.status).toBe('done');
      expect(await verifyOperation(ledger, run.businessOperationId)).toEqual({ ok: true });
      // The stale claim is still held (its lease runs for years): not a recovery candidate.
      expect((await ledger.recoverCandidates(Date.now())).map((r) => r.businessOperationId)).not.toContain('legacy-open');
      // A person's decision on the old handed-off row: its chain (two receipts moved by the migration) still verifies.
      const resolved = await ledger.resolve(id('legacy-two'), { action: 'abandon', by: 'test' }, Date.now());
      expect(resolved.state).toBe('abandoned');
      expect(await verifyOperation(ledger, id('legacy-two'))).toEqual({ ok: true });
      // A receipt appended to a moved chain is the next seq; a stale seq is refused and writes nothing.
      const open = (await ledger.get(id('legacy-open')))!;
      const ref = { businessOperationId: open.businessOperationId, fence: open.fence };
      const next = { businessOperationId: open.businessOperationId, seq: 1, kind: 'dispatch', outcome: 'unknown', prevHash: null, hash: 'h-open-1' } as unknown as Receipt;
      await ledger.appendReceipt(ref, next);
      await expect(ledger.appendReceipt(ref, { ...next, hash: 'h-again' } as Receipt)).rejects.toThrow(/not the next one \(expected 2\)/);
      expect(await ledger.receipts(open.businessOperationId)).toEqual([next]);
      expect((await ledger.get(open.businessOperationId))!.receiptChain).toEqual({ head: 'h-open-1', length: 1 });
      const runReceipts = await ledger.receipts(run.businessOperationId);
      expect(runReceipts.length).toBeGreaterThan(0);
      const exported: Array<[string, Receipt[]]> = [];
      const report = await ledger.prune({ before: Date.now() + 1000, onPrune: (r, rs) => void exported.push([r.businessOperationId, rs]) });
      expect(report.byState).toEqual({ succeeded: 2, rejected: 1, abandoned: 1 });
      expect(new Map(exported).get('legacy-ok')).toEqual(FIXTURE.expected['legacy-ok']!.receipts);
      expect(new Map(exported).get(run.businessOperationId)).toEqual(runReceipts);
      expect((await ledger.list()).map((r) => r.businessOperationId)).toEqual(['legacy-open']);
      await ledger.close();
    }));

  it('a chain cut before the migration is still reported as cut after it (the anchor is not recomputed)', () =>
    withLegacySchema('mig5_cut', 4, async (pool, schema) => {
      await pool.query(`DELETE FROM "${schema}".retrysafe_receipts WHERE business_operation_id = 'legacy-two' AND seq = 2`);
      await migrate(pool, schema);
      const ledger = createPostgresLedger({ pool, schema });
      expect(await verifyOperation(ledger, id('legacy-two'))).toMatchObject({ ok: false, reason: expect.stringMatching(/anchors 2 receipt/) });
      await ledger.close();
    }));
});
