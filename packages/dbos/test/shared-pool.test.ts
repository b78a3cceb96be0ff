import { randomBytes } from 'node:crypto';
import { DBOS } from '@dbos-inc/dbos-sdk';
import { createDbosRetrysafe } from '@retrysafe/dbos';
import { createSandboxAdapter, createSandboxProvider, REPLAYING_BEHAVIOUR } from '@retrysafe/sandbox';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { databaseUrl } from './crash-harness.js';

// `{ pool }`: one pg.Pool for DBOS's system database and the ledger (its own file: DBOS is one per process).
const url = databaseUrl();
const tag = randomBytes(3).toString('hex');
const dbosSchema = `dbos_pool_${tag}`;
const ledgerSchema = `rs_pool_${tag}`;
const pool = new pg.Pool({ connectionString: url, max: 12 });
pool.on('error', () => undefined);
const provider = createSandboxProvider(REPLAYING_BEHAVIOUR);
const adapter = createSandboxAdapter({ provider, intentFields: ['ref'] });
const rs = createDbosRetrysafe({ pool, ledgerSchema });
const wf = DBOS.registerWorkflow(async (ref: string) => rs.run(adapter, 'records.create', { params: { ref } }), {
  name: 'pooled',
});

beforeAll(async () => {
  expect(rs.dbosConfig()).toEqual({ systemDatabasePool: pool });
  DBOS.setConfig({ name: `pool-${tag}`, ...rs.dbosConfig(), systemDatabaseSchemaName: dbosSchema, logLevel: 'error' });
  await DBOS.launch();
});

afterAll(async () => {
  await DBOS.shutdown();
  await rs.close();
  await pool.query(`DROP SCHEMA IF EXISTS "${dbosSchema}" CASCADE`);
  await pool.query(`DROP SCHEMA IF EXISTS "${ledgerSchema}" CASCADE`);
  await pool.end();
});

it('DBOS and the ledger share one pool: both schemas live behind it, and the operation runs once', async () => {
  const r = await (await DBOS.startWorkflow(wf, { workflowID: `pooled-${tag}` })('order-pool')).getResult();
  expect(r.status).toBe('done');
  expect(provider.count()).toBe(1);
  const schemas = await pool.query<{ n: string }>(
    'SELECT nspname AS n FROM pg_namespace WHERE nspname = ANY($1) ORDER BY 1',
    [[dbosSchema, ledgerSchema]],
  );
  expect(schemas.rows.map((x) => x.n)).toEqual([dbosSchema, ledgerSchema].sort());
  const receipts = await rs.ledger.receipts(r.businessOperationId);
  expect(receipts.map((x) => x.runId)).toEqual([`pooled-${tag}`]);
});
