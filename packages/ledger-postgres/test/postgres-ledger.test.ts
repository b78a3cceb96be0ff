import { setTimeout as sleep } from 'node:timers/promises';
import {
  type BusinessOperationId,
  type ClaimInput,
  type ClaimResult,
  type HandoffPacket,
  InvalidStateError,
  LeaseLostError,
  LedgerError,
  type ProviderKey,
  type Receipt,
} from '@retrysafe/contract';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresLedger, migrate, type PostgresLedger, type PostgresLedgerOptions } from '../src/index.js';
import { databaseUrl, dropSchema, freshSchema, startPgRelay, withSchemaPool } from './pg-test-db.js';

/** A claim's answer that holds a record (every kind but `gone`, which only an `existing` claim gets). */
function held(r: ClaimResult): Exclude<ClaimResult, { kind: 'gone' }> {
  if (r.kind === 'gone') throw new Error('claim: the row is gone');
  return r;
}

const url = databaseUrl();
const schema = freshSchema('ledger');
let ledger: PostgresLedger;
let admin: pg.Client;

beforeAll(async () => {
  ledger = createPostgresLedger({
    connectionString: url,
    schema,
    poolSize: 24,
    leaseClock: 'caller' /* simulated times (T0) */,
  });
  await ledger.ready();
  admin = new pg.Client({ connectionString: url });
  await admin.connect();
});
afterAll(async () => {
  await ledger?.close();
  await admin?.end();
  await dropSchema(schema);
});

let n = 0;
const T0 = 1_800_000_000_000;
function input(over: Partial<ClaimInput> = {}): ClaimInput {
  return {
    businessOperationId: `op-${++n}` as BusinessOperationId,
    provider: 'sandbox',
    operation: 'sandbox.orders.create',
    intentFingerprint: 'sha256:intent',
    paramsFingerprint: 'sha256:params',
    params: { amount: 1000, lines: [{ sku: 'A', qty: 2 }], note: 'grüße' },
    providerKey: 'rs-key' as ProviderKey,
    owner: 'w1',
    leaseMs: 1_000,
    now: T0,
    ...over,
  };
}
const packet = (id: BusinessOperationId): HandoffPacket => ({
  businessOperationId: id,
  provider: 'sandbox',
  operation: 'sandbox.orders.create',
  intentFingerprint: 'sha256:intent',
  providerKey: null,
  reason: 'retry-exhausted',
  explanation: 'test',
  attempts: [],
  lastKnown: { outcome: 'unknown' },
  safeNextActions: [{ action: 'resume', safe: true, why: 'same key' }],
  createdAt: new Date(T0).toISOString(),
});
const receipt = (id: BusinessOperationId, seq: number): Receipt =>
  ({
    businessOperationId: id,
    seq,
    kind: 'dispatch',
    outcome: 'succeeded',
    decision: { action: 'done', reason: 'ok' },
    hash: `h${seq}`,
    prevHash: null,
  }) as unknown as Receipt;

async function claimed(over: Partial<ClaimInput> = {}) {
  const res = await ledger.claim(input(over));
  if (res.kind !== 'claimed') throw new Error(`expected claimed, got ${res.kind}`);
  return res;
}

describe('migrations', () => {
  it('are recorded once per version and re-running them (even concurrently) applies nothing', async () => {
    await withSchemaPool('migrate', 6, async (pool, s) => {
      const reports = await Promise.all([1, 2, 3, 4, 5].map(() => migrate(pool, s)));
      expect(reports.flatMap((r) => r.applied)).toEqual([1]);
      expect((await migrate(pool, s)).applied).toEqual([]);
      const { rows } = await pool.query(`SELECT version FROM "${s}".retrysafe_schema_migrations ORDER BY version`);
      expect(rows.map((r) => r.version)).toEqual([1]);
      const idx = await pool.query(`SELECT indexname FROM pg_indexes WHERE schemaname = $1 ORDER BY indexname`, [s]);
      // A created_at index for listings and retention, and a partial index of open rows (recovery, the handoff queue).
      expect(idx.rows.map((r) => r.indexname)).toEqual([
        'retrysafe_operations_created_idx',
        'retrysafe_operations_open_idx',
        'retrysafe_operations_pkey',
        'retrysafe_schema_migrations_pkey',
      ]);
    });
  });

  it("a client the caller checked out stays the caller's: migrate neither releases it nor closes it", async () => {
    await withSchemaPool('migrate-client', 2, async (pool, s) => {
      const client = await pool.connect();
      try {
        expect((await migrate(client, s)).applied).toEqual([1]);
        await migrate(client, `${s}_missing_!`).catch(() => undefined); // refused before any statement
        expect((await client.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
        expect(pool.idleCount).toBe(0);
      } finally {
        client.release();
      }
    });
  });

  it('a hand-written statement cannot store a state no rule knows, a fence below 1 or half a lease', async () => {
    await withSchemaPool('rules', 2, async (pool, s) => {
      await migrate(pool, s);
      const t = `"${s}".retrysafe_operations`;
      await pool.query(`INSERT INTO ${t} (business_operation_id, provider, operation, intent_fingerprint, params_fingerprint, state, fence, lease_owner, lease_expires_at, created_at, updated_at)
        VALUES ('open', 'p', 'o', 'i', 'f', 'claimed', 1, 'w', 10, 1, 1)`);
      const refused = async (sql: string) =>
        (await pool.query(sql).catch((e: { code?: string }) => e)) as { code?: string };
      for (const sql of [
        `UPDATE ${t} SET state = 'done' WHERE business_operation_id = 'open'`,
        `UPDATE ${t} SET state = NULL WHERE business_operation_id = 'open'`,
        `UPDATE ${t} SET fence = 0 WHERE business_operation_id = 'open'`,
        `UPDATE ${t} SET lease_owner = NULL WHERE business_operation_id = 'open'`,
        `UPDATE ${t} SET lease_expires_at = NULL WHERE business_operation_id = 'open'`,
        `INSERT INTO ${t} (business_operation_id, provider, operation, intent_fingerprint, params_fingerprint, state, fence, created_at, updated_at) VALUES ('x', 'p', 'o', 'i', 'f', 'Claimed', 1, 1, 1)`,
        `INSERT INTO ${t} (business_operation_id, provider, operation, intent_fingerprint, params_fingerprint, state, fence, created_at, updated_at) VALUES ('x', 'p', 'o', 'i', 'f', 'claimed', -1, 1, 1)`,
        `INSERT INTO ${t} (business_operation_id, provider, operation, intent_fingerprint, params_fingerprint, state, fence, lease_owner, created_at, updated_at) VALUES ('x', 'p', 'o', 'i', 'f', 'claimed', 1, 'w', 1, 1)`,
      ]) {
        // 23514 check_violation (23502 not_null_violation for a NULL state).
        expect((await refused(sql)).code, sql).toBe(sql.includes('state = NULL') ? '23502' : '23514');
      }
      expect((await pool.query(`SELECT count(*) AS n FROM ${t} WHERE business_operation_id = 'x'`)).rows[0].n).toBe(
        '0',
      );
      expect((await pool.query(`SELECT state, fence, lease_owner FROM ${t}`)).rows).toEqual([
        { state: 'claimed', fence: '1', lease_owner: 'w' },
      ]);
    });
  });

  it('a hand-written statement cannot store JSON that does not parse (so no row is unreadable to list or recoverCandidates)', async () => {
    await withSchemaPool('cutjson', 2, async (pool, s) => {
      await migrate(pool, s);
      const t = `"${s}".retrysafe_operations`;
      await pool.query(`INSERT INTO ${t} (business_operation_id, provider, operation, intent_fingerprint, params_fingerprint, params, state, fence, created_at, updated_at)
        VALUES ('open', 'p', 'o', 'i', 'f', '{}', 'claimed', 1, 1, 1)`);
      for (const column of ['params', 'result', 'handoff', 'resolution']) {
        const e = await pool
          .query(`UPDATE ${t} SET ${column} = '{"cut":' WHERE business_operation_id = 'open'`)
          .catch((err: { code?: string }) => err);
        expect((e as { code?: string }).code).toBe('22P02'); // invalid_text_representation
      }
      const l = createPostgresLedger({ pool, schema: s, migrate: false });
      const told: string[] = [];
      const onUnreadable = (id: string) => told.push(id);
      expect((await l.list({ onUnreadable })).map((r) => r.businessOperationId)).toEqual(['open']);
      expect(await l.recoverCandidates(10, undefined, onUnreadable)).toHaveLength(1);
      expect(told).toEqual([]);
    });
  });

  it('a hand-off packet a statement wrote without its lists is unreadable: listed around and told by id', async () => {
    const packets = { kept: '{"attempts":[],"safeNextActions":[]}', bare: '{}' };
    await withRawRows('barepacket', 'handed-off', 'handoff', packets, async (l, pool, t) => {
      const told: string[] = [];
      const listed = await l.list({ states: ['handed-off'], onUnreadable: (id) => told.push(id) });
      expect(listed.map((r) => r.businessOperationId)).toEqual(['kept']);
      expect(told).toEqual(['bare']);
      await expect(l.get('bare' as never)).rejects.toThrow(/no valid handoff/);
      // First in the order, it takes no place of a listing's limit or a recovery's.
      const first = await l.list({ limit: 1, onUnreadable: (id) => told.push(id) });
      expect([first.map((r) => r.businessOperationId), told]).toEqual([['kept'], ['bare', 'bare']]);
      await pool.query(
        `UPDATE ${t} SET state = 'claimed', updated_at = CASE business_operation_id WHEN 'bare' THEN 0 ELSE 5 END`,
      );
      expect((await l.recoverCandidates(10, 1, () => undefined)).map((r) => r.businessOperationId)).toEqual(['kept']);
    });
  });

  it('an exporting prune keeps and tells a row whose receipts text is cut; the others are exported and pruned', async () => {
    await withRawRows('cutreceipts', 'succeeded', 'receipts', { done: '[]', cut: '[{"seq":' }, async (l, pool, t) => {
      const exported: string[] = [];
      const onPrune = (r: { businessOperationId: string }) => void exported.push(r.businessOperationId);
      await expect(l.prune!({ before: 10, onPrune })).rejects.toThrow(/cut or corrupt/);
      const told: string[] = [];
      const report = await l.prune!({ before: 10, onPrune, onUnreadable: (id) => told.push(id) });
      expect(report).toMatchObject({ pruned: 1 });
      expect(exported.at(-1)).toBe('done');
      expect(told).toEqual(['cut']);
      expect((await pool.query(`SELECT business_operation_id FROM ${t}`)).rows).toEqual([
        { business_operation_id: 'cut' },
      ]);
    });
  });

  it('an exporting prune keeps and tells a row whose record cannot be read (a packet without its lists); the others are exported and pruned', async () => {
    const packets = { kept: '{"attempts":[],"safeNextActions":[]}', bare: '{}' };
    await withRawRows('barepruned', 'abandoned', 'handoff', packets, async (l, pool, t) => {
      const exported: string[] = [];
      const told: string[] = [];
      const onPrune = (r: { businessOperationId: string }) => void exported.push(r.businessOperationId);
      const report = await l.prune!({ before: 10, onPrune, onUnreadable: (id) => told.push(id) });
      expect([report.pruned, exported, told]).toEqual([1, ['kept'], ['bare']]);
      expect((await pool.query(`SELECT business_operation_id FROM ${t}`)).rows).toEqual([
        { business_operation_id: 'bare' },
      ]);
    });
  });

  it('refuses a schema written by a newer package version', async () => {
    await withSchemaPool('newer', 2, async (pool, s) => {
      await migrate(pool, s);
      await pool.query(
        `INSERT INTO "${s}".retrysafe_schema_migrations (version, name) VALUES (999, 'from the future')`,
      );
      const err = await migrate(pool, s).catch((e) => e);
      expect(LedgerError.isInstance(err)).toBe(true);
      expect(err.message).toMatch(/999.*upgrade/);
    });
  });

  it('migrate: false refuses a schema holding no ledger (creating nothing) or one of another version, before any statement', async () => {
    await withSchemaPool('nomigrate', 2, async (pool, s) => {
      const l = createPostgresLedger({ pool, schema: s, migrate: false });
      await expect(l.list()).rejects.toThrow(new RegExp(`schema ${s} holds no retrysafe ledger`));
      await expect(l.list()).rejects.toMatchObject({ reason: 'not-a-ledger' });
      const { rows } = await pool.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [s]);
      expect(rows).toEqual([]);
      await migrate(pool, s);
      expect(await l.list()).toEqual([]);
      await pool.query(`INSERT INTO "${s}".retrysafe_schema_migrations (version, name) VALUES (999, 'future')`);
      const later = createPostgresLedger({ pool, schema: s, migrate: false });
      await expect(later.get('x' as never)).rejects.toThrow(/at migration 999.*upgrade the package/);
    });
    // A database that cannot be reached is a LedgerError there too, from ready() as from any method.
    const down = createPostgresLedger({ connectionString: 'postgres://postgres@127.0.0.1:1/x', migrate: false });
    const err = await down.ready().catch((e: unknown) => e);
    await down.close();
    expect(LedgerError.isInstance(err)).toBe(true);
    expect((err as Error).message).toMatch(/checking the schema failed in PostgreSQL \(ECONNREFUSED\)/);
  });

  it('rejects a schema name that is not a plain identifier', () => {
    for (const bad of ['Public', 'a;drop table x', '1abc', '', 'x'.repeat(64)]) {
      expect(() => createPostgresLedger({ connectionString: url, schema: bad })).toThrow(LedgerError);
    }
    expect(() => createPostgresLedger({} as never)).toThrow(/connectionString or a pool/);
  });
});

describe('statement names', () => {
  it('a schema name as long as PostgreSQL keeps (63 characters) gives every statement its own prepared name on a connection', async () => {
    // PostgreSQL keeps 63 bytes of a prepared statement's name: `rs:<schema>:<statement>` cut there is one name for all.
    const s = `${freshSchema('long_name')}_`.padEnd(63, 'x');
    const l = createPostgresLedger({ connectionString: url, schema: s, poolSize: 1, leaseClock: 'caller' });
    try {
      const c = held(await l.claim(input()));
      const ref = { businessOperationId: c.record.businessOperationId, fence: c.record.fence };
      await l.markDispatched(ref, T0 + 1);
      await l.renewLease(ref, 1_000, T0 + 2);
      await l.setState(ref, { state: 'unknown', now: T0 + 3 });
      await l.setState(ref, { state: 'unknown', now: T0 + 4 }); // read back in full after the first
      const done = await l.setState(ref, {
        state: 'succeeded',
        now: T0 + 5,
        receipt: receipt(ref.businessOperationId, 1),
        durability: 'deferrable',
      });
      expect(done).toEqual(await l.get(ref.businessOperationId));
      expect(await l.receipts(ref.businessOperationId)).toHaveLength(1);
    } finally {
      await l.close();
      await dropSchema(s);
    }
  });
});

describe('claim', () => {
  it('creates a new operation with fence 1 and a lease, and keeps the params intact', async () => {
    const i = input();
    const res = held(await ledger.claim(i));
    expect(res).toMatchObject({ kind: 'claimed', takenOver: false });
    expect(res.record).toMatchObject({
      businessOperationId: i.businessOperationId,
      state: 'claimed',
      fence: 1,
      leaseOwner: 'w1',
      leaseExpiresAt: T0 + 1_000,
      attemptCount: 0,
      firstDispatchedAt: null,
      createdAt: T0,
      params: i.params,
      providerKey: 'rs-key',
    });
    expect(await ledger.get(i.businessOperationId)).toEqual(res.record);
  });

  it('the record a new claim returns (built from what it sent, not read back) is exactly the one the row reads as, on either clock', async () => {
    const dbLedger = createPostgresLedger({ connectionString: url, schema, poolSize: 2 });
    try {
      const cases: Array<[PostgresLedger, Partial<ClaimInput>]> = [
        [ledger, {}],
        [ledger, { dispatch: true }],
        [ledger, { providerKey: null, params: undefined }],
        [ledger, { params: [1, 'two', { three: null, ключ: '\u2028' }], dispatch: true }],
        [ledger, { params: { dropped: undefined, kept: 0, nested: { a: [] } } }],
        [dbLedger, { now: Date.now(), dispatch: true }],
        [dbLedger, { now: Date.now(), providerKey: null }],
      ];
      for (const [l, over] of cases) {
        const res = await l.claim(input(over));
        if (res.kind !== 'claimed') throw new Error(`expected claimed, got ${res.kind}`);
        // toStrictEqual: the same keys, the same nulls (not undefined), the same types.
        expect(res.record).toStrictEqual(await l.get(res.record.businessOperationId));
      }
    } finally {
      await dbLedger.close();
    }
  });

  it('answers busy while another worker holds a live lease, and hands it over only after expiry', async () => {
    const first = await claimed();
    const id = first.record.businessOperationId;
    const busy = await ledger.claim(input({ businessOperationId: id, owner: 'w2', now: T0 + 999 }));
    expect(busy.kind).toBe('busy');
    const taken = await ledger.claim(input({ businessOperationId: id, owner: 'w2', now: T0 + 1_000 }));
    expect(taken).toMatchObject({
      kind: 'claimed',
      takenOver: true,
      record: { fence: 2, leaseOwner: 'w2', state: 'claimed' },
    });
  });

  it('a lease length that is not a whole number of ms (45 s × 1.1) claims, renews and is taken over as on the other ledgers', async () => {
    const leaseMs = 45_000 * 1.1; // 49500.00000000001: a policy computed this way passes the runner's checks
    const first = await claimed({ leaseMs });
    const id = first.record.businessOperationId;
    expect(first.record.leaseExpiresAt).toBeGreaterThanOrEqual(T0 + leaseMs);
    const ref = { businessOperationId: id, fence: 1 };
    await ledger.renewLease(ref, leaseMs, T0 + 1_000);
    expect((await ledger.get(id))!.leaseExpiresAt).toBeGreaterThanOrEqual(T0 + 1_000 + leaseMs);
    const taken = held(await ledger.claim(input({ businessOperationId: id, owner: 'w2', leaseMs, now: T0 + 60_000 })));
    expect(taken).toMatchObject({ kind: 'claimed', takenOver: true, record: { fence: 2, leaseOwner: 'w2' } });
    expect(taken.record.leaseExpiresAt).toBeGreaterThanOrEqual(T0 + 60_000 + leaseMs);
  });

  it('lets exactly one of many concurrent claimers win, for a new operation and for a takeover', async () => {
    const id = `race-${++n}` as BusinessOperationId;
    const first = await Promise.all(
      Array.from({ length: 16 }, (_, w) => ledger.claim(input({ businessOperationId: id, owner: `w${w}` }))),
    );
    expect(first.filter((r) => r.kind === 'claimed')).toHaveLength(1);
    expect(first.filter((r) => r.kind === 'busy')).toHaveLength(15);
    const later = T0 + 5_000;
    const second = await Promise.all(
      Array.from({ length: 16 }, (_, w) =>
        ledger.claim(input({ businessOperationId: id, owner: `x${w}`, now: later })),
      ),
    );
    const winners = second.filter((r) => r.kind === 'claimed');
    expect(winners).toHaveLength(1);
    expect(winners[0]!.record.fence).toBe(2);
  });

  it('reports a conflict for another operation or intent under the same id, and writes nothing', async () => {
    const first = await claimed();
    const id = first.record.businessOperationId;
    const later = T0 + 10_000;
    const op = await ledger.claim(input({ businessOperationId: id, operation: 'sandbox.orders.cancel', now: later }));
    expect(op).toMatchObject({ kind: 'conflict', field: 'operation' });
    const intent = await ledger.claim(
      input({ businessOperationId: id, intentFingerprint: 'sha256:other', now: later }),
    );
    expect(intent).toMatchObject({ kind: 'conflict', field: 'intent' });
    expect((await ledger.get(id))!.fence).toBe(1);
  });

  it('answers terminal for a finished operation, with its result to adopt', async () => {
    const { record } = await claimed();
    const ref = { businessOperationId: record.businessOperationId, fence: record.fence };
    await ledger.markDispatched(ref, T0 + 1);
    await ledger.setState(ref, {
      state: 'succeeded',
      lastOutcome: 'succeeded',
      result: { id: 'ord_1', tags: ['a', 'b'] },
      providerRef: 'ord_1',
      now: T0 + 2,
    });
    const again = await ledger.claim(
      input({ businessOperationId: record.businessOperationId, owner: 'w2', now: T0 + 3 }),
    );
    expect(again).toMatchObject({
      kind: 'terminal',
      record: { state: 'succeeded', result: { id: 'ord_1', tags: ['a', 'b'] }, providerRef: 'ord_1', leaseOwner: null },
    });
  });

  it('rejects malformed input with a LedgerError', async () => {
    await expect(ledger.claim(input({ owner: '' }))).rejects.toThrow(LedgerError);
    await expect(ledger.claim(input({ leaseMs: 0 }))).rejects.toThrow(/leaseMs/);
    await expect(ledger.claim(input({ now: Number.NaN }))).rejects.toThrow(/now/);
  });

  it('a value that is not JSON (a BigInt in the params or the packet) is a LedgerError, and nothing is written (a result: the suite)', async () => {
    const fresh = input({ params: { amount: 10n } });
    await expect(ledger.claim(fresh)).rejects.toSatisfy(LedgerError.isInstance);
    expect(await ledger.get(fresh.businessOperationId)).toBeNull();
    const { record } = await claimed();
    const ref = { businessOperationId: record.businessOperationId, fence: 1 };
    const bad = { ...packet(record.businessOperationId), lastKnown: { outcome: 'unknown', extra: 1n } } as never;
    await expect(ledger.handOff(ref, bad, T0 + 1)).rejects.toSatisfy(LedgerError.isInstance);
    expect(await ledger.get(record.businessOperationId)).toEqual(record);
  });
});

describe('fencing', () => {
  it("refuses every write with a stale token once the lease was taken over, and keeps the new owner's state", async () => {
    const old = await claimed();
    const id = old.record.businessOperationId;
    const stale = { businessOperationId: id, fence: old.record.fence };
    const fresh = await claimed({ businessOperationId: id, owner: 'w2', now: T0 + 2_000 });
    const current = { businessOperationId: id, fence: fresh.record.fence };
    await ledger.markDispatched(current, T0 + 2_001);

    const writes: [string, () => Promise<unknown>][] = [
      ['markDispatched', () => ledger.markDispatched(stale, T0 + 2_002)],
      ['setState', () => ledger.setState(stale, { state: 'succeeded', result: { wrong: true }, now: T0 + 2_002 })],
      ['handOff', () => ledger.handOff(stale, packet(id), T0 + 2_002)],
      ['appendReceipt', () => ledger.appendReceipt(stale, receipt(id, 1))],
      ['release', () => ledger.release(stale)],
      ['renewLease', () => ledger.renewLease(stale, 60_000, T0 + 2_002)],
    ];
    for (const [name, write] of writes) {
      const err = await write().catch((e) => e);
      expect(LeaseLostError.isInstance(err), name).toBe(true);
    }
    const after = await ledger.get(id);
    expect(after).toMatchObject({
      state: 'dispatched',
      fence: 2,
      leaseOwner: 'w2',
      leaseExpiresAt: T0 + 3_000,
      attemptCount: 1,
      result: null,
    });
    expect(await ledger.receipts(id)).toEqual([]);
  });

  it('a write racing a takeover either lands before it or is refused, never after it', async () => {
    for (let round = 0; round < 10; round++) {
      const old = await claimed();
      const id = old.record.businessOperationId;
      const stale = { businessOperationId: id, fence: 1 };
      const [write, take] = await Promise.allSettled([
        ledger.setState(stale, { state: 'unknown', lastOutcome: 'unknown', now: T0 + 2_000 }),
        ledger.claim(input({ businessOperationId: id, owner: 'w2', now: T0 + 2_000 })),
      ]);
      expect(take.status).toBe('fulfilled');
      const rec = await ledger.get(id);
      expect(rec!.fence).toBe(2);
      if (write.status === 'rejected') expect(LeaseLostError.isInstance(write.reason)).toBe(true);
      // Either way the record is consistent: the state is one the old owner wrote before the takeover, or untouched.
      expect(['claimed', 'unknown']).toContain(rec!.state);
    }
  });

  it('writes on an id the ledger does not hold fail as LedgerError, not as a lost lease', async () => {
    const err = await ledger
      .markDispatched({ businessOperationId: 'nope' as BusinessOperationId, fence: 1 }, T0)
      .catch((e) => e);
    expect(LedgerError.isInstance(err)).toBe(true);
    expect(err.message).toMatch(/no operation nope/);
  });
});

describe('state machine', () => {
  it('markDispatched counts provider calls and keeps the first dispatch time', async () => {
    const { record } = await claimed();
    const ref = { businessOperationId: record.businessOperationId, fence: record.fence };
    const a = await ledger.markDispatched(ref, T0 + 10);
    await ledger.setState(ref, { state: 'unknown', lastOutcome: 'unknown', now: T0 + 20 });
    const b = await ledger.markDispatched(ref, T0 + 30);
    expect(a).toMatchObject({ state: 'dispatched', attemptCount: 1, firstDispatchedAt: T0 + 10 });
    expect(b).toMatchObject({
      state: 'dispatched',
      attemptCount: 2,
      firstDispatchedAt: T0 + 10,
      updatedAt: T0 + 30,
      lastOutcome: 'unknown',
    });
  });

  it('setState patches only the given fields; a terminal state releases the lease', async () => {
    const { record } = await claimed();
    const ref = { businessOperationId: record.businessOperationId, fence: record.fence };
    await ledger.setState(ref, {
      state: 'in-progress',
      lastOutcome: 'in-progress',
      statusRef: '/status/1',
      now: T0 + 1,
    });
    const mid = await ledger.setState(ref, { state: 'reconciling', now: T0 + 2 });
    expect(mid).toMatchObject({
      state: 'reconciling',
      statusRef: '/status/1',
      lastOutcome: 'in-progress',
      leaseOwner: 'w1',
    });
    const end = await ledger.setState(ref, {
      state: 'rejected',
      lastOutcome: 'rejected',
      statusRef: null,
      now: T0 + 3,
    });
    expect(end).toMatchObject({ state: 'rejected', statusRef: null, leaseOwner: null, leaseExpiresAt: null });
  });

  it('setState writes exactly the fields its patch carries (null included) and keeps the others, for every combination, remembered or read back', async () => {
    // One statement per combination of fields: each of the 16 on a row whose fields all hold values, twice
    // (the first write is of the remembered row version, the second, after another ledger's write, is read back).
    const other = createPostgresLedger({
      connectionString: url,
      schema,
      poolSize: 1,
      migrate: false,
      leaseClock: 'caller',
    });
    try {
      const fields = ['lastOutcome', 'result', 'providerRef', 'statusRef'] as const;
      for (let mask = 0; mask < 16; mask++) {
        for (const readBack of [false, true]) {
          const { record } = await claimed();
          const ref = { businessOperationId: record.businessOperationId, fence: record.fence };
          const full = {
            lastOutcome: 'unknown',
            result: { was: 1 },
            providerRef: 'ref-was',
            statusRef: '/was',
          } as const;
          await ledger.setState(ref, { state: 'in-progress', now: T0 + 1, ...full });
          if (readBack) await other.renewLease(ref, 5_000, T0 + 2);
          const patch: Record<string, unknown> = {};
          fields.forEach((f, bit) => {
            if (mask & (1 << bit))
              patch[f] =
                bit % 2 === 0
                  ? null
                  : {
                      lastOutcome: 'in-progress',
                      result: { now: [mask] },
                      providerRef: `ref-${mask}`,
                      statusRef: `/s/${mask}`,
                    }[f];
          });
          const out = await ledger.setState(ref, {
            state: mask % 2 ? 'reconciling' : 'succeeded',
            now: T0 + 3,
            ...patch,
          });
          const want = Object.fromEntries(fields.map((f) => [f, f in patch ? patch[f] : full[f]]));
          expect(out, `fields ${mask}, read back ${readBack}`).toMatchObject({ ...want, updatedAt: T0 + 3 });
          expect(await ledger.get(ref.businessOperationId)).toEqual(out);
        }
      }
    } finally {
      await other.close();
    }
  });

  it('refuses handed-off and abandoned through setState, and unknown states', async () => {
    const { record } = await claimed();
    const ref = { businessOperationId: record.businessOperationId, fence: record.fence };
    await expect(ledger.setState(ref, { state: 'handed-off', now: T0 })).rejects.toThrow(/use handOff/);
    await expect(ledger.setState(ref, { state: 'abandoned', now: T0 })).rejects.toThrow(/resolve/);
    await expect(ledger.setState(ref, { state: 'done' as never, now: T0 })).rejects.toThrow(LedgerError);
    expect((await ledger.get(record.businessOperationId))!.state).toBe('claimed');
  });

  it('a terminal operation is not dispatched, moved or handed off again, even with the current token; renewing it is a no-op', async () => {
    const { record } = await claimed();
    const ref = { businessOperationId: record.businessOperationId, fence: record.fence };
    await ledger.setState(ref, { state: 'succeeded', result: { ok: 1 }, now: T0 + 1 });
    await expect(ledger.markDispatched(ref, T0 + 2)).rejects.toThrow(InvalidStateError);
    await expect(ledger.setState(ref, { state: 'unknown', now: T0 + 2 })).rejects.toThrow(InvalidStateError);
    await expect(ledger.handOff(ref, packet(ref.businessOperationId), T0 + 2)).rejects.toThrow(InvalidStateError);
    await ledger.renewLease(ref, 1_000, T0 + 2);
    expect(await ledger.get(ref.businessOperationId)).toMatchObject({
      state: 'succeeded',
      attemptCount: 0,
      leaseOwner: null,
      leaseExpiresAt: null,
      updatedAt: T0 + 1,
    });
  });

  it('release drops the lease without changing state, so another worker may claim at once', async () => {
    const { record } = await claimed();
    const ref = { businessOperationId: record.businessOperationId, fence: record.fence };
    await ledger.markDispatched(ref, T0 + 1);
    await ledger.release(ref);
    expect(await ledger.get(record.businessOperationId)).toMatchObject({
      state: 'dispatched',
      leaseOwner: null,
      leaseExpiresAt: null,
    });
    const next = await ledger.claim(
      input({ businessOperationId: record.businessOperationId, owner: 'w2', now: T0 + 2 }),
    );
    expect(next).toMatchObject({ kind: 'claimed', takenOver: true, record: { state: 'dispatched', fence: 2 } });
  });

  it('renewLease extends a held lease', async () => {
    const { record } = await claimed();
    const ref = { businessOperationId: record.businessOperationId, fence: record.fence };
    await ledger.renewLease(ref, 5_000, T0 + 900);
    expect((await ledger.get(record.businessOperationId))!.leaseExpiresAt).toBe(T0 + 5_900);
    expect(
      (await ledger.claim(input({ businessOperationId: record.businessOperationId, owner: 'w2', now: T0 + 5_000 })))
        .kind,
    ).toBe('busy');
  });
});

describe('handoff, resume and resolve', () => {
  it('handOff stores the packet, takes its last known outcome and releases the lease; resume re-claims it with a new fence', async () => {
    const { record } = await claimed();
    const id = record.businessOperationId;
    const p = { ...packet(id), lastKnown: { outcome: 'unknown' as const, providerRef: 'ord_7' } };
    const ho = await ledger.handOff({ businessOperationId: id, fence: 1 }, p, T0 + 5);
    expect(ho).toMatchObject({
      state: 'handed-off',
      leaseOwner: null,
      lastOutcome: 'unknown',
      providerRef: 'ord_7',
      handoff: { reason: 'retry-exhausted', businessOperationId: id },
    });
    expect((await ledger.claim(input({ businessOperationId: id, owner: 'w2', now: T0 + 6 }))).kind).toBe('terminal');
    const resumed = await ledger.claim(input({ businessOperationId: id, owner: 'w2', now: T0 + 6, resume: true }));
    expect(resumed).toMatchObject({
      kind: 'claimed',
      takenOver: true,
      record: { state: 'claimed', fence: 2, leaseOwner: 'w2', resolution: { action: 'resume', at: T0 + 6, by: 'w2' } },
    });
    await expect(
      ledger.setState({ businessOperationId: id, fence: 1 }, { state: 'rejected', now: T0 + 7 }),
    ).rejects.toThrow(LeaseLostError);
  });

  it("mark-done and abandon resolve a handed-off operation, and a worker's old token cannot undo them", async () => {
    const a = (await claimed()).record.businessOperationId;
    const b = (await claimed()).record.businessOperationId;
    await ledger.handOff({ businessOperationId: a, fence: 1 }, packet(a), T0 + 1);
    await ledger.handOff({ businessOperationId: b, fence: 1 }, packet(b), T0 + 1);
    const done = await ledger.resolve(a, { action: 'mark-done', providerRef: 'ord_9', by: 'ops-person' }, T0 + 2);
    expect(done).toMatchObject({
      state: 'succeeded',
      providerRef: 'ord_9',
      resolution: { action: 'mark-done', providerRef: 'ord_9', at: T0 + 2, by: 'ops-person' },
    });
    const gone = await ledger.resolve(b, { action: 'abandon' }, T0 + 2);
    expect(gone).toMatchObject({ state: 'abandoned', resolution: { action: 'abandon', at: T0 + 2 } });
    await expect(
      ledger.setState({ businessOperationId: a, fence: 1 }, { state: 'rejected', now: T0 + 3 }),
    ).rejects.toThrow(InvalidStateError);
    expect((await ledger.get(a))!.state).toBe('succeeded');
  });

  it('refuses to resolve an operation that is not handed off, or does not exist', async () => {
    const { record } = await claimed();
    await expect(ledger.resolve(record.businessOperationId, { action: 'abandon' }, T0)).rejects.toThrow(
      InvalidStateError,
    );
    await expect(ledger.resolve('missing' as BusinessOperationId, { action: 'abandon' }, T0)).rejects.toThrow(
      /no operation missing/,
    );
    await expect(ledger.resolve(record.businessOperationId, { action: 'resume' } as never, T0)).rejects.toThrow(
      LedgerError,
    );
    await ledger.handOff(
      { businessOperationId: record.businessOperationId, fence: 1 },
      packet(record.businessOperationId),
      T0 + 1,
    );
    await expect(ledger.resolve(record.businessOperationId, { action: 'mark-done' }, T0 + 2)).rejects.toThrow(
      /provider reference/,
    );
    expect((await ledger.get(record.businessOperationId))!.state).toBe('handed-off');
  });
});

describe('receipts', () => {
  it('appends in seq order and refuses a gap or a repeat', async () => {
    const { record } = await claimed();
    const id = record.businessOperationId;
    const ref = { businessOperationId: id, fence: 1 };
    await expect(ledger.appendReceipt(ref, receipt(id, 0))).rejects.toThrow(/expected 1/);
    await ledger.appendReceipt(ref, receipt(id, 1));
    await ledger.appendReceipt(ref, receipt(id, 2));
    await expect(ledger.appendReceipt(ref, receipt(id, 2))).rejects.toThrow(/seq 2 for .*: expected 3/);
    await expect(ledger.appendReceipt(ref, receipt(id, 5))).rejects.toThrow(/expected 3/);
    await expect(ledger.appendReceipt(ref, receipt('other' as BusinessOperationId, 3))).rejects.toThrow(
      /belongs to other/,
    );
    expect((await ledger.receipts(id)).map((r) => r.seq)).toEqual([1, 2]);
  });

  it('a receipt whose seq is not a number is refused by every write that carries one, as the contract refuses it, and nothing is written', async () => {
    const { record } = await claimed();
    const id = record.businessOperationId;
    const ref = { businessOperationId: id, fence: 1 };
    const asText = { ...receipt(id, 1), seq: '1' } as unknown as Receipt;
    // The remembered operation's write, then the same writes sent in full (another ledger has no memory of it).
    const other = createPostgresLedger({ connectionString: url, schema, leaseClock: 'caller' });
    try {
      for (const l of [ledger, other]) {
        await expect(l.appendReceipt(ref, asText)).rejects.toThrow(LedgerError);
        await expect(l.setState(ref, { state: 'succeeded', now: T0 + 1, receipt: asText })).rejects.toThrow(
          LedgerError,
        );
        await expect(l.handOff(ref, packet(id), T0 + 1, asText)).rejects.toThrow(LedgerError);
      }
    } finally {
      await other.close();
    }
    expect(await ledger.receipts(id)).toEqual([]);
    expect(await ledger.get(id)).toMatchObject({ state: 'claimed', receiptChain: { head: null, length: 0 } });
  });
});

describe('receipts edited from outside', () => {
  it('receipts stored as JSON that is not an array are a LedgerError for reads and appends, and no append is written onto them', async () => {
    const other = createPostgresLedger({ connectionString: url, schema, leaseClock: 'caller' });
    try {
      for (const text of ['null', '{}', '{"seq":1}']) {
        const { record } = await claimed();
        const id = record.businessOperationId;
        const ref = { businessOperationId: id, fence: 1 };
        await ledger.appendReceipt(ref, receipt(id, 1));
        await admin.query(
          `UPDATE "${schema}".retrysafe_operations SET receipts = $2 WHERE business_operation_id = $1`,
          [id, text],
        );
        // The remembered operation's write, then the same write sent in full.
        for (const l of [ledger, other]) {
          await expect(l.receipts(id)).rejects.toThrow(LedgerError);
          await expect(l.appendReceipt(ref, receipt(id, 2))).rejects.toThrow(/not a JSON array/);
          await expect(l.setState(ref, { state: 'succeeded', now: T0 + 1, receipt: receipt(id, 2) })).rejects.toThrow(
            /not a JSON array/,
          );
        }
        const { rows } = await admin.query(
          `SELECT receipts, state FROM "${schema}".retrysafe_operations WHERE business_operation_id = $1`,
          [id],
        );
        expect(rows[0]).toEqual({ receipts: text, state: 'claimed' });
      }
    } finally {
      await other.close();
    }
  });
});

describe('receipts emptied from outside', () => {
  it('a receipt appended to receipts stored as an empty array is stored as valid JSON', async () => {
    const { record } = await claimed();
    const id = record.businessOperationId;
    const ref = { businessOperationId: id, fence: 1 };
    await ledger.appendReceipt(ref, receipt(id, 1));
    for (const text of ['[]', '[ ]']) {
      await admin.query(`UPDATE "${schema}".retrysafe_operations SET receipts = $2 WHERE business_operation_id = $1`, [
        id,
        text,
      ]);
      const seq = (await ledger.get(id))!.receiptChain.length + 1;
      await ledger.appendReceipt(ref, receipt(id, seq));
      expect((await ledger.receipts(id)).map((r) => r.seq)).toEqual([seq]);
    }
  });
});

describe('recovery and listing', () => {
  it('a database whose collation is not C (ICU) still lists operations of one millisecond by id in code-unit order, as the other ledgers do', async () => {
    const own = freshSchema('collation');
    const l = createPostgresLedger({ connectionString: url, schema: own, leaseClock: 'caller' });
    try {
      await l.ready();
      // As on a database created with a language's collation (the usual en_US.UTF-8 or an ICU locale).
      await admin.query(
        `ALTER TABLE "${own}".retrysafe_operations ALTER COLUMN business_operation_id TYPE text COLLATE "und-x-icu"`,
      );
      const names = ['Zeta', 'alpha', 'a_b', 'a-b', 'aB', 'ab', 'A9'];
      for (const name of names) await l.claim(input({ businessOperationId: `same-${name}` as BusinessOperationId }));
      const ids = names.map((name) => `same-${name}`).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      expect((await l.list()).map((r) => r.businessOperationId)).toEqual(ids);
      expect((await l.list({ newestFirst: true, limit: 3 })).map((r) => r.businessOperationId)).toEqual(
        ids.slice().reverse().slice(0, 3),
      );
    } finally {
      await l.close();
      await dropSchema(own);
    }
  });

  it('recoverCandidates lists non-terminal operations whose lease is absent or expired, and nothing else', async () => {
    const s = freshSchema('recover');
    const l = createPostgresLedger({ connectionString: url, schema: s, leaseClock: 'caller', poolSize: 2 });
    try {
      const mk = async (id: string, leaseMs: number) => {
        const r = held(await l.claim(input({ businessOperationId: id as BusinessOperationId, leaseMs })));
        return { businessOperationId: r.record.businessOperationId, fence: r.record.fence };
      };
      const expired = await mk('expired', 100);
      await l.markDispatched(expired, T0 + 1);
      await mk('live', 60_000);
      const released = await mk('released', 60_000);
      await l.release(released);
      const finished = await mk('finished', 100);
      await l.setState(finished, { state: 'succeeded', now: T0 + 1 });
      const handed = await mk('handed', 100);
      await l.handOff(handed, packet(handed.businessOperationId), T0 + 1);
      const ids = (await l.recoverCandidates(T0 + 1_000)).map((r) => r.businessOperationId).sort();
      expect(ids).toEqual(['expired', 'released']);
      expect(await l.recoverCandidates(T0 + 1_000, 1)).toHaveLength(1);
      expect((await l.recoverCandidates(T0 + 50)).map((r) => r.businessOperationId)).toEqual(['released']);

      expect((await l.list({ states: ['succeeded', 'handed-off'] })).map((r) => r.businessOperationId).sort()).toEqual([
        'finished',
        'handed',
      ]);
      expect(await l.list({ provider: 'nobody' })).toEqual([]);
      expect(await l.list({ operation: 'sandbox.orders.create', limit: 2 })).toHaveLength(2);
      expect(await l.list()).toHaveLength(5);
      // An empty or null provider or operation filters nothing, as on the memory, SQLite and DynamoDB ledgers.
      expect(await l.list({ provider: '', operation: '' })).toHaveLength(5);
      expect(await l.list({ provider: null as never, operation: null as never })).toHaveLength(5);
      await expect(l.list({ states: ['bogus' as never] })).rejects.toThrow(LedgerError);
    } finally {
      await l.close();
      await dropSchema(s);
    }
  });
});

/** A ledger on one connection through a relay the test can cut; both closed after it. */
async function behindRelay(
  options: Partial<PostgresLedgerOptions>,
  test: (l: PostgresLedger, relay: Awaited<ReturnType<typeof startPgRelay>>) => Promise<void>,
): Promise<void> {
  const relay = await startPgRelay(url);
  const l = createPostgresLedger({
    connectionString: relay.url,
    schema,
    leaseClock: 'caller',
    poolSize: 1,
    ...options,
  });
  try {
    await test(l, relay);
  } finally {
    await l.close().catch(() => undefined);
    await relay.close();
  }
}

describe('connection loss fails closed', () => {
  it('a markDispatched whose connection is cut rejects with LedgerError and leaves no dispatched row', async () => {
    await behindRelay({ migrate: false, queryTimeoutMs: 3_000 }, async (l, relay) => {
      const res = held(await l.claim(input()));
      const ref = { businessOperationId: res.record.businessOperationId, fence: res.record.fence };
      relay.cut();
      const err = await l.markDispatched(ref, T0 + 1).catch((e) => e);
      expect(LedgerError.isInstance(err)).toBe(true);
      expect((await ledger.get(ref.businessOperationId))!.state).toBe('claimed');
    });
  });

  it('a markDispatched whose answer is lost rejects (so nothing is sent), while the durable row lets recovery find it', async () => {
    await behindRelay({ migrate: false, queryTimeoutMs: 1_500 }, async (l, relay) => {
      const res = held(await l.claim(input({ leaseMs: 100 })));
      const ref = { businessOperationId: res.record.businessOperationId, fence: res.record.fence };
      relay.dropResponses();
      const err = await l.markDispatched(ref, T0 + 1).catch((e) => e);
      expect(LedgerError.isInstance(err)).toBe(true);
      // The server committed the write: the operation is found as dispatched and recovery picks it up.
      await expect
        .poll(() => ledger.get(ref.businessOperationId))
        .toMatchObject({ state: 'dispatched', attemptCount: 1 });
      expect((await ledger.recoverCandidates(T0 + 1_000)).map((r) => r.businessOperationId)).toContain(
        ref.businessOperationId,
      );
    });
  });

  it('an unreachable database rejects with LedgerError', async () => {
    await behindRelay({ queryTimeoutMs: 2_000 }, async (l, relay) => {
      relay.cut();
      const err = await l.claim(input()).catch((e) => e);
      expect(LedgerError.isInstance(err)).toBe(true);
    });
  });

  it('a closed ledger refuses work', async () => {
    const l = createPostgresLedger({
      connectionString: url,
      schema,
      leaseClock: 'caller',
      poolSize: 1,
      migrate: false,
    });
    await l.close();
    await expect(l.get('x' as BusinessOperationId)).rejects.toThrow(/closed/);
  });

  it('a connection string pg cannot parse rejects with LedgerError, and close() still ends', async () => {
    // The port is out of range: pg.Client throws as it is built, which left a connection counted that never opened,
    // so close() waited for ever (the CLI ended on an unsettled await, with no message).
    const l = createPostgresLedger({ connectionString: 'postgres://u@127.0.0.1:99999/x', schema, migrate: false });
    const err = await l.get('x' as BusinessOperationId).catch((e) => e);
    expect(LedgerError.isInstance(err)).toBe(true);
    const closed = await Promise.race([l.close().then(() => 'closed'), sleep(15_000).then(() => 'hung')]);
    expect(closed).toBe('closed');
  });
});

/** A fresh schema holding a row of `state` per entry of `rows`, written by a statement with its `column` set to the
 * entry's text (as someone outside retrysafe would), and a ledger on it. */
async function withRawRows(
  name: string,
  state: string,
  column: string,
  rows: Record<string, string>,
  body: (l: PostgresLedger, pool: pg.Pool, table: string) => Promise<void>,
) {
  await withSchemaPool(name, 2, async (pool, s) => {
    await migrate(pool, s);
    const t = `"${s}".retrysafe_operations`;
    for (const [id, text] of Object.entries(rows))
      await pool.query(
        `INSERT INTO ${t} (business_operation_id, provider, operation, intent_fingerprint, params_fingerprint, params, state, fence, created_at, updated_at, ${column})
          VALUES ($1, 'p', 'o', 'i', 'f', '{}', $2, 1, 1, 1, $3)`,
        [id, state, text],
      );
    await body(createPostgresLedger({ pool, schema: s, migrate: false }), pool, t);
  });
}
