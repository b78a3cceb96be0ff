// The connections a ledger opens itself (no `pool` option): a statement that does not answer fails and its
// connection is never reused, a wait for a connection that lasts too long fails without sending anything,
// idle connections close, and close() ends them all.
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { type BusinessOperationId, LedgerError } from '@retrysafe/contract';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresLedger, type PostgresLedgerOptions } from '../src/index.js';
import { claimOf, databaseUrl, dropSchema, freshSchema, testSchema } from './pg-test-db.js';

const url = databaseUrl();
const schema = testSchema('connections');
let admin: pg.Client;

beforeAll(async () => {
  admin = new pg.Client({ connectionString: url });
  await admin.connect();
});
afterAll(async () => {
  await admin?.end();
});

/** A connection string whose sessions carry their own application_name, so pg_stat_activity finds them. */
const tagged = () => {
  const name = `rs_conn_${randomBytes(4).toString('hex')}`;
  const u = new URL(url);
  u.searchParams.set('application_name', name);
  return { name, url: u.toString() };
};
const sessions = async (name: string) =>
  Number(
    (await admin.query(`SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1`, [name])).rows[0].n,
  );
/** Polls until `sessions(name)` is `n`, or gives up after ~5 s (half of pg.Pool's default idle time), and the expectation fails. */
async function untilSessions(name: string, n: number): Promise<number> {
  let seen = await sessions(name);
  for (let i = 0; i < 100 && seen !== n; i++) {
    await sleep(50);
    seen = await sessions(name);
  }
  return seen;
}

const id = (s: string) => s as BusinessOperationId;

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

/** Polls until a session tagged `name` waits for a lock. */
async function untilWaiting(name: string) {
  const waiting = `SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`;
  while ((await admin.query(waiting, [name])).rows.length === 0) await sleep(20);
}

const terminate = (name: string) =>
  admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [name]);

/** A ledger on the test schema, with `options`; `test` runs while the row of an operation it claimed is locked by
 * another session (a statement that touches it does not answer until the lock goes); closed after. */
async function withLockedRow(
  options: Partial<PostgresLedgerOptions>,
  test: (
    l: ReturnType<typeof createPostgresLedger>,
    ref: { businessOperationId: BusinessOperationId; fence: number },
  ) => Promise<void>,
) {
  const l = createPostgresLedger({ connectionString: url, schema, leaseClock: 'caller', ...options });
  try {
    const opId = `locked-${randomBytes(4).toString('hex')}`;
    const claimed = await l.claim(claimOf(opId, 'w1', Date.now()));
    if (claimed.kind !== 'claimed') throw new Error(`expected a claim, got ${claimed.kind}`);
    const lock = `SELECT 1 FROM "${schema}".retrysafe_operations WHERE business_operation_id = $1 FOR UPDATE`;
    await holding(lock, [opId], () => test(l, { businessOperationId: id(opId), fence: claimed.record.fence }));
  } finally {
    await l.close();
  }
}

describe("the ledger's own connections", () => {
  it('a statement that does not answer in time fails with LedgerError, and its connection is never used again', async () => {
    await withLockedRow({ poolSize: 1, queryTimeoutMs: 200 }, async (l, ref) => {
      const err = await l.markDispatched(ref, Date.now()).catch((e: unknown) => e);
      expect(LedgerError.isInstance(err)).toBe(true);
      expect((err as Error).message).toBe(
        'markDispatched failed in PostgreSQL: no answer within 200 ms: the connection is closed (the statement may still have committed)',
      );
      // The only connection still waits on the lock at the server: the next statement runs on a new one.
      expect(await l.get(id('other'))).toBeNull();
    });
  });

  it('a transaction whose statement does not answer in time fails: its rollback does not wait behind that statement', async () => {
    await withLockedRow({ poolSize: 1, queryTimeoutMs: 200 }, async (l, ref) => {
      const claim = { ...claimOf(ref.businessOperationId, 'w2', Date.now()), existing: true as const };
      const settled = l.claim(claim).then(
        () => 'claimed',
        (e: unknown) => e,
      );
      const late = sleep(2_000).then(() => 'never settled');
      expect((await Promise.race([settled, late])) as Error).toMatchObject({
        message: expect.stringMatching(/^claim failed in PostgreSQL: no answer within 200 ms/),
      });
      expect(await l.get(id('other'))).toBeNull();
    });
  });

  for (const yours of [false, true])
    it(`a transaction whose session the server ends fails with LedgerError, and the process carries on${yours ? ' (your pool)' : ''}`, async () => {
      const t = tagged();
      const pool = yours ? new pg.Pool({ connectionString: t.url, max: 1 }) : undefined;
      await withLockedRow({ connectionString: t.url, poolSize: 1, ...(pool && { pool }) }, async (l, ref) => {
        const claim = l.claim({ ...claimOf(ref.businessOperationId, 'w2', Date.now()), existing: true as const });
        await untilWaiting(t.name);
        await terminate(t.name);
        expect(LedgerError.isInstance(await claim.catch((e: unknown) => e))).toBe(true);
        expect(await l.get(id('other'))).toBeNull();
      });
      await pool?.end();
    });

  it('a migration whose session the server ends fails with LedgerError, and the process carries on', async () => {
    const t = tagged();
    const s = freshSchema('conn_migrate');
    const l = createPostgresLedger({ connectionString: t.url, schema: s });
    try {
      await holding('SELECT pg_advisory_xact_lock(hashtext($1))', [`retrysafe.migrate:${s}`], async () => {
        const ready = l.ready().catch((e: unknown) => e);
        await untilWaiting(t.name);
        await terminate(t.name);
        expect(LedgerError.isInstance(await ready)).toBe(true);
      });
      expect(await l.get(id('other'))).toBeNull();
    } finally {
      await l.close();
      await dropSchema(s);
    }
  });

  it('a wait for a free connection that lasts the time limit fails, and its statement is never sent', async () => {
    await withLockedRow({ poolSize: 1, queryTimeoutMs: 200 }, async (l, ref) => {
      // The second asks for the only connection before the first's statement is sent, so its wait ends first.
      const first = l.markDispatched(ref, Date.now()).catch((e: unknown) => e);
      const late = `late-${randomBytes(4).toString('hex')}`;
      const err = await l.claim(claimOf(late, 'w2', Date.now())).catch((e: unknown) => e);
      expect(LedgerError.isInstance(err)).toBe(true);
      expect((err as Error).message).toMatch(/^claim failed in PostgreSQL: no free connection within 200 ms/);
      await first;
      expect(await l.get(id(late))).toBeNull();
    });
  });

  it('more calls than connections each run once a connection is free; close() lets the calls under way finish', async () => {
    const t = tagged();
    const l = createPostgresLedger({ connectionString: t.url, schema, poolSize: 2 });
    await l.ready();
    const gets = await Promise.all([0, 1, 2, 3, 4, 5].map((i) => l.get(id(`busy-${i}`))));
    expect(gets).toEqual([null, null, null, null, null, null]);
    expect(await sessions(t.name)).toBe(2);
    const under = l.get(id('under-way'));
    await l.close();
    expect(await under).toBeNull();
    await expect(l.get(id('after'))).rejects.toThrow(/closed/);
    expect(await untilSessions(t.name, 0)).toBe(0);
  });

  it('idle connections close after idleTimeoutMs, and the ledger opens new ones when it needs them', async () => {
    const t = tagged();
    const s = freshSchema('conn_idle');
    const ledger = createPostgresLedger({ connectionString: t.url, schema: s, poolSize: 3, idleTimeoutMs: 100 });
    try {
      await ledger.ready();
      await Promise.all([1, 2, 3].map((i) => ledger.get(id(`idle-${i}`))));
      expect(await untilSessions(t.name, 0)).toBe(0);
      expect(await ledger.get(id('idle-again'))).toBeNull();
    } finally {
      await ledger.close();
      await dropSchema(s);
    }
  });

  it('close() ends every connection the ledger opened', async () => {
    const t = tagged();
    const s = freshSchema('conn_close');
    const ledger = createPostgresLedger({ connectionString: t.url, schema: s, poolSize: 3 });
    try {
      await ledger.ready();
      await Promise.all([1, 2, 3].map((i) => ledger.get(id(`close-${i}`))));
      expect(await sessions(t.name)).toBeGreaterThan(0);
    } finally {
      await ledger.close();
      await dropSchema(s);
    }
    expect(await untilSessions(t.name, 0)).toBe(0);
  });

  it('refuses a time limit, idle time or pool size that is not a number it can use', () => {
    expect(() => createPostgresLedger({ connectionString: url, queryTimeoutMs: -1 })).toThrow(/queryTimeoutMs/);
    expect(() => createPostgresLedger({ connectionString: url, idleTimeoutMs: Number.NaN })).toThrow(/idleTimeoutMs/);
    expect(() => createPostgresLedger({ connectionString: url, poolSize: 0 })).toThrow(/poolSize/);
  });
});
