import type { AdapterV1, BusinessOperationId, ClaimResult } from '@retrysafe/contract';
import { createMemoryLedger, createRunner, createVirtualClock } from '@retrysafe/core';
import { createSandboxAdapter, createSandboxProvider, REPLAYING_BEHAVIOUR } from '@retrysafe/sandbox';
import { describe, expect, it, vi } from 'vitest';

const OP = 'records.create';

describe('leases and fencing inside the runner', () => {
  it('a long wait renews the lease: another worker trying to claim during the wait is told busy every time', async () => {
    const clock = createVirtualClock();
    const ledger = createMemoryLedger();
    const provider = createSandboxProvider({ ...REPLAYING_BEHAVIOUR, clock: clock.now });
    const adapter = createSandboxAdapter({ provider });
    const seen: ClaimResult['kind'][] = [];
    let id: BusinessOperationId | null = null;
    const intruderClock = {
      now: clock.now,
      async sleep(ms: number) {
        await clock.sleep(ms);
        const rec = id ? await ledger.get(id) : (await ledger.list())[0];
        if (!rec) return;
        id = rec.businessOperationId;
        const c = await ledger.claim({ ...rec, owner: 'intruder', leaseMs: 1000, now: clock.now() });
        seen.push(c.kind);
      },
    };
    const runner = createRunner({
      ledger,
      clock: intruderClock,
      random: () => 0.5,
      policy: { leaseMs: 3000, maxElapsedMs: 600_000 },
    });
    provider.failNext({ kind: 'not-applied', retryAfterMs: 50_000 }, 2);
    const r = await runner.run(adapter, OP, { params: { ref: 'lease-1' } });
    expect(r.status).toBe('done');
    expect(seen.length).toBeGreaterThan(20); // 2 × 50 s in slices of 1 s
    expect(seen.every((k) => k === 'busy')).toBe(true);
    expect(provider.count()).toBe(1);
  });

  it('a worker whose lease was taken over stops at its next write (LeaseLostError) and never dispatches again', async () => {
    const clock = createVirtualClock();
    const ledger = createMemoryLedger();
    const provider = createSandboxProvider({
      ...REPLAYING_BEHAVIOUR,
      lookup: 'none',
      replays: false,
      retentionMs: null,
      clock: clock.now,
    });
    const inner = createSandboxAdapter({ provider });
    // While the first worker's call is in flight, a second worker takes the operation over (its clock is later).
    const adapter: AdapterV1 = {
      ...inner,
      async doExecute(op, params, ctx) {
        const out = await inner.doExecute(op, params, ctx);
        const rec = (await ledger.get(ctx.businessOperationId))!;
        const c = await ledger.claim({ ...rec, owner: 'usurper', leaseMs: 3_600_000, now: clock.now() + 60_000 });
        expect(c.kind).toBe('claimed');
        return out;
      },
    };
    const runner = createRunner({ ledger, clock, random: () => 0.5, policy: { waitForOtherMs: 5000 } });
    const r = await runner.run(adapter, OP, { params: { ref: 'fence-1' } });
    expect(r.status).toBe('in-progress');
    expect(provider.calls()).toBe(1);
    const rec = (await ledger.get(r.businessOperationId))!;
    expect(rec).toMatchObject({ leaseOwner: 'usurper', fence: 2 });
    expect(await ledger.receipts(r.businessOperationId)).toEqual([]); // the stale worker's receipt was refused
  });

  it('a second caller waits for the first and adopts its result; with a short wait it is told in-progress', async () => {
    const clock = createVirtualClock();
    const ledger = createMemoryLedger();
    const provider = createSandboxProvider({
      ...REPLAYING_BEHAVIOUR,
      processingMs: 10_000,
      clock: clock.now,
      sleep: clock.sleep,
    });
    const adapter = createSandboxAdapter({ provider });
    const patient = createRunner({
      ledger,
      clock,
      random: () => 0.5,
      owner: 'patient',
      policy: { waitForOtherMs: 60_000 },
    });
    const hasty = createRunner({ ledger, clock, random: () => 0.5, owner: 'hasty', policy: { waitForOtherMs: 1 } });
    const first = patient.run(adapter, OP, { params: { ref: 'wait-1' } });
    const [a, b, c] = await Promise.all([
      first,
      patient.run(adapter, OP, { params: { ref: 'wait-1' } }),
      hasty.run(adapter, OP, { params: { ref: 'wait-1' } }),
    ]);
    expect(a).toMatchObject({ status: 'done', adopted: true }); // adopted through the status poll
    expect(b).toMatchObject({ status: 'done', adopted: true, providerRef: a.status === 'done' ? a.providerRef : '' });
    expect(c.status).toBe('in-progress');
    expect(provider.calls()).toBe(1);
    expect(provider.count()).toBe(1);
  });

  it("a waiter whose clock runs ahead of the ledger's takes over once the ledger lets it, without a claim storm", async () => {
    const clock = createVirtualClock();
    const inner = createMemoryLedger();
    let claims = 0;
    // The ledger judges leases 500 ms behind this worker's clock (a database clock within the skew it accepts).
    const lagging = {
      ...inner,
      claim: (input: Parameters<typeof inner.claim>[0]) => {
        if (++claims > 100) throw new Error('claim storm: asked the ledger again without waiting');
        return inner.claim({ ...input, now: input.now - 500 });
      },
    };
    // The holder's caller gave up before its claim, and the holder dies before giving the lease back: nothing was sent.
    const dying = { ...lagging, release: () => new Promise<never>(() => {}) };
    const provider = createSandboxProvider({ ...REPLAYING_BEHAVIOUR, clock: clock.now });
    const adapter = createSandboxAdapter({ provider });
    const policy = { leaseMs: 5000, waitForOtherMs: 30_000 };
    const holder = createRunner({ ledger: dying, clock, random: () => 0.5, owner: 'holder', policy });
    void holder.run(adapter, OP, { params: { ref: 'skewed-wait' }, signal: AbortSignal.abort() });
    await new Promise((r) => setImmediate(r));
    expect((await inner.list())[0]).toMatchObject({ state: 'claimed', leaseOwner: 'holder' });
    const waiter = createRunner({ ledger: lagging, clock, random: () => 0.5, owner: 'waiter', policy });
    const r = await waiter.run(adapter, OP, { params: { ref: 'skewed-wait' } });
    expect(r).toMatchObject({ status: 'done', attempts: 1 });
    expect(provider.calls()).toBe(1);
    expect(claims).toBeLessThan(20);
  });

  it('an aborted run stops, keeps the state and frees the lease; recover() then reconciles it', async () => {
    const clock = createVirtualClock();
    const ledger = createMemoryLedger();
    const provider = createSandboxProvider({
      ...REPLAYING_BEHAVIOUR,
      replays: false,
      retentionMs: null,
      clock: clock.now,
    });
    const inner = createSandboxAdapter({ provider });
    const controller = new AbortController();
    const adapter: AdapterV1 = {
      ...inner,
      doExecute: async (op, params, ctx) => {
        const o = await inner.doExecute(op, params, ctx);
        controller.abort(new Error('caller gave up'));
        return o;
      },
    };
    provider.failNext({ kind: 'unknown-after-commit' });
    const runner = createRunner({ ledger, clock, random: () => 0.5 });
    await expect(runner.run(adapter, OP, { params: { ref: 'abort-1' }, signal: controller.signal })).rejects.toThrow(
      'caller gave up',
    );
    const [rec] = await ledger.list();
    expect(rec).toMatchObject({ state: 'unknown', leaseOwner: null, attemptCount: 1 });
    const reports = await runner.recover({ adapters: [inner] });
    expect(reports).toMatchObject([{ from: 'unknown', to: 'succeeded', action: 'adopted' }]);
    expect(provider.count()).toBe(1);
  });

  it('a signal aborted during the backoff before a re-send: nothing more is sent, the lease is freed', async () => {
    const clock = createVirtualClock();
    const ledger = createMemoryLedger();
    const provider = createSandboxProvider({ ...REPLAYING_BEHAVIOUR, clock: clock.now });
    const inner = createSandboxAdapter({ provider });
    // A hand-written adapter need not read ctx.signal: the runner itself sends nothing once aborted.
    const adapter: AdapterV1 = {
      ...inner,
      doExecute: (op, params, { signal: _ignored, ...ctx }) => inner.doExecute(op, params, ctx),
    };
    const controller = new AbortController();
    // The caller gives up while the runner waits out the provider's Retry-After.
    const aborting = {
      now: clock.now,
      async sleep(ms: number) {
        controller.abort(new Error('caller gave up'));
        await clock.sleep(ms);
      },
    };
    provider.failNext({ kind: 'not-applied', retryAfterMs: 10 });
    const runner = createRunner({ ledger, clock: aborting, random: () => 0.5 });
    await expect(
      runner.run(adapter, OP, { params: { ref: 'abort-in-wait' }, signal: controller.signal }),
    ).rejects.toThrow('caller gave up');
    expect(provider.calls()).toBe(1);
    const [rec] = await ledger.list();
    expect(rec).toMatchObject({ leaseOwner: null, attemptCount: 1 });
  });

  it('a signal aborted early in a long Retry-After wait ends the wait at its next slice, not after all of it', async () => {
    const clock = createVirtualClock();
    const ledger = createMemoryLedger();
    const provider = createSandboxProvider({ ...REPLAYING_BEHAVIOUR, clock: clock.now });
    const adapter = createSandboxAdapter({ provider });
    const controller = new AbortController();
    let slept = 0;
    const aborting = {
      now: clock.now,
      async sleep(ms: number) {
        slept += ms;
        controller.abort(new Error('caller gave up'));
        await clock.sleep(ms);
      },
    };
    provider.failNext({ kind: 'not-applied', retryAfterMs: 50_000 });
    const runner = createRunner({ ledger, clock: aborting, random: () => 0.5, policy: { leaseMs: 30_000 } });
    await expect(
      runner.run(adapter, OP, { params: { ref: 'abort-long-wait' }, signal: controller.signal }),
    ).rejects.toThrow('caller gave up');
    // The wait is slept in slices of a third of the lease (renewed between): one slice, not all 50 s.
    expect(slept).toBeLessThanOrEqual(10_000);
    expect(provider.calls()).toBe(1);
  });

  it('a signal aborted while dispatched is being written: the request does not go out', async () => {
    const clock = createVirtualClock();
    const inner = createMemoryLedger();
    const controller = new AbortController();
    const ledger = {
      ...inner,
      // The caller gives up while the ledger writes `dispatched` for the re-send.
      markDispatched: async (...a: Parameters<typeof inner.markDispatched>) => {
        controller.abort(new Error('caller gave up'));
        return inner.markDispatched(...a);
      },
    };
    const provider = createSandboxProvider({ ...REPLAYING_BEHAVIOUR, clock: clock.now });
    const sandbox = createSandboxAdapter({ provider });
    const adapter: AdapterV1 = {
      ...sandbox,
      doExecute: (op, params, { signal: _ignored, ...ctx }) => sandbox.doExecute(op, params, ctx),
    };
    provider.failNext({ kind: 'not-applied', retryAfterMs: 10 });
    const runner = createRunner({ ledger, clock, random: () => 0.5 });
    await expect(
      runner.run(adapter, OP, { params: { ref: 'abort-in-write' }, signal: controller.signal }),
    ).rejects.toThrow('caller gave up');
    expect(provider.calls()).toBe(1);
    const [rec] = await inner.list();
    expect(rec).toMatchObject({ leaseOwner: null });
  });

  it('a lease shorter than 100 ms is kept through a slow call too: at no moment of the call could another worker take over', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'performance', 'Date'] });
    try {
      const ledger = createMemoryLedger();
      const provider = createSandboxProvider({ ...REPLAYING_BEHAVIOUR });
      const inner = createSandboxAdapter({ provider });
      let inCall = false;
      const slow: AdapterV1 = {
        ...inner,
        doExecute: async (op, params, ctx) => {
          inCall = true;
          await new Promise((r) => setTimeout(r, 400));
          inCall = false;
          return inner.doExecute(op, params, ctx);
        },
      };
      const runner = createRunner({ ledger, owner: 'a', policy: { leaseMs: 60 } });
      const run = runner.run(slow, OP, { params: { ref: 'short-lease' } });
      const lapses: number[] = []; // moments of the call when the row's lease had run out
      for (let t = 5; t <= 400; t += 5) {
        await vi.advanceTimersByTimeAsync(5);
        const [rec] = await ledger.list();
        if (inCall && !((rec?.leaseExpiresAt ?? 0) > Date.now())) lapses.push(t);
      }
      await vi.advanceTimersByTimeAsync(100);
      expect(await run).toMatchObject({ status: 'done' });
      expect(lapses).toEqual([]);
    } finally {
      vi.useRealTimers();
    }
  });

  it('a provider call slower than the lease keeps its lease (heartbeat): a second worker waits instead of taking over and sending again', async () => {
    const ledger = createMemoryLedger();
    const provider = createSandboxProvider({
      ...REPLAYING_BEHAVIOUR,
      replays: false,
      retentionMs: null,
      concurrency: 'duplicates',
    });
    const inner = createSandboxAdapter({ provider });
    const slow: AdapterV1 = {
      ...inner,
      doExecute: async (op, params, ctx) => {
        await new Promise((r) => setTimeout(r, 3500));
        return inner.doExecute(op, params, ctx);
      },
    };
    const policy = { leaseMs: 2000, waitForOtherMs: 20_000, baseMs: 50, capMs: 200 };
    const a = createRunner({ ledger, owner: 'a', policy });
    const b = createRunner({ ledger, owner: 'b', policy });
    const first = a.run(slow, OP, { params: { ref: 'slow-1' } });
    await new Promise((r) => setTimeout(r, 2500)); // past the first lease, still inside the call
    const second = b.run(slow, OP, { params: { ref: 'slow-1' } });
    const [ra, rb] = await Promise.all([first, second]);
    expect(provider.calls()).toBe(1);
    expect(provider.count()).toBe(1);
    expect(ra).toMatchObject({ status: 'done', adopted: false });
    expect(rb).toMatchObject({
      status: 'done',
      adopted: true,
      providerRef: ra.status === 'done' ? ra.providerRef : '',
    });
  });
});
