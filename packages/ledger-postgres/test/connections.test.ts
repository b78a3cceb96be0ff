// The ledger's own connections (no `pool` option): one watchdog timer per ledger instead of pg.Pool's
// timers per query. What the timers were there for still holds: a statement that does not answer fails
// and its connection is never reused, a wait for a connection that lasts too long fails without sending
// anything, idle connections close.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Connections, QueryTimeoutError, transaction } from '../src/connections.js';
import { createPostgresLedger } from '../src/index.js';
import { databaseUrl, dropSchema, freshSchema } from './pg-test-db.js';

const url = databaseUrl();
const schema = freshSchema('connections');
let admin: pg.Client;

beforeAll(async () => {
  admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`CREATE SCHEMA "${schema}"`);
  await admin.query(`CREATE TABLE "${schema}".sent (tag text)`);
});
afterAll(async () => {
  await admin?.end();
  await dropSchema(schema);
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
    await new Promise((r) => setTimeout(r, 50));
    seen = await sessions(name);
  }
  return seen;
}

describe("the ledger's own connections", () => {
  it('a statement that does not answer in time fails, and its connection is never used again', async () => {
    const c = new Connections({ connectionString: url, max: 1, timeoutMs: 200, idleMs: 0 });
    try {
      const before = (await c.query<{ pid: number }>({ text: 'SELECT pg_backend_pid() AS pid' })).rows[0]!.pid;
      const err = await c.query({ text: 'SELECT pg_sleep(3)' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(QueryTimeoutError);
      // The only connection was closed with the statement still running: the next one is a new session.
      const after = (await c.query<{ pid: number }>({ text: 'SELECT pg_backend_pid() AS pid' })).rows[0]!.pid;
      expect(after).not.toBe(before);
    } finally {
      await c.end();
    }
  });

  it('a transaction whose statement does not answer in time fails: its rollback on the closed connection does not wait for ever', async () => {
    const c = new Connections({ connectionString: url, max: 1, timeoutMs: 200, idleMs: 0 });
    try {
      const client = await c.connect();
      const sleep = () => client.query({ text: 'SELECT pg_sleep(30)' });
      const settled = transaction(client, sleep).then(
        () => 'committed',
        (e: unknown) => e,
      );
      const late = new Promise((r) => setTimeout(() => r('never settled'), 15_000));
      expect(await Promise.race([settled, late])).toBeInstanceOf(QueryTimeoutError);
    } finally {
      await c.end();
    }
  });

  it('a named statement is prepared once on a connection, under its name, and runs again from there', async () => {
    const c = new Connections({ connectionString: url, max: 1, timeoutMs: 5_000, idleMs: 0 });
    try {
      for (const v of [1, 2])
        expect(
          (await c.query<{ v: number }>({ name: 'rs:test:echo', text: 'SELECT $1::int AS v', values: [v] })).rows,
        ).toEqual([{ v }]);
      const prepared = await c.query<{ name: string; statement: string }>({
        text: 'SELECT name, statement FROM pg_prepared_statements',
      });
      expect(prepared.rows).toEqual([{ name: 'rs:test:echo', statement: 'SELECT $1::int AS v' }]);
    } finally {
      await c.end();
    }
  });

  it('a wait for a free connection that lasts the time limit fails, and its statement is never sent', async () => {
    const c = new Connections({ connectionString: url, max: 1, timeoutMs: 200, idleMs: 0 });
    const held = await c.connect(); // the only connection, held (no statement running on it)
    try {
      const err = await c.query({ text: `INSERT INTO "${schema}".sent VALUES ('late')` }).catch((e: unknown) => e);
      expect((err as Error).message).toMatch(/no free connection within 200 ms/);
      held.release();
      // Given back: the connection serves the next statement; the expired one never ran.
      expect((await c.query<{ n: string }>({ text: `SELECT count(*) AS n FROM "${schema}".sent` })).rows[0]!.n).toBe(
        '0',
      );
    } finally {
      await c.end();
    }
  });

  it('more statements than connections each run once a connection is free; closing waits for busy connections', async () => {
    const c = new Connections({ connectionString: url, max: 2, timeoutMs: 5_000, idleMs: 0 });
    const pids = await Promise.all(
      [0, 1, 2, 3, 4, 5].map(() =>
        c.query<{ pid: number }>({ text: 'SELECT pg_sleep(0.05), pg_backend_pid() AS pid' }),
      ),
    );
    expect(new Set(pids.map((r) => r.rows[0]!.pid)).size).toBe(2);
    const busy = c.query<{ one: number }>({ text: 'SELECT pg_sleep(0.1), 1 AS one' });
    await c.end();
    expect((await busy).rows[0]!.one).toBe(1);
    await expect(c.query({ text: 'SELECT 1' })).rejects.toThrow(/closed/);
  });

  it('idle connections close after idleTimeoutMs, and the ledger opens new ones when it needs them', async () => {
    const t = tagged();
    const s = freshSchema('conn_idle');
    const ledger = createPostgresLedger({ connectionString: t.url, schema: s, poolSize: 3, idleTimeoutMs: 100 });
    try {
      await ledger.ready();
      await Promise.all([1, 2, 3].map((i) => ledger.get(`idle-${i}` as never)));
      expect(await untilSessions(t.name, 0)).toBe(0);
      expect(await ledger.get('idle-again' as never)).toBeNull();
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
      await Promise.all([1, 2, 3].map((i) => ledger.get(`close-${i}` as never)));
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
