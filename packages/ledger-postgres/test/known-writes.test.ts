// A fenced write of an operation the ledger remembers (it claimed or last wrote it) sends its UPDATE
// guarded by the row version's xmin and reads back only the new xmin; the record it returns is the
// contract's transition of the remembered one. These tests hold that record to the row itself
// (`get()`), and show that a row written meanwhile by anyone else is written and read back in full.

import {
  asBusinessOperationId,
  type ClaimInput,
  type HandoffPacket,
  LeaseLostError,
  type ProviderKey,
  type Receipt,
} from '@retrysafe/contract';
import { sealReceipt } from '@retrysafe/core/internal';
import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createPostgresLedger, type PostgresLedger } from '../src/index.js';
import { databaseUrl, dropSchema, freshSchema } from './pg-test-db.js';

const schema = freshSchema('known_writes');
const T0 = Date.UTC(2026, 0, 1);
let pool: pg.Pool;
let ledger: PostgresLedger;
let other: PostgresLedger;
/** The statements `ledger` sent, by name (the schema prefix cut). */
let sent: string[] = [];

beforeAll(async () => {
  pool = new pg.Pool({ connectionString: databaseUrl(), max: 2 });
  pool.on('connect', (client) => {
    const q = client.query.bind(client) as (...a: unknown[]) => unknown;
    (client as { query: unknown }).query = (config: unknown, ...rest: unknown[]) => {
      const name = (config as { name?: string })?.name;
      // `rs:<schema>:<statement>`, or `rs:<statement>#<schema hash>` where that would pass 63 bytes.
      if (name)
        sent.push(
          name.startsWith(`rs:${schema}:`)
            ? name.slice(`rs:${schema}:`.length)
            : name.slice(3).replace(/#[0-9a-f]{12}$/, ''),
        );
      return q(config, ...rest);
    };
  });
  ledger = createPostgresLedger({ pool, schema, leaseClock: 'caller' });
  other = createPostgresLedger({ connectionString: databaseUrl(), schema, leaseClock: 'caller', poolSize: 2 });
  await ledger.ready();
  await other.ready();
});
beforeEach(() => {
  sent = [];
});
afterAll(async () => {
  await ledger?.close();
  await other?.close();
  await pool?.end();
  await dropSchema(schema);
});

const claimInput = (name: string, over: Partial<ClaimInput> = {}): ClaimInput => ({
  businessOperationId: asBusinessOperationId(`known-${name}`),
  provider: 'sandbox',
  operation: 'sandbox.records.create',
  intentFingerprint: 'sha256:intent',
  paramsFingerprint: 'sha256:params',
  params: { ref: name, nested: { n: 1 }, list: [1, 'two'], gone: undefined },
  providerKey: `rs-${name}` as ProviderKey,
  owner: 'worker-1',
  leaseMs: 1000,
  now: T0,
  ...over,
});
const receipt = (name: string, seq: number, prevHash: string | null): Receipt =>
  sealReceipt({
    businessOperationId: asBusinessOperationId(`known-${name}`),
    seq,
    runId: 'run_known' as Receipt['runId'],
    attemptId: `att_${seq}` as Receipt['attemptId'],
    provider: 'sandbox',
    operation: 'sandbox.records.create',
    kind: 'dispatch',
    startedAt: new Date(T0).toISOString(),
    finishedAt: new Date(T0 + 1).toISOString(),
    outcome: 'succeeded',
    decision: { action: 'complete', reason: 'test' },
    providerKey: `rs-${name}` as ProviderKey,
    requestFingerprint: 'sha256:req',
    prevHash,
  });

/** Claims `name` on `on`: the claim and its fenced reference. */
async function claimed(name: string, over: Partial<ClaimInput> = {}, on: PostgresLedger = ledger) {
  const claim = await on.claim(claimInput(name, over));
  if (claim.kind !== 'claimed') throw new Error(claim.kind);
  return { claim, ref: { businessOperationId: claim.record.businessOperationId, fence: claim.record.fence } };
}

describe('writes of a remembered operation', () => {
  it('return exactly the row each write left, without reading it back', async () => {
    const { claim: c, ref } = await claimed('chain');
    expect(c.record).toEqual(await ledger.get(ref.businessOperationId));
    const d = await ledger.markDispatched(ref, T0 + 1);
    expect(d).toEqual(await ledger.get(ref.businessOperationId));
    const p = await ledger.setState(ref, {
      state: 'in-progress',
      now: T0 + 2,
      lastOutcome: 'unknown',
      statusRef: 'st-1',
      result: { at: new Date(T0), skip: undefined, n: [1] },
    });
    expect(p).toEqual(await ledger.get(ref.businessOperationId));
    expect(p.result).toEqual({ at: new Date(T0).toISOString(), n: [1] }); // as the json column reads it back
    const r1 = receipt('chain', 1, null);
    const s = await ledger.setState(ref, {
      state: 'succeeded',
      now: T0 + 3,
      lastOutcome: 'succeeded',
      providerRef: 'ref-1',
      receipt: r1,
    });
    expect(s).toEqual(await ledger.get(ref.businessOperationId));
    expect(s.receiptChain).toEqual({ head: r1.hash, length: 1 });
    expect(await ledger.receipts(ref.businessOperationId)).toEqual([r1]);
    // Three writes, each one statement on the remembered row version, none re-sent in full.
    // setState's statement has a column per field its patch carries (.o lastOutcome, .r result, .p providerRef, .s statusRef).
    expect(sent.filter((n) => !n.startsWith('get') && n !== 'receipts')).toEqual([
      'claim-insert:caller-clock',
      'dispatched:known',
      'set-state.ors:known',
      'set-state-terminal.op+receipt:known',
    ]);
  });

  it('a renewal keeps the operation remembered, with the lease the database wrote', async () => {
    const { ref } = await claimed('renewed', { dispatch: true });
    await ledger.renewLease(ref, 4000, T0 + 5);
    await ledger.renewLease(ref, 3000, T0 + 6);
    const s = await ledger.setState(ref, { state: 'unknown', now: T0 + 7, lastOutcome: 'unknown' });
    expect(s).toEqual(await ledger.get(ref.businessOperationId));
    expect(s).toMatchObject({ leaseExpiresAt: T0 + 6 + 3000, updatedAt: T0 + 7 });
    expect(sent.filter((n) => n.startsWith('renew') || n.startsWith('set-state'))).toEqual([
      'renew:known',
      'renew:known',
      'set-state.o:known',
    ]);
    // A claim born dispatched has its own INSERT (its state, attempt count and first dispatch are in the text).
    expect(sent[0]).toBe('claim-insert-dispatched:caller-clock');
  });

  it('a hand-off returns the row it left, its packet included', async () => {
    const { ref } = await claimed('handoff', { dispatch: true });
    const packet: HandoffPacket = {
      businessOperationId: ref.businessOperationId,
      provider: 'sandbox',
      operation: 'sandbox.records.create',
      intentFingerprint: 'sha256:intent',
      providerKey: 'rs-handoff' as ProviderKey,
      reason: 'unknown-no-safe-resend',
      explanation: 'test',
      attempts: [],
      lastKnown: { outcome: 'unknown', status: 504, providerRef: 'ref-h' },
      safeNextActions: [{ action: 'abandon', safe: true, why: 'test' }],
      createdAt: new Date(T0).toISOString(),
    };
    const h = await ledger.handOff(ref, packet, T0 + 1, receipt('handoff', 1, null));
    expect(h).toEqual(await ledger.get(ref.businessOperationId));
    expect(h).toMatchObject({ state: 'handed-off', lastOutcome: 'unknown', providerRef: 'ref-h', leaseOwner: null });
    expect(sent).toContain('hand-off+receipt:known');
  });

  it('records handed out share nothing with what the ledger remembers', async () => {
    const { claim: c, ref } = await claimed('mutated');
    (c.record.params as { nested: { n: number } }).nested.n = 99;
    (c.record as { attemptCount: number }).attemptCount = 42;
    (c.record.receiptChain as { length: number }).length = 7;
    const d = await ledger.markDispatched(ref, T0 + 1);
    expect(d).toEqual(await ledger.get(ref.businessOperationId));
    expect(d).toMatchObject({ attemptCount: 1, params: { nested: { n: 1 } }, receiptChain: { head: null, length: 0 } });
  });

  it('a row another writer changed meanwhile is written and read back in full', async () => {
    const { ref } = await claimed('renewed-elsewhere');
    // Same fence, another ledger (another process of the same worker, say): the lease and updated_at move.
    await other.renewLease(ref, 5000, T0 + 10);
    const s = await ledger.setState(ref, { state: 'unknown', now: T0 + 11 });
    expect(s).toEqual(await ledger.get(ref.businessOperationId));
    expect(s.leaseExpiresAt).toBe(T0 + 10 + 5000);
    expect(sent.filter((n) => n.startsWith('set-state'))).toEqual(['set-state:known', 'set-state']);
    // Remembered again from the full read: the next write is the short one.
    const u = await ledger.setState(ref, { state: 'in-progress', now: T0 + 12 });
    expect(u).toEqual(await ledger.get(ref.businessOperationId));
    expect(sent.filter((n) => n.startsWith('set-state'))).toEqual(['set-state:known', 'set-state', 'set-state:known']);
  });

  it('after a takeover the remembered record does not help a stale token: LeaseLostError, nothing written', async () => {
    const { ref } = await claimed('taken-over');
    const t = await other.claim(claimInput('taken-over', { owner: 'worker-2', now: T0 + 5000 }));
    expect(t.kind).toBe('claimed');
    await expect(
      ledger.setState(ref, { state: 'succeeded', now: T0 + 5001, receipt: receipt('taken-over', 1, null) }),
    ).rejects.toBeInstanceOf(LeaseLostError);
    expect(await ledger.get(ref.businessOperationId)).toMatchObject({
      state: 'claimed',
      fence: 2,
      leaseOwner: 'worker-2',
      receiptChain: { head: null, length: 0 },
    });
    expect(await ledger.receipts(ref.businessOperationId)).toEqual([]);
  });

  it('a terminal state written meanwhile by another ledger is not overwritten', async () => {
    const { ref } = await claimed('ended-elsewhere');
    await other.setState(ref, { state: 'rejected', now: T0 + 1, lastOutcome: 'rejected' });
    await expect(ledger.setState(ref, { state: 'unknown', now: T0 + 2 })).rejects.toThrow(/terminal/);
    expect(await ledger.get(ref.businessOperationId)).toMatchObject({
      state: 'rejected',
      updatedAt: T0 + 1,
      lastOutcome: 'rejected',
    });
  });
});

describe('a deferrable write (StatePatch.durability: a final succeeded the runner can look up again)', () => {
  const done = async (name: string, on: PostgresLedger, withReceipt = true) => {
    const { ref } = await claimed(name, { dispatch: true }, on);
    sent = [];
    const s = await on.setState(ref, {
      state: 'succeeded',
      now: T0 + 3,
      lastOutcome: 'succeeded',
      providerRef: 'ref-d',
      ...(withReceipt ? { receipt: receipt(name, 1, null) } : {}),
      durability: 'deferrable',
    });
    expect(s).toEqual(await on.get(ref.businessOperationId));
    return s;
  };

  it('is sent with synchronous_commit off for its own transaction, and the session keeps its setting', async () => {
    const s = await done('deferred', ledger);
    expect(s).toMatchObject({ state: 'succeeded', providerRef: 'ref-d', receiptChain: { length: 1 } });
    expect(sent.filter((n) => n.startsWith('set-state'))).toEqual(['set-state-terminal.op+receipt:deferred:known']);
    // Both pooled connections still commit synchronously: the setting was local to that transaction.
    const clients = await Promise.all([pool.connect(), pool.connect()]);
    try {
      for (const client of clients)
        expect((await client.query('SHOW synchronous_commit')).rows[0]).toEqual({ synchronous_commit: 'on' });
    } finally {
      for (const client of clients) client.release();
    }
  });

  it("deferrableWrites: 'sync' sends the same write as every other, with the same record", async () => {
    const strict = createPostgresLedger({ pool, schema, leaseClock: 'caller', deferrableWrites: 'sync' });
    const s = await done('strict', strict);
    expect(s).toMatchObject({ state: 'succeeded', providerRef: 'ref-d', receiptChain: { length: 1 } });
    expect(sent.filter((n) => n.startsWith('set-state'))).toEqual(['set-state-terminal.op+receipt:known']);
  });

  it("is deferred without a receipt too, remembered or read back, as on SQLite (the durability is the patch's, not the receipt's)", async () => {
    const s = await done('deferred-bare', ledger, false);
    expect(s).toMatchObject({ state: 'succeeded', providerRef: 'ref-d', receiptChain: { head: null, length: 0 } });
    // Not remembered (another ledger wrote it last): the full write, deferred the same way.
    const { ref: ref2 } = await claimed('deferred-bare-2', { dispatch: true });
    await other.setState(ref2, { state: 'in-progress', now: T0 + 2 });
    const u = await ledger.setState(ref2, {
      state: 'succeeded',
      now: T0 + 4,
      lastOutcome: 'succeeded',
      durability: 'deferrable',
    });
    expect(u).toEqual(await ledger.get(ref2.businessOperationId));
    expect(sent.filter((n) => n.startsWith('set-state'))).toEqual([
      'set-state-terminal.op:deferred:known',
      'set-state-terminal.o:deferred:known',
      'set-state-terminal.o:deferred',
    ]);
  });

  it('deferrableWrites other than defer or sync is refused when the ledger is made', () => {
    expect(() => createPostgresLedger({ pool, schema, deferrableWrites: 'later' as 'defer' })).toThrow(
      /deferrableWrites/,
    );
  });
});

describe('setState refusals', () => {
  it('a refused patch comes back as a rejected promise (never a synchronous throw), and writes nothing', async () => {
    const c = await ledger.claim({
      businessOperationId: asBusinessOperationId('refuse-1'),
      provider: 'p',
      operation: 'p.op',
      intentFingerprint: 'i-refuse-1',
      paramsFingerprint: 'f-refuse-1',
      params: { a: 1 },
      providerKey: 'k-refuse-1' as ProviderKey,
      owner: 'w',
      leaseMs: 30_000,
      now: Date.now(),
    });
    if (c.kind !== 'claimed') throw new Error('claim');
    const ref = { businessOperationId: c.record.businessOperationId, fence: c.record.fence };
    for (const patch of [
      { state: 'handed-off', now: Date.now() },
      { state: 'abandoned', now: Date.now() },
      { state: 'nope', now: Date.now() },
      { state: 'unknown', now: Number.NaN },
      null,
    ]) {
      let returned: Promise<unknown> | undefined;
      expect(() => {
        returned = ledger.setState(ref, patch as never);
      }).not.toThrow();
      await expect(returned).rejects.toMatchObject({ name: 'LedgerError' });
    }
    // The fenced write's own checks (a malformed ref, a receipt that is not the operation's) reject too.
    for (const [r, patch] of [
      [
        { businessOperationId: ref.businessOperationId, fence: 'x' },
        { state: 'succeeded', now: Date.now() },
      ],
      [ref, { state: 'succeeded', now: Date.now(), receipt: { businessOperationId: 'someone-else', seq: 1 } }],
    ] as const) {
      let returned: Promise<unknown> | undefined;
      expect(() => {
        returned = ledger.setState(r as never, patch as never);
      }).not.toThrow();
      await expect(returned).rejects.toBeInstanceOf(Error);
    }
    expect(await ledger.get(ref.businessOperationId)).toEqual(c.record);
  });
});
