// A statement the ledger prepared on a connection before a column it returns changed type (a migration
// run meanwhile) is refused by PostgreSQL before it runs (0A000, "cached plan must not change result
// type"): the ledger closes that connection and sends the statement again on another, where it is
// prepared anew, so the caller gets its answer, not the error.

import { asBusinessOperationId } from '@retrysafe/contract';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PostgresLedger } from '../src/index.js';
import { claimOf, databaseUrl, readyLedger, testSchema } from './pg-test-db.js';

const schema = testSchema('stale_stmt');
let ledger: PostgresLedger;
let admin: pg.Client;
beforeAll(async () => {
  ledger = await readyLedger(schema);
  admin = new pg.Client({ connectionString: databaseUrl() });
  await admin.connect();
});
afterAll(async () => {
  await ledger?.close();
  await admin?.end();
});

describe('a prepared statement whose result type changed', () => {
  it('is sent again on another connection and answers (get, then a claim and its record)', async () => {
    const id = asBusinessOperationId('stale-1');
    const c = await ledger.claim(claimOf('stale-1', 'w', Date.now()));

    expect(c.kind).toBe('claimed');
    if (c.kind !== 'claimed') throw new Error(c.kind);
    const before = await ledger.get(id); // prepares `get` on the connection in use
    expect(before?.state).toBe(c.record.state);
    // A column `get` returns changes type: the prepared statement's result type no longer matches.
    await admin.query(`ALTER TABLE "${schema}".retrysafe_operations ALTER COLUMN status_ref TYPE varchar(4000)`);
    const after = await ledger.get(id);
    expect(after).toEqual(before);
  });
});
