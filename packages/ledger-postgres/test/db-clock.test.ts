// Issue 15 item 3: on PostgreSQL, lease expiry and takeover are judged by the database's clock (now()
// inside the same statement), not the worker's; a worker whose clock is off by more than the bound gets
// a typed error (ClockSkewError) and a log line, and writes nothing.
import { asBusinessOperationId, ClockSkewError } from '@retrysafe/contract';
import { type Clock, createRunner, type LogEntry } from '@retrysafe/core';
import {
  createSandboxAdapter,
  createSandboxProvider,
  FORGETFUL_BEHAVIOUR,
  REPLAYING_BEHAVIOUR,
} from '@retrysafe/sandbox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresLedger, type PostgresLedger } from '../src/index.js';
import { claimOf, databaseUrl, readyLedger, testSchema } from './pg-test-db.js';

const schema = testSchema('db_clock');
let lenient: PostgresLedger; // database clock, skew bound large enough to let a far-off worker reach the lease judgement
let strict: PostgresLedger; // database clock, default bound (1 s)
beforeAll(async () => {
  lenient = await readyLedger(schema, { maxClockSkewMs: 120_000 });
  strict = await readyLedger(schema);
});
afterAll(async () => {
  await lenient?.close();
  await strict?.close();
});

const skewed = (offsetMs: number): Clock => ({
  now: () => Date.now() + offsetMs,
  sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
});

const claimed = async (ref: string) => (await strict.list()).some((r) => (r.params as { ref?: string }).ref === ref);

describe('leases on the database clock', () => {
  it('a worker whose clock runs 40 s ahead cannot take over a live 30 s lease (its own clock says it expired)', async () => {
    const a = await lenient.claim(claimOf('ahead-1', 'w-a', Date.now()));
    expect(a.kind).toBe('claimed');
    const b = await lenient.claim(claimOf('ahead-1', 'w-b', Date.now() + 40_000));
    expect(b.kind).toBe('busy');
  });

  it('a lease whose end has passed on the database clock is taken over, whatever the worker clock says', async () => {
    await lenient.claim(claimOf('expired-1', 'w-a', Date.now(), 200));
    await new Promise((r) => setTimeout(r, 300));
    const b = await lenient.claim(claimOf('expired-1', 'w-b', Date.now() - 60_000));
    expect(b).toMatchObject({ kind: 'claimed', takenOver: true });
  });

  it('recoverCandidates ignores a caller "now" far in the future: a live lease is not a candidate', async () => {
    await lenient.claim(claimOf('live-1', 'w-a', Date.now()));
    const listed = await lenient.recoverCandidates(Date.now() + 600_000);
    expect(listed.map((r) => r.businessOperationId)).not.toContain('live-1');
  });

  it('renewLease extends the lease on the database clock', async () => {
    const c = await lenient.claim(claimOf('renew-1', 'w-a', Date.now(), 500));
    if (c.kind !== 'claimed') throw new Error('claim');
    await lenient.renewLease(
      { businessOperationId: c.record.businessOperationId, fence: c.record.fence },
      30_000,
      Date.now() - 100_000,
    );
    await new Promise((r) => setTimeout(r, 600));
    expect((await lenient.claim(claimOf('renew-1', 'w-b', Date.now()))).kind).toBe('busy');
  });
});

describe('a worker whose clock is off from the database', () => {
  it.each([+600_000, -600_000, +5_000])(
    'by %i ms: ClockSkewError and a log line from run(), no row, no provider call',
    async (offset) => {
      const provider = createSandboxProvider(REPLAYING_BEHAVIOUR);
      const adapter = createSandboxAdapter({ provider });
      const logs: LogEntry[] = [];
      const ref = `skew-${offset}`;
      const err = await createRunner({
        ledger: strict,
        clock: skewed(offset),
        owner: 'w-skew',
        logger: (e) => void logs.push(e),
      })
        .run(adapter, 'records.create', { params: { ref } })
        .catch((e: unknown) => e);
      expect(ClockSkewError.isInstance(err)).toBe(true);
      expect(Math.sign((err as ClockSkewError).skewMs)).toBe(Math.sign(offset));
      expect(provider.calls()).toBe(0);
      expect((await strict.list()).filter((r) => (r.params as { ref?: string }).ref === ref)).toEqual([]);
      expect(logs.some((l) => l.event === 'clock-skew' && l.level === 'warn')).toBe(true);
    },
  );

  it('a worker within the bound runs normally', async () => {
    const provider = createSandboxProvider(REPLAYING_BEHAVIOUR);
    const adapter = createSandboxAdapter({ provider });
    const r = await createRunner({ ledger: strict, clock: skewed(200), owner: 'w-ok' }).run(adapter, 'records.create', {
      params: { ref: 'skew-ok' },
    });
    expect(r.status).toBe('done');
    expect(provider.count()).toBe(1);
  });
});

describe('waiting for another worker on the database clock', () => {
  it('a waiter 800 ms ahead of the database takes over once the database lets it, without a claim storm', async () => {
    let claims = 0;
    // Every claim of this test, counted; the holder's caller gave up before its claim, and it dies before its release.
    const wrap = (over: Record<string, unknown>) =>
      new Proxy(strict, {
        get: (t, p) => (p in over ? over[p as string] : (Reflect.get(t, p) as unknown)),
      });
    const claim: typeof strict.claim = (input) => (claims++, strict.claim(input));
    const dying = wrap({ claim, release: () => new Promise<never>(() => {}) });
    const counted = wrap({ claim });
    const provider = createSandboxProvider(REPLAYING_BEHAVIOUR);
    const adapter = createSandboxAdapter({ provider });
    const policy = { leaseMs: 1500, waitForOtherMs: 30_000 };
    void createRunner({ ledger: dying, owner: 'w-dies', policy }).run(adapter, 'records.create', {
      params: { ref: 'storm-1' },
      signal: AbortSignal.abort(),
    });
    await expect.poll(() => claimed('storm-1')).toBe(true); // the holder first
    const r = await createRunner({ ledger: counted, clock: skewed(800), owner: 'w-waits', policy }).run(
      adapter,
      'records.create',
      { params: { ref: 'storm-1' } },
    );
    expect(r).toMatchObject({ status: 'done', attempts: 1 });
    expect(provider.calls()).toBe(1);
    expect(claims).toBeLessThan(10);
  });
});

describe('a takeover on the database clock', () => {
  it('a worker that died after its `dispatched` write: the taker looks up and sends at once, with no clock-skew margin to wait out', async () => {
    // The holder wrote `dispatched`, then stopped before sending. It judged its lease from its own reading taken
    // before it asked, and the database judged it from a later one: it cannot be sending past the database's end.
    const dying = new Proxy(strict, {
      get: (t, p) =>
        p === 'claim'
          ? (...a: Parameters<typeof strict.claim>) => t.claim(...a).then(() => new Promise(() => {}))
          : (Reflect.get(t, p) as unknown),
    });
    const provider = createSandboxProvider({ ...FORGETFUL_BEHAVIOUR, lookup: 'get-by-key', lateApplyMs: 0 });
    const adapter = createSandboxAdapter({ provider });
    const policy = { leaseMs: 1500, waitForOtherMs: 30_000 };
    void createRunner({ ledger: dying, owner: 'w-dies', policy }).run(adapter, 'records.create', {
      params: { ref: 'taken-1' },
    });
    await expect.poll(() => claimed('taken-1')).toBe(true); // the holder first
    // The card's clock-skew margin is a minute: a taker that waited it out would outlast this test's 20 s.
    const r = await createRunner({ ledger: strict, owner: 'w-takes', policy }).run(adapter, 'records.create', {
      params: { ref: 'taken-1' },
    });
    expect(r).toMatchObject({ status: 'done', adopted: false });
    expect(provider.count()).toBe(1);
  }, 20_000);
});

describe('the clock probe', () => {
  it('probes once, then judges from the cached offset: a skewed claim is refused as a rejected promise either way, and writes nothing', async () => {
    const ledger = createPostgresLedger({ connectionString: databaseUrl(), schema, poolSize: 2 });
    try {
      await ledger.ready();
      // The first claim probes the database clock (a round trip); it is in time, so it is claimed.
      expect((await ledger.claim(claimOf('probe-1', 'w-p', Date.now()))).kind).toBe('claimed');
      // Within 10 s of the probe: no round trip before the check. The refusal still comes as a rejection
      // of claim()'s promise (never a synchronous throw), as ClockSkewError, and no row is written.
      let returned: Promise<unknown> | undefined;
      expect(() => {
        returned = ledger.claim(claimOf('probe-2', 'w-p', Date.now() + 600_000));
      }).not.toThrow();
      const err = await returned!.catch((e: unknown) => e);
      expect(ClockSkewError.isInstance(err)).toBe(true);
      expect((err as ClockSkewError).skewMs).toBeGreaterThan(0);
      expect(await ledger.get(asBusinessOperationId('probe-2'))).toBeNull();
      // And a caller in time is claimed from the same cached offset.
      expect((await ledger.claim(claimOf('probe-3', 'w-p', Date.now()))).kind).toBe('claimed');
    } finally {
      await ledger.close();
    }
  });
});
