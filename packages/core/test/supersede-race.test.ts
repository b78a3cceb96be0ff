import { ConflictError, type Ledger, LedgerError } from '@retrysafe/contract';
import { createMemoryLedger, createRunner, createVirtualClock } from '@retrysafe/core';
import { createSandboxAdapter, createSandboxProvider, REPLAYING_BEHAVIOUR } from '@retrysafe/sandbox';
import { describe, expect, it } from 'vitest';
import { afterCall, failingOnce, sandboxOn, scripted } from './helpers.js';

const OP = 'records.create';

describe('two different corrections of one rejected operation, one writing its revision while the other checks', () => {
  it('on a ledger writing the revision and its receipt at once: the same answer, not a refused-receipt LedgerError', async () => {
    const { clock, provider, adapter } = sandboxOn();
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

describe('a crash after the correction under a kept key was sent', () => {
  it('recover() finds the first request’s record under the key (its 429 had landed): never adopted for the correction', async () => {
    const clock = createVirtualClock();
    // A duplicate of a running request is a second record here: after an unknown outcome, look up rather than re-send.
    const behaviour = { ...REPLAYING_BEHAVIOUR, concurrency: 'duplicates' } as const;
    const provider = createSandboxProvider({ ...behaviour, clock: clock.now, sleep: clock.sleep });
    const sandbox = createSandboxAdapter({ provider });
    // The first call is applied, but answered as a 429 the adapter calls not-applied (a same-key re-send folds it).
    let calls = 0;
    const adapter: typeof sandbox = {
      ...sandbox,
      doExecute: async (op, params, ctx) => {
        const out = await sandbox.doExecute(op, params, ctx);
        return ++calls === 1 ? { kind: 'not-applied', status: 429, message: 'rate limited' } : out;
      },
    };
    const ledger = createMemoryLedger();
    const runner = createRunner({ ledger, clock, random: () => 0.5, policy: { maxAttempts: 1 } });
    const first = await runner.run(adapter, OP, { params: { ref: 'o-3', note: 'a' } });
    expect(first).toMatchObject({ status: 'handed-off', packet: { reason: 'retry-exhausted' } });
    // The correction goes out under the kept key (the provider refuses it: other params); its outcome is never written.
    const dying = createRunner({ ledger: failingOnce(ledger, 'handOff'), clock, random: () => 0.5 });
    await expect(dying.run(adapter, OP, { params: { ref: 'o-3', note: 'b' } })).rejects.toSatisfy(
      LedgerError.isInstance,
    );
    clock.advance(10 * 60_000);
    const [report] = await runner.recover({ adapters: [adapter] });
    expect(report?.action).not.toBe('adopted');
    expect(report?.result?.status).not.toBe('done');
    expect(provider.count()).toBe(1);
  });
});

describe('a correction checked while another correction is in flight as the new revision', () => {
  it('is refused as a conflict (the revision may apply), nothing of it sent; the revision in flight ends done: one record', async () => {
    const { clock, provider, adapter } = sandboxOn();
    const ledger = createMemoryLedger();
    const runner = createRunner({ ledger, clock, random: () => 0.5 });
    provider.failNext({ kind: 'rejected' });
    const first = await runner.run(adapter, OP, { params: { ref: 'o-4', note: 'bad' } });
    expect(first).toMatchObject({ status: 'handed-off', packet: { reason: 'rejected' } });
    // A's correction is sent and held at the provider until B has been answered.
    const { held, inFlight, release } = holdFirstSend(adapter);
    let a: Promise<unknown> = Promise.resolve();
    // B read the rejected operation and its receipts just before A's revision was claimed.
    const b = await createRunner({
      ledger: afterCall(ledger, 'receipts', async () => {
        a = runner.run(held, OP, { params: { ref: 'o-4', note: 'from A' } });
        await inFlight;
      }),
      clock,
      random: () => 0.5,
    })
      .run(adapter, OP, { params: { ref: 'o-4', note: 'from B' } })
      .catch((e: unknown) => e);
    expect(ConflictError.isInstance(b) && b.storedMayApply).toBe(true);
    expect((b as Error).message).toMatch(/while a new revision was being written/);
    expect(provider.calls()).toBe(1); // the first request only, so far: nothing of B's
    release.now();
    expect(await a).toMatchObject({ status: 'done' });
    expect(provider.count()).toBe(1);
  });

  it('the same correction made twice at once: the later waits for the revision in flight and gets its result, one record', async () => {
    const { clock, provider, adapter } = sandboxOn();
    const ledger = createMemoryLedger();
    const runner = createRunner({ ledger, clock, random: () => 0.5 });
    provider.failNext({ kind: 'rejected' });
    await runner.run(adapter, OP, { params: { ref: 'o-5', note: 'bad' } });
    const { held, inFlight, release } = holdFirstSend(adapter);
    let a: Promise<unknown> = Promise.resolve();
    const corrected = { ref: 'o-5', note: 'fixed' };
    const b = createRunner({
      ledger: afterCall(ledger, 'receipts', async () => {
        a = runner.run(held, OP, { params: corrected });
        await inFlight;
      }),
      clock,
      random: () => 0.5,
    }).run(adapter, OP, { params: corrected });
    await inFlight;
    release.now();
    expect(await a).toMatchObject({ status: 'done' });
    expect(await b).toMatchObject({ status: 'done' });
    expect(provider.count()).toBe(1);
    expect(provider.calls()).toBe(2); // the rejected first request and A's: B sent nothing of its own
  });
});

/** The adapter with its first send held at the provider: `inFlight` once it is, `release.now()` lets it go. */
function holdFirstSend(adapter: Parameters<typeof scripted>[0]) {
  const release = { now: () => {} };
  let entered = () => {};
  const inFlight = new Promise<void>((r) => (entered = r));
  const gate = () =>
    new Promise<void>((r) => {
      release.now = r;
      entered();
    });
  return { held: scripted(adapter, (n, send) => (n === 0 ? gate().then(send) : undefined)), inFlight, release };
}
