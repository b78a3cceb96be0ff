import { ConflictError, type Ledger } from '@retrysafe/contract';
import { createMemoryLedger, createRunner, createVirtualClock } from '@retrysafe/core';
import { createSandboxAdapter, createSandboxProvider, REPLAYING_BEHAVIOUR } from '@retrysafe/sandbox';
import { describe, expect, it } from 'vitest';
import { afterCall, failingOnce } from './helpers.js';

const OP = 'records.create';

describe('two different corrections of one rejected operation, one writing its revision while the other checks', () => {
  it('the later never takes over the revision the earlier left (its params on record): a conflict, nothing of it sent', async () => {
    const clock = createVirtualClock();
    const provider = createSandboxProvider({ ...REPLAYING_BEHAVIOUR, clock: clock.now, sleep: clock.sleep });
    const adapter = createSandboxAdapter({ provider });
    const inner = createMemoryLedger();
    // A ledger that writes a revision's claim and its receipt separately (no receiptWithState).
    const twoWrites: Ledger = { ...inner, capabilities: { claimDispatch: true } };
    const runnerOn = (ledger: Ledger) => createRunner({ ledger, clock, random: () => 0.5 });
    provider.failNext({ kind: 'rejected' });
    const first = await runnerOn(inner).run(adapter, OP, { params: { ref: 'o-1', note: 'bad' } });
    expect(first).toMatchObject({ status: 'handed-off', packet: { reason: 'rejected' } });

    // B's correction is claimed as revision 2; B stops before its receipt is written, and its lease runs out.
    const b = async () => {
      const dying = failingOnce(twoWrites, 'appendReceipt', { claimDispatch: true });
      await runnerOn(dying)
        .run(adapter, OP, { params: { ref: 'o-1', note: 'from B' } })
        .catch(() => undefined);
      expect((await inner.get(first.businessOperationId))?.resolution).toMatchObject({ revision: 2 });
      clock.advance(10 * 60_000);
    };
    // C's correction read the rejected operation and its receipts just before.
    const c = await runnerOn(afterCall(twoWrites, 'receipts', b))
      .run(adapter, OP, { params: { ref: 'o-1', note: 'from C' } })
      .catch((e: unknown) => e);
    expect(provider.calls()).toBe(1); // the first request only: nothing of C's went out on B's revision
    expect(ConflictError.isInstance(c)).toBe(true);
  });

  it('on a ledger writing the revision and its receipt at once: the same answer, not a refused-receipt LedgerError', async () => {
    const clock = createVirtualClock();
    const provider = createSandboxProvider({ ...REPLAYING_BEHAVIOUR, clock: clock.now, sleep: clock.sleep });
    const adapter = createSandboxAdapter({ provider });
    const ledger = createMemoryLedger();
    const runnerOn = (l: Ledger) => createRunner({ ledger: l, clock, random: () => 0.5 });
    provider.failNext({ kind: 'rejected' });
    const first = await runnerOn(ledger).run(adapter, OP, { params: { ref: 'o-2', note: 'bad' } });
    expect(first).toMatchObject({ status: 'handed-off', packet: { reason: 'rejected' } });
    // B's correction is sent (and applied); the write of its outcome fails, and B gives its lease back.
    const b = () =>
      runnerOn(failingOnce(ledger, 'setState'))
        .run(adapter, OP, { params: { ref: 'o-2', note: 'from B' } })
        .then(
          () => undefined,
          () => undefined,
        );
    const c = await runnerOn(afterCall(ledger, 'receipts', b))
      .run(adapter, OP, { params: { ref: 'o-2', note: 'from C' } })
      .catch((e: unknown) => e);
    expect(ConflictError.isInstance(c)).toBe(true);
    expect(provider.calls()).toBe(2); // the first request and B's
  });
});
