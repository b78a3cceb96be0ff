import { ConflictError, type Outcome } from '@retrysafe/contract';
import { createRunner } from '@retrysafe/core';
import { describe, expect, it } from 'vitest';
import { toAgentResult } from '../src/agent.js';
import { afterCall, gated, scripted, setup } from './helpers.js';

const ACTION: Outcome = { kind: 'rejected', reason: 'action-required', message: 'open the URL first' };

// A request refused until the user takes a step the provider names (an MCP URL elicitation) was not processed: the
// same request is sent again once the user has, with no person's resolve. Any other rejection, or one after an attempt
// that may have applied, is never sent again as is.
describe('a rejection until the user takes a step (action-required)', () => {
  const params = { ref: 'consent-1', amount: 5 };

  it('the same request, called again, is sent as a new revision and done', async () => {
    const { provider, adapter, runner, packets } = setup({ lookup: 'none' });
    const refusing = scripted(adapter, (n) => (n === 0 ? ACTION : undefined));
    const refused = await runner.run(refusing, 'records.create', { params });
    expect(toAgentResult(refused).message).toMatch(/call again with the same arguments: the call is sent again/);
    expect(provider.calls()).toBe(0);
    expect(packets).toHaveLength(0); // the caller's to act on, not a person's
    // A person who reads it anyway (ledger show) is told the same, not that it will be rejected again.
    const resume =
      refused.status === 'handed-off' ? refused.packet.safeNextActions.find((a) => a.action === 'resume') : undefined;
    expect(resume?.why).toMatch(/until the user takes the step it asked for/);
    const again = await runner.run(refusing, 'records.create', { params });
    expect(again).toMatchObject({ status: 'done', adopted: false });
    expect(provider.calls()).toBe(1);
  });

  it('another rejection, or one after an attempt that may have applied, is not sent again', async () => {
    const { provider, adapter, runner, packets } = setup({ lookup: 'none' });
    const invalid = scripted(adapter, () => ({ ...ACTION, reason: 'validation' }));
    expect(toAgentResult(await runner.run(invalid, 'records.create', { params })).message).toMatch(/Do not retry/);
    expect((await runner.run(invalid, 'records.create', { params })).status).toBe('handed-off');
    provider.failNext({ kind: 'unknown-after-commit' });
    const refusedSecond = scripted(adapter, (n) => (n === 1 ? ACTION : undefined));
    const late = { ref: 'consent-2', amount: 5 };
    expect((await runner.run(refusedSecond, 'records.create', { params: late })).status).toBe('handed-off');
    const calls = provider.calls();
    expect((await runner.run(refusedSecond, 'records.create', { params: late })).status).toBe('handed-off');
    expect(provider.calls()).toBe(calls);
    expect(packets).toHaveLength(2); // both a person's
  });

  // Only a new call comes after the user's step: one that has not seen the hand-off yet answers it.
  describe('a call that has not seen the hand-off answers it, nothing sent again', () => {
    const counting = (adapter: Parameters<typeof scripted>[0]) => {
      const sent = { n: 0 };
      return { sent, refusing: scripted(adapter, () => (sent.n++, ACTION)) };
    };

    it('a follow-up (RunInput.followUp): the hand-off; with other params, a conflict rather than a revision', async () => {
      const { adapter, runner } = setup({ lookup: 'none' });
      const { sent, refusing } = counting(adapter);
      await runner.run(refusing, 'records.create', { params });
      const again = await runner.run(refusing, 'records.create', { params, followUp: true });
      expect(again).toMatchObject({ status: 'handed-off', packet: { reason: 'rejected' } });
      const other = { params: { ...params, amount: 6 }, followUp: true };
      const conflict = await runner.run(refusing, 'records.create', other).catch((e: unknown) => e);
      expect(ConflictError.isInstance(conflict)).toBe(true);
      expect(sent.n).toBe(1);
    });

    it("the runner's own wait for the holder, whose lease ran out as it handed off: that hand-off", async () => {
      const { adapter, ledger, runner, clock } = setup({ lookup: 'none' }, { policy: { leaseMs: 1000 } });
      const { sent, refusing } = counting(adapter);
      const { held, atGate, gate } = gated(refusing);
      const holder = runner.run(held, 'records.create', { params });
      await atGate.promise;
      // Between this waiter's read (the lease still live) and its claim: the lease runs out, the holder hands off.
      const seen = afterCall(ledger, 'get', async () => {
        clock.advance(5000);
        gate.resolve();
        await holder;
      });
      const waiter = createRunner({ ledger: seen, clock, owner: 'waiter', random: () => 0.5 });
      const answer = await waiter.run(refusing, 'records.create', { params });
      expect((await holder).status).toBe('handed-off');
      expect(answer).toMatchObject({ status: 'handed-off', packet: { reason: 'rejected' } });
      expect(sent.n).toBe(1);
    });
  });
});
