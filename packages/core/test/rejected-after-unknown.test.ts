import type { HandoffPacket, Receipt } from '@retrysafe/contract';
import { createMemoryLedger, createRunner, createVirtualClock } from '@retrysafe/core';
import { describe, expect, it } from 'vitest';
import { everyAttemptNotApplied } from '../src/intake/supersede.js';
import { setup } from './helpers.js';

// A rejection answers the request it was sent with; an earlier attempt whose outcome is unknown may still have
// applied. The packet must not tell a person "not applied" or "start a new operation" then: that is a second effect.
describe('a rejection after an attempt whose outcome is unknown', () => {
  it('hands off as rejected without saying the effect was not applied, and offers no new operation', async () => {
    const { provider, adapter, runner, packets } = setup({ lookup: 'none' });
    provider.failNext({ kind: 'unknown-after-commit' }); // the record IS created; the caller gets a 500
    provider.failNext({ kind: 'rejected' }); // the same-key re-send is refused
    const result = await runner.run(adapter, 'records.create', { params: { ref: 'maybe-1', amount: 5 } });
    expect(result.status).toBe('handed-off');
    const packet = packets.at(-1) as HandoffPacket;
    expect(packet.reason).toBe('rejected');
    expect(packet.explanation).not.toMatch(/not applied/);
    expect(packet.explanation).toMatch(/may have applied/);
    const resume = packet.safeNextActions.find((a) => a.action === 'resume')!;
    expect(resume.safe).toBe(false);
    expect(resume.why).not.toMatch(/new operation/);
    expect(resume.why).toMatch(/may already exist|may have applied/);
    expect(packet.safeNextActions.map((a) => a.action)).not.toContain('resend-with');
  });

  it('a rejection of the first attempt still says it was not applied', async () => {
    const { provider, adapter, runner, packets } = setup({ lookup: 'none' });
    provider.failNext({ kind: 'rejected' });
    const result = await runner.run(adapter, 'records.create', { params: { ref: 'plain-1', amount: 5 } });
    expect(result.status).toBe('handed-off');
    const packet = packets.at(-1) as HandoffPacket;
    expect(packet.explanation).toMatch(/not applied and will not succeed as is/);
  });
});

// A `conflict` rejection says the key already holds another request (a correction under a kept key whose first call
// had landed, or the key used before by a ledger that was reset): that request's effect may exist under it.
describe('a rejection as a conflict with what the provider holds under the key', () => {
  it('never says "not applied": a new operation for the intent would make the effect twice', async () => {
    const { provider, adapter, runner, packets } = setup({ lookup: 'none' });
    // Another ledger (reset, or another application) already sent this intent under the key, with other params.
    const before = createRunner({ ledger: createMemoryLedger(), clock: createVirtualClock(), random: () => 0.5 });
    expect((await before.run(adapter, 'records.create', { params: { ref: 'held-1', amount: 5 } })).status).toBe('done');
    const result = await runner.run(adapter, 'records.create', { params: { ref: 'held-1', amount: 7 } });
    expect(result).toMatchObject({ status: 'handed-off', packet: { reason: 'rejected' } });
    const packet = packets.at(-1) as HandoffPacket;
    expect(packet.explanation).not.toMatch(/not applied/);
    expect(packet.explanation).toMatch(/may exist/);
    const resume = packet.safeNextActions.find((a) => a.action === 'resume')!;
    expect(resume.why).not.toMatch(/outcome is unknown/);
    expect(resume.why).toMatch(/conflict/);
    expect(packet.safeNextActions.map((a) => a.action)).not.toContain('resend-with');
    expect(provider.count()).toBe(1);
  });
});

// The why names what the attempt's outcome was in words a sentence can hold, for every outcome a send records.
describe('why an attempt may have applied', () => {
  it.each(['succeeded', 'replayed', 'in-progress', 'unknown', null] as const)('a send recorded %s', (outcome) => {
    const sent = { kind: 'dispatch', attemptId: 'att-1', startedAt: 'T1', outcome } as unknown as Receipt;
    const v = everyAttemptNotApplied([sent], { attemptCount: 1, resolution: null });
    expect(v.ok).toBe(false);
    expect(!v.ok && v.why).toMatch(
      /^the call at T1 (ended with outcome [a-z-]+|left no outcome): it may have been applied$/,
    );
  });
});
