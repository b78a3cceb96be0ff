// Issue 23: migration 6 moves the state and fence checks from the table into domains (PostgreSQL 15
// re-reads and re-plans a table's CHECK constraints for every statement; a domain's check is cached).
// The rules must hold exactly as before, for any writer, on a schema that already holds rows.
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import type { BusinessOperationId } from '@retrysafe/contract';
import { createRunner, verifyOperation } from '@retrysafe/core';
import { createSandboxAdapter, createSandboxProvider, REPLAYING_BEHAVIOUR } from '@retrysafe/sandbox';
import { createPostgresLedger, migrate } from '../src/index.js';
import { databaseUrl, LEGACY_V4 as FIXTURE, withLegacySchema } from './pg-test-db.js';

const id = (s: string) => s as BusinessOperationId;
/** A schema at migration 5 holding the legacy fixture's rows (moved by migration 5) and one run this build wrote at 5. */
function withSchemaAt5(label: string, fn: (pool: pg.Pool, schema: string, ran: BusinessOperationId) => Promise<void>): Promise<void> {
  return withLegacySchema(label, 5, async (pool, schema) => {
    // This build on a schema still at 5 (a deploy that has not migrated yet): it works there too.
    const at5 = createPostgresLedger({ pool, schema, migrate: false });
    const provider = createSandboxProvider({ ...REPLAYING_BEHAVIOUR });
    const run = await createRunner({ ledger: at5 }).run(createSandboxAdapter({ provider }), 'records.create', { params: { ref: 'at-5', amount: 1 } });
    expect(run.status).toBe('done');
    await at5.close();
    await fn(pool, schema, run.businessOperationId);
  });
}

const filenodes = async (pool: pg.Pool, schema: string) =>
  Object.fromEntries((await pool.query(`SELECT relname, relfilenode FROM pg_class WHERE relnamespace = $1::regnamespace AND relname IN ('retrysafe_operations', 'retrysafe_operations_pkey', 'retrysafe_operations_created_idx')`, [schema])).rows.map((r) => [r.relname, r.relfilenode]));

describe('PostgreSQL migration 6: the state and fence checks in domains', () => {
  it('upgrades a schema with rows without rewriting its table, and every record reads back as before', () =>
    withSchemaAt5('mig6_read', async (pool, schema, ran) => {
      const ledger5 = createPostgresLedger({ pool, schema, migrate: false, leaseClock: 'caller' });
      const before = await ledger5.list();
      const ranReceipts = await ledger5.receipts(ran);
      await ledger5.close();
      const nodes = await filenodes(pool, schema);
      expect((await migrate(pool, schema)).applied).toEqual([6]);
      expect(await filenodes(pool, schema)).toEqual(nodes);
      const ledger = createPostgresLedger({ pool, schema, leaseClock: 'caller' });
      expect(await ledger.list()).toEqual(before);
      for (const [k, want] of Object.entries(FIXTURE.expected)) {
        expect(await ledger.get(id(k))).toEqual(want.record);
        expect(JSON.stringify(await ledger.receipts(id(k)))).toBe(JSON.stringify(want.receipts));
      }
      expect(await ledger.receipts(ran)).toEqual(ranReceipts);
      expect(await verifyOperation(ledger, ran)).toEqual({ ok: true });
      expect((await ledger.list({ states: ['handed-off'] })).map((r) => r.businessOperationId)).toEqual(['legacy-two']);
      expect((await migrate(pool, schema)).applied).toEqual([]);
      await ledger.close();
    }));

  it('a ledger running while the schema migrates goes on: statements it prepared before are prepared again', () =>
    withSchemaAt5('mig6_live', async (pool, schema) => {
      const live = createPostgresLedger({ connectionString: databaseUrl(), schema, migrate: false, poolSize: 2 });
      try {
        // Both connections prepare the reads (their rows carry state and fence), and keep them.
        await Promise.all([live.get(id('legacy-ok')), live.get(id('legacy-two'))]);
        await Promise.all([live.list(), live.list()]);
        expect((await migrate(pool, schema)).applied).toEqual([6]);
        expect(await live.get(id('legacy-ok'))).toEqual(FIXTURE.expected['legacy-ok']!.record);
        expect((await live.list()).length).toBe(5);
      } finally {
        await live.close();
      }
    }));

  it('a hand-written statement still cannot store a state no rule knows, a fence below 1 or half a lease', () =>
    withSchemaAt5('mig6_rules', async (pool, schema) => {
      await migrate(pool, schema);
      const t = `"${schema}".retrysafe_operations`;
      const refused = async (sql: string) => (await pool.query(sql).catch((e: { code?: string }) => e)) as { code?: string };
      for (const sql of [
        `UPDATE ${t} SET state = 'done' WHERE business_operation_id = 'legacy-open'`,
        `UPDATE ${t} SET state = NULL WHERE business_operation_id = 'legacy-open'`,
        `UPDATE ${t} SET fence = 0 WHERE business_operation_id = 'legacy-open'`,
        `UPDATE ${t} SET lease_owner = NULL WHERE business_operation_id = 'legacy-open'`,
        `UPDATE ${t} SET lease_expires_at = NULL WHERE business_operation_id = 'legacy-open'`,
        `INSERT INTO ${t} (business_operation_id, provider, operation, intent_fingerprint, params_fingerprint, state, fence, created_at, updated_at) VALUES ('x', 'p', 'o', 'i', 'f', 'Claimed', 1, 1, 1)`,
        `INSERT INTO ${t} (business_operation_id, provider, operation, intent_fingerprint, params_fingerprint, state, fence, created_at, updated_at) VALUES ('x', 'p', 'o', 'i', 'f', 'claimed', -1, 1, 1)`,
        `INSERT INTO ${t} (business_operation_id, provider, operation, intent_fingerprint, params_fingerprint, state, fence, lease_owner, created_at, updated_at) VALUES ('x', 'p', 'o', 'i', 'f', 'claimed', 1, 'w', 1, 1)`,
      ]) {
        // 23514 check_violation (23502 not_null_violation for a NULL state), as before the migration.
        expect((await refused(sql)).code, sql).toBe(sql.includes('state = NULL') ? '23502' : '23514');
      }
      // The rules live in the schema's domains and the one two-column check on the table.
      const checks = await pool.query(`SELECT conname FROM pg_constraint WHERE conrelid = '${t}'::regclass AND contype = 'c' ORDER BY conname`);
      expect(checks.rows.map((r) => r.conname)).toEqual(['retrysafe_operations_check']);
      const domains = await pool.query(`SELECT t.typname, c.conname FROM pg_constraint c JOIN pg_type t ON t.oid = c.contypid WHERE t.typnamespace = $1::regnamespace ORDER BY 1`, [schema]);
      expect(domains.rows).toEqual([{ typname: 'retrysafe_fence', conname: 'retrysafe_fence_check' }, { typname: 'retrysafe_state', conname: 'retrysafe_state_check' }]);
      expect((await pool.query(`SELECT count(*) AS n FROM ${t} WHERE business_operation_id = 'x'`)).rows[0].n).toBe('0');
    }));

  it('the migrated schema keeps working: runs, takeovers, handoffs, resolution and prune', () =>
    withSchemaAt5('mig6_work', async (pool, schema, ran) => {
      const ledger = createPostgresLedger({ pool, schema });
      const provider = createSandboxProvider({ ...REPLAYING_BEHAVIOUR });
      const adapter = createSandboxAdapter({ provider });
      const run = await createRunner({ ledger }).run(adapter, 'records.create', { params: { ref: 'after-6', amount: 1 } });
      expect(run.status).toBe('done');
      expect(await verifyOperation(ledger, run.businessOperationId)).toEqual({ ok: true });
      // The same business operation again: the stored result is adopted, nothing is sent.
      const again = await createRunner({ ledger }).run(adapter, 'records.create', { params: { ref: 'after-6', amount: 1 } });
      expect(again.status).toBe('done');
      expect(provider.count()).toBe(1);
      const resolved = await ledger.resolve(id('legacy-two'), { action: 'mark-done', by: 'test', providerRef: 'ref-by-hand' }, Date.now());
      expect(resolved.state).toBe('succeeded');
      const report = await ledger.prune({ before: Date.now() + 1000 });
      expect(report.byState).toEqual({ succeeded: 4, rejected: 1 });
      expect((await ledger.list()).map((r) => r.businessOperationId)).toEqual(['legacy-open']);
      expect(await ledger.get(ran)).toBeNull();
      await ledger.close();
    }));
});
