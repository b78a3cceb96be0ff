// A person's decision names the packet it was decided on (ResolveOptions.handoffAt): once the operation was resumed
// and handed off again since, the decision is refused with a typed error and nothing is sent or written.

import { InvalidStateError, UnsafeResumeError } from '@retrysafe/contract';
import { createRunner, type Resolution } from '@retrysafe/core';
import { describe, expect, it } from 'vitest';
import { afterCall, setup } from './helpers.js';

const OP = 'records.create';
const FORGETFUL = { replays: false, retentionMs: null, lookup: 'none' } as const;

/** Packet 1 (throttled, nothing applied: every action offered); then another person's resume, handed off again. */
async function handedOffTwice(ref: string, second: 'not-applied' | 'unknown-after-commit') {
  const env = setup(FORGETFUL, { policy: { maxAttempts: 2 } });
  const { provider, adapter, runner, clock } = env;
  provider.failNext({ kind: 'not-applied', retryAfterMs: 10 }, 2);
  const first = await runner.run(adapter, OP, { params: { ref } });
  if (first.status !== 'handed-off') throw new Error(first.status);
  const id = first.businessOperationId;
  const resumeAgain = async () => {
    clock.advance(1_000);
    provider.failNext(second === 'not-applied' ? { kind: second, retryAfterMs: 10 } : { kind: second }, 2);
    const again = await runner.resolve(id, { action: 'resume' }, { adapters: [adapter], by: 'bob' });
    if (again.status !== 'handed-off') throw new Error(again.status);
    return again.packet;
  };
  return { ...env, id, p1: first.packet, resumeAgain };
}

const DECISIONS: readonly [Resolution, typeof InvalidStateError | typeof UnsafeResumeError][] = [
  [{ action: 'abandon' }, InvalidStateError],
  [{ action: 'mark-done', providerRef: 'rec_seen' }, InvalidStateError],
  [{ action: 'resume' }, UnsafeResumeError],
  [{ action: 'resend-with', params: { ref: 'decided-resend-with', note: 'fixed' } }, InvalidStateError],
];

describe('a decision made on a packet the operation has since replaced', () => {
  for (const [decision, error] of DECISIONS) {
    it(`${decision.action}: refused (${error.name}), nothing sent or written; on the current packet it applies`, async () => {
      const env = await handedOffTwice(`decided-${decision.action}`, 'not-applied');
      const { provider, adapter, runner, ledger, id, p1 } = env;
      const p2 = await env.resumeAgain();
      expect(p2.createdAt).not.toBe(p1.createdAt);
      const [before, receipts, calls] = [await ledger.get(id), await ledger.receipts(id), provider.calls()];
      const opts = { adapters: [adapter], by: 'alice' };
      const err = await runner.resolve(id, decision, { ...opts, handoffAt: p1.createdAt }).catch((e: unknown) => e);
      expect(error.isInstance(err) && err.message).toMatch(/handed off again/);
      expect(provider.calls()).toBe(calls);
      expect(await ledger.get(id)).toEqual(before);
      expect(await ledger.receipts(id)).toEqual(receipts);
      await expect(runner.resolve(id, decision, { ...opts, handoffAt: p2.createdAt })).resolves.toBeTruthy();
    });
  }

  it('abandon decided on "nothing applied", after a resume whose answer was lost: refused, the effect stays on record', async () => {
    const env = await handedOffTwice('decided-lost', 'unknown-after-commit');
    const { provider, runner, ledger, id, p1 } = env;
    await env.resumeAgain();
    expect(provider.count()).toBe(1);
    const err = await runner.resolve(id, { action: 'abandon' }, { handoffAt: p1.createdAt }).catch((e: unknown) => e);
    expect(InvalidStateError.isInstance(err)).toBe(true);
    expect((await ledger.get(id))?.state).toBe('handed-off');
  });

  it('handed off again between the check and the write: the abandon is refused, nothing written', async () => {
    const env = await handedOffTwice('decided-race', 'unknown-after-commit');
    const { ledger, clock, id, p1 } = env;
    // Bob's resume runs whole right after Alice's abandon last reads the operation (its fourth read: the check, the
    // chain's two, then the one it closes), before her write.
    const alices = afterCall(ledger, 'get', async () => void (await env.resumeAgain()), 4);
    const alice = createRunner({ ledger: alices, clock });
    const err = await alice.resolve(id, { action: 'abandon' }, { handoffAt: p1.createdAt }).catch((e: unknown) => e);
    expect(InvalidStateError.isInstance(err)).toBe(true);
    const after = await ledger.get(id);
    expect(after?.state).toBe('handed-off');
    expect(after?.handoff?.createdAt).not.toBe(p1.createdAt);
  });

  it('a resume read before another resume ran whole and handed it off again (resume safe): refused, nothing sent', async () => {
    const env = await handedOffTwice('decided-resume-race', 'not-applied');
    const { provider, adapter, ledger, clock, id, p1 } = env;
    let calls = 0;
    // Bob's resume runs whole right after Alice's resume first reads the operation.
    const alices = afterCall(ledger, 'get', async () => {
      await env.resumeAgain();
      calls = provider.calls();
    });
    const alice = createRunner({ ledger: alices, clock });
    const err = await alice
      .resolve(id, { action: 'resume' }, { adapters: [adapter], handoffAt: p1.createdAt })
      .catch((e: unknown) => e);
    expect(UnsafeResumeError.isInstance(err)).toBe(true);
    expect(provider.calls()).toBe(calls);
    expect((await ledger.get(id))?.state).toBe('handed-off');
  });
});
