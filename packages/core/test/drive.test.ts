// drive (src/runner/loop.ts) is not an async function: a clean run is the send's promise and its
// continuations. Whatever throws on the way, before the send or after it, still comes back as a rejection
// of the promise drive returns, never as a synchronous throw (as from the async function it was); and the
// loop's order holds: the decision is logged before the abort is checked, nothing is sent once aborted.
import { describe, expect, it } from 'vitest';
import type { Ledger } from '@retrysafe/contract';
import { createMemoryLedger, createRunner, createVirtualClock, type LogEntry } from '@retrysafe/core';
import { createSandboxAdapter, createSandboxProvider } from '@retrysafe/sandbox';
import { decide } from '../src/decide.js';
import { createContext } from '../src/runner/context.js';
import { intakeRun } from '../src/runner/intake.js';
import { drive, startOp, stateOf } from '../src/runner/loop.js';
import type { RunResult } from '../src/runner/types.js';
import { REPLAYING } from './helpers.js';

const OP = 'records.create';

interface Rig {
  /** When set, the clock's `now` throws this. */
  clockError?: Error;
  /** When set, the ledger method of this name throws (synchronously, no promise) this. */
  ledgerThrow?: { method: string; error: Error };
}

/** A fresh operation claimed already dispatched (as run() claims a new one), and the first decision drive gets for it. */
async function claimed(label: string, opts: { signal?: AbortSignal; doExecute?: (original: (...a: never[]) => unknown) => (...a: never[]) => unknown } = {}) {
  const rig: Rig = {};
  const virtual = createVirtualClock();
  const clock = {
    now: () => {
      if (rig.clockError) throw rig.clockError;
      return virtual.now();
    },
    sleep: virtual.sleep,
  };
  const provider = createSandboxProvider({ ...REPLAYING, clock: virtual.now, sleep: virtual.sleep });
  const sandbox = createSandboxAdapter({ provider });
  const adapter = opts.doExecute ? (Object.create(sandbox, { doExecute: { value: opts.doExecute(sandbox.doExecute.bind(sandbox) as never) } }) as typeof sandbox) : sandbox;
  const inner = createMemoryLedger();
  const calls: string[] = [];
  const ledger = new Proxy(inner, {
    get(target, prop) {
      const v = Reflect.get(target, prop) as unknown;
      if (typeof v !== 'function') return v;
      return (...args: unknown[]) => {
        calls.push(String(prop));
        if (rig.ledgerThrow?.method === prop) throw rig.ledgerThrow.error;
        return (v as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  }) as Ledger;
  const ctx = createContext({ ledger, clock, random: () => 0.5 });
  const { base, claimInput } = await intakeRun(ctx, adapter, OP, { params: { ref: label, amount: 1 }, ...(opts.signal ? { signal: opts.signal } : {}) });
  const claim = await ledger.claim({ ...claimInput, dispatch: true });
  if (claim.kind !== 'claimed') throw new Error(`expected a fresh claim, got ${claim.kind}`);
  const record = claim.record;
  const op = startOp(ctx, base, record, { businessOperationId: record.businessOperationId, fence: record.fence }, [], claimInput, false, true);
  const first = decide(op.card, stateOf(ctx, op), null, { policy: op.policy, random: ctx.random });
  calls.length = 0;
  return { rig, ctx, op, first, provider, inner, calls };
}

/** drive's promise, asserting that calling it did not throw. */
function driven(c: Awaited<ReturnType<typeof claimed>>): Promise<RunResult> {
  let p: Promise<RunResult> | undefined;
  expect(() => {
    p = drive(c.ctx, c.op, c.first);
  }).not.toThrow();
  expect(p).toBeInstanceOf(Promise);
  return p!;
}

describe('drive on the clean path', () => {
  it('sends once and completes: the result written with its receipt in one write', async () => {
    const c = await claimed('clean');
    expect(c.first).toMatchObject({ action: 'send', delayMs: 0 });
    const r = await driven(c);
    expect(r).toMatchObject({ status: 'done', attempts: 1, adopted: false });
    expect(c.calls).toEqual(['setState']);
    expect(c.provider.count()).toBe(1);
    expect((await c.inner.receipts(c.op.id)).map((x) => [x.seq, x.kind, x.outcome])).toEqual([[1, 'dispatch', 'succeeded']]);
  });

  it('a clock that throws before the send: a rejection, nothing sent', async () => {
    const c = await claimed('clock');
    c.rig.clockError = new Error('clock broke');
    await expect(driven(c)).rejects.toBe(c.rig.clockError);
    expect(c.provider.calls()).toBe(0);
  });

  it('a ledger whose completion write throws synchronously: a rejection after the one send', async () => {
    const c = await claimed('ledger');
    c.rig.ledgerThrow = { method: 'setState', error: new Error('ledger broke') };
    await expect(driven(c)).rejects.toBe(c.rig.ledgerThrow.error);
    expect(c.provider.count()).toBe(1);
    expect(c.calls).toEqual(['setState']);
  });

  it('an adapter that throws synchronously: an unknown outcome, reconciled, never a throw', async () => {
    let n = 0;
    const c = await claimed('adapter', {
      doExecute: (original) => (...a) => {
        if (++n === 1) throw new Error('adapter broke before any promise');
        return original(...a);
      },
    });
    const r = await driven(c);
    expect(r.status).toBe('done');
    expect(c.provider.count()).toBe(1);
    const receipts = await c.inner.receipts(c.op.id);
    expect(receipts[0]).toMatchObject({ seq: 1, kind: 'dispatch', outcome: 'unknown' });
    expect(receipts[0]!.message).toContain('adapter broke before any promise');
  });

  it('a signal aborted before the send: a rejection with its reason, the lease released, nothing sent', async () => {
    const controller = new AbortController();
    const c = await claimed('aborted', { signal: controller.signal });
    const reason = new Error('caller gave up');
    controller.abort(reason);
    await expect(driven(c)).rejects.toBe(reason);
    expect(c.calls).toEqual(['release']);
    expect(c.provider.calls()).toBe(0);
    expect(await c.inner.get(c.op.id)).toMatchObject({ state: 'dispatched', leaseOwner: null });
  });
});

describe('run() on the clean path', () => {
  it('logs the first decision before it checks the signal: a caller that aborts on that entry sends nothing', async () => {
    const clock = createVirtualClock();
    const provider = createSandboxProvider({ ...REPLAYING, clock: clock.now, sleep: clock.sleep });
    const adapter = createSandboxAdapter({ provider });
    const controller = new AbortController();
    const reason = new Error('aborted on the decision');
    const events: string[] = [];
    const logger = (e: LogEntry) => {
      events.push(e.event);
      if (e.event === 'decision') controller.abort(reason);
    };
    const runner = createRunner({ ledger: createMemoryLedger(), clock, random: () => 0.5, logger });
    await expect(runner.run(adapter, OP, { params: { ref: 'abort-on-log', amount: 1 }, signal: controller.signal })).rejects.toBe(reason);
    expect(provider.calls()).toBe(0);
    // Nothing between the decision and the abort: no dispatch written, no provider call, no outcome.
    expect(events.slice(events.indexOf('decision'))).toEqual(['decision', 'aborted']);
  });
});
