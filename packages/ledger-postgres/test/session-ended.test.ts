// A connection the server ends (pg_terminate_backend, a restart, a dropped network) while a transaction holds it:
// pg emits 'error' on that client, and pg.Pool listens only while a client is idle, so a checked-out client
// without a listener ended the process. The call must fail with LedgerError and the process carry on.
import { randomBytes } from 'node:crypto';
import { LedgerError } from '@retrysafe/contract';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresLedger, migrate } from '../src/index.js';
import { claimOf, databaseUrl, dropSchema, freshSchema } from './pg-test-db.js';

const url = databaseUrl();
let admin: pg.Client;
beforeAll(async () => {
  admin = new pg.Client({ connectionString: url });
  await admin.connect();
});
afterAll(() => admin?.end());

/** A connection string whose sessions carry their own application_name, so pg_stat_activity finds them. */
function tagged() {
  const name = `rs_ended_${randomBytes(4).toString('hex')}`;
  const u = new URL(url);
  u.searchParams.set('application_name', name);
  return { name, url: u.toString() };
}

/** `test` while another session holds what `lock` takes, in a transaction: whoever else needs it waits. */
async function holding(lock: string, values: unknown[], test: () => Promise<void>) {
  const locker = new pg.Client({ connectionString: url });
  await locker.connect();
  try {
    await locker.query('BEGIN');
    await locker.query(lock, values);
    await test();
  } finally {
    await locker.end();
  }
}

/** Waits until a session tagged `name` waits for a lock, then ends it as the server would. */
async function endWhenWaiting(name: string) {
  const waiting = `SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`;
  while ((await admin.query(waiting, [name])).rows.length === 0) await new Promise((r) => setTimeout(r, 20));
  await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [name]);
}

describe('a session the server ends while a transaction holds it', () => {
  for (const yours of [false, true])
    it(`fails the claim with LedgerError, and the ledger carries on${yours ? ' (your pool)' : ''}`, async () => {
      const t = tagged();
      const schema = freshSchema('ended');
      const pool = yours ? new pg.Pool({ connectionString: t.url, max: 1 }) : undefined;
      const l = createPostgresLedger({ connectionString: t.url, schema, poolSize: 1, ...(pool && { pool }) });
      try {
        const opId = `ended-${randomBytes(4).toString('hex')}`;
        const first = await l.claim(claimOf(opId, 'w1', Date.now()));
        expect(first.kind).toBe('claimed');
        const lock = `SELECT 1 FROM "${schema}".retrysafe_operations WHERE business_operation_id = $1 FOR UPDATE`;
        await holding(lock, [opId], async () => {
          // Caught from the start: the claim fails while endWhenWaiting still awaits its own query, and a rejection
          // with no handler by then is reported as unhandled (the migration case below does the same).
          const claim = l
            .claim({ ...claimOf(opId, 'w2', Date.now()), existing: true as const })
            .catch((e: unknown) => e);
          await endWhenWaiting(t.name);
          expect(LedgerError.isInstance(await claim)).toBe(true);
        });
        expect(await l.get(opId as never)).toMatchObject({ state: 'claimed' });
      } finally {
        await l.close();
        await pool?.end();
        await dropSchema(schema);
      }
    });

  it('fails a migration on your pool with LedgerError, and the process carries on', async () => {
    const t = tagged();
    const schema = freshSchema('ended_migrate');
    const pool = new pg.Pool({ connectionString: t.url, max: 1 });
    try {
      await holding('SELECT pg_advisory_xact_lock(hashtext($1))', [`retrysafe.migrate:${schema}`], async () => {
        const migrating = migrate(pool, schema).catch((e: unknown) => e);
        await endWhenWaiting(t.name);
        expect(LedgerError.isInstance(await migrating)).toBe(true);
      });
      expect((await pool.query('SELECT 1 AS one')).rows[0].one).toBe(1);
    } finally {
      await pool.end();
      await dropSchema(schema);
    }
  });
});
