// The attempt loop (src/runner/loop.ts) on the clean path, through run(): whatever throws after the
// claim, before the send or after it, comes back as a rejection of run()'s promise; and the loop's
// order holds: the decision is logged before the abort is checked, nothing is sent once aborted.

import type { Ledger } from '@retrysafe/contract';
import { createMemoryLedger, createRunner, createVirtualClock, type LogEntry } from '@retrysafe/core';
import { createSandboxAdapter, createSandboxProvider, REPLAYING_BEHAVIOUR } from '@retrysafe/sandbox';
import { describe, expect, it } from 'vitest';
import { sandboxOn, setup } from './helpers.js';

const OP = 'records.create';

interface Rig {
  /** When set, the clock's `now` throws this. */
  clockError?: Error;
  /** When set, the ledger method of this name throws (synchronously, no promise) this. */
  ledgerThrow?: { method: string; error: Error };
  /** Called once the claim has answered (the operation is claimed, already dispatched). */
  afterClaim?: () => void;
}

/** A runner whose clock and ledger the test can break once the claim has answered; `calls` holds the ledger calls after the claim. */
function rigged(opts: { doExecute?: (original: (...a: never[]) => unknown) => (...a: never[]) => unknown } = {}) {
  const rig: Rig = {};
  const virtual = createVirtualClock();
  const clock = {
    now: () => {
      if (rig.clockError) throw rig.clockError;
      return virtual.now();
    },
    sleep: virtual.sleep,
  };
  const provider = createSandboxProvider({ ...REPLAYING_BEHAVIOUR, clock: virtual.now, sleep: virtual.sleep });
  const sandbox = createSandboxAdapter({ provider });
  const adapter = opts.doExecute
    ? (Object.create(sandbox, {
        doExecute: { value: opts.doExecute(sandbox.doExecute.bind(sandbox) as never) },
      }) as typeof sandbox)
    : sandbox;
  const inner = createMemoryLedger();
  const calls: string[] = [];
  const ledger = new Proxy(inner, {
    get(target, prop) {
      const v = Reflect.get(target, prop) as unknown;
      if (typeof v !== 'function') return v;
      return (...args: unknown[]) => {
        if (prop === 'claim') {
          return (v as (...a: unknown[]) => Promise<unknown>).apply(target, args).then((r) => {
            rig.afterClaim?.();
            return r;
          });
        }
        calls.push(String(prop));
        if (rig.ledgerThrow?.method === prop) throw rig.ledgerThrow.error;
        return (v as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  }) as Ledger;
  const runner = createRunner({ ledger, clock, random: () => 0.5 });
  return { rig, runner, adapter, provider, inner, calls };
}

describe('the attempt loop on the clean path', () => {
  it('sends once and completes: the result written with its receipt in one write', async () => {
    const c = rigged();
    const r = await c.runner.run(c.adapter, OP, { params: { ref: 'clean', amount: 1 } });
    expect(r).toMatchObject({ status: 'done', attempts: 1, adopted: false });
    expect(c.calls).toEqual(['setState']);
    expect(c.provider.count()).toBe(1);
    expect((await c.inner.receipts(r.businessOperationId)).map((x) => [x.seq, x.kind, x.outcome])).toEqual([
      [1, 'dispatch', 'succeeded'],
    ]);
  });

  it('a clock that throws before the send: a rejection, nothing sent', async () => {
    const c = rigged();
    const error = new Error('clock broke');
    c.rig.afterClaim = () => void (c.rig.clockError = error);
    await expect(c.runner.run(c.adapter, OP, { params: { ref: 'clock', amount: 1 } })).rejects.toBe(error);
    expect(c.provider.calls()).toBe(0);
  });

  it('a ledger whose completion write throws synchronously: a rejection after the one send, the lease released', async () => {
    const c = rigged();
    c.rig.ledgerThrow = { method: 'setState', error: new Error('ledger broke') };
    await expect(c.runner.run(c.adapter, OP, { params: { ref: 'ledger', amount: 1 } })).rejects.toBe(
      c.rig.ledgerThrow.error,
    );
    expect(c.provider.count()).toBe(1);
    expect(c.calls).toEqual(['setState', 'release']);
  });

  it('an adapter that throws synchronously: an unknown outcome, reconciled, never a throw', async () => {
    let n = 0;
    const c = rigged({
      doExecute:
        (original) =>
        (...a) => {
          if (++n === 1) throw new Error('adapter broke before any promise');
          return original(...a);
        },
    });
    const r = await c.runner.run(c.adapter, OP, { params: { ref: 'adapter', amount: 1 } });
    expect(r.status).toBe('done');
    expect(c.provider.count()).toBe(1);
    const receipts = await c.inner.receipts(r.businessOperationId);
    expect(receipts[0]).toMatchObject({ seq: 1, kind: 'dispatch', outcome: 'unknown' });
    expect(receipts[0]!.message).toContain('adapter broke before any promise');
  });

  it('a signal aborted before the send: a rejection with its reason, the lease released, nothing sent', async () => {
    const c = rigged();
    const controller = new AbortController();
    const reason = new Error('caller gave up');
    c.rig.afterClaim = () => controller.abort(reason);
    await expect(
      c.runner.run(c.adapter, OP, { params: { ref: 'aborted', amount: 1 }, signal: controller.signal }),
    ).rejects.toBe(reason);
    expect(c.calls).toEqual(['release']);
    expect(c.provider.calls()).toBe(0);
    const [record] = await c.inner.list();
    expect(record).toMatchObject({ state: 'dispatched', leaseOwner: null });
  });
});

describe('run() on the clean path', () => {
  it('a signal aborted before run(): the claim is not born dispatched, the row stays claimed and never dispatched', async () => {
    const { provider, adapter, ledger, runner } = setup();
    const reason = new Error('gave up before calling');
    await expect(
      runner.run(adapter, OP, { params: { ref: 'abort-first', amount: 1 }, signal: AbortSignal.abort(reason) }),
    ).rejects.toBe(reason);
    expect(provider.calls()).toBe(0);
    const [record] = await ledger.list();
    expect(record).toMatchObject({ state: 'claimed', attemptCount: 0, firstDispatchedAt: null, leaseOwner: null });
  });

  it('logs the first decision before it checks the signal: a caller that aborts on that entry sends nothing', async () => {
    const { clock, provider, adapter } = sandboxOn();
    const controller = new AbortController();
    const reason = new Error('aborted on the decision');
    const events: string[] = [];
    const logger = (e: LogEntry) => {
      events.push(e.event);
      if (e.event === 'decision') controller.abort(reason);
    };
    const runner = createRunner({ ledger: createMemoryLedger(), clock, random: () => 0.5, logger });
    await expect(
      runner.run(adapter, OP, { params: { ref: 'abort-on-log', amount: 1 }, signal: controller.signal }),
    ).rejects.toBe(reason);
    expect(provider.calls()).toBe(0);
    // Nothing between the decision and the abort: no dispatch written, no provider call, no outcome.
    expect(events.slice(events.indexOf('decision'))).toEqual(['decision', 'aborted']);
  });
});
