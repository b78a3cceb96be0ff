import { type Outcome, RetryExhaustedError } from '@retrysafe/contract';
import { createMemoryLedger } from '@retrysafe/core';
import { operationStatus } from '@retrysafe/core/agent';
import { describe, expect, it } from 'vitest';
import { afterCall, gated, scripted, setup } from './helpers.js';

const OP = 'records.create';
const refused: Outcome = {
  kind: 'not-applied',
  message: 'connect ECONNREFUSED',
  code: 'ECONNREFUSED',
  neverSent: true,
};
const throttled: Outcome = { kind: 'not-applied', message: 'rate limited', status: 429 };
const params = (ref: string) => ({ params: { ref, amount: 5 } });

// Every call failed before its request left: no effect can exist, so the claim is given back instead of a hand-off,
// and a later call of the same id simply runs.
describe('an operation none of whose calls was sent', () => {
  it('is given back (not-sent, no packet, never recovered) and the next call of the same id sends it once', async () => {
    const { provider, adapter, runner, ledger, packets } = setup({}, { policy: { maxAttempts: 3 } });
    let down = true;
    const flaky = scripted(adapter, () => (down ? refused : undefined));
    const first = runner.run(flaky, OP, params('give-back'));
    await expect(first).rejects.toSatisfy(RetryExhaustedError.isInstance);
    await expect(first).rejects.toThrow(/nothing was sent/);
    const [row] = await ledger.list({});
    expect(row).toMatchObject({ state: 'not-sent', leaseOwner: null, attemptCount: 3 });
    const receipts = await ledger.receipts(row!.businessOperationId);
    expect(receipts.map((r) => [r.outcome, r.neverSent])).toEqual(Array(3).fill(['not-applied', true]));
    expect(receipts.map((r) => r.decision.action)).toEqual(['send', 'send', 'give-back']);
    expect(packets).toEqual([]);
    const status = await operationStatus(ledger, row!.businessOperationId);
    expect(status).toMatchObject({ state: 'not-sent', handoff: null });
    expect(status.found && status.message).toMatch(/nothing was sent.*call the operation again/i);
    expect(await runner.recover({ adapters: [flaky] })).toEqual([]);
    expect(provider.calls()).toBe(0);

    down = false;
    const again = await runner.run(flaky, OP, params('give-back'));
    expect(again).toMatchObject({ status: 'done', adopted: false, attempts: 1 });
    expect(provider.count()).toBe(1);
    expect(await ledger.receipts(row!.businessOperationId)).toHaveLength(4);
  });

  it('its calls that never left are no doubt later: refused for a cause outside its params, resume is safe', async () => {
    const { runner } = setup({}, { policy: { maxAttempts: 2 } });
    const noAccess: Outcome = { kind: 'rejected', reason: 'permission', status: 403, message: 'not in the channel' };
    let down = true;
    const flaky = scripted(
      scripted(setup().adapter, () => noAccess),
      () => (down ? refused : undefined),
    );
    await expect(runner.run(flaky, OP, params('then-403'))).rejects.toSatisfy(RetryExhaustedError.isInstance);
    down = false;
    const r = await runner.run(flaky, OP, params('then-403'));
    const resume = r.status === 'handed-off' ? r.packet.safeNextActions[0] : undefined;
    expect(resume).toMatchObject({ action: 'resume', safe: true });
  });

  it('left open by a run that stopped, is given back by recover() too (reported given-back), not handed off', async () => {
    const { runner, ledger, packets } = setup({}, { policy: { maxAttempts: 2 } });
    const stop = new AbortController();
    const down = scripted(setup().adapter, () => (stop.abort(new Error('caller gone')), refused));
    await expect(runner.run(down, OP, { ...params('stopped'), signal: stop.signal })).rejects.toThrow('caller gone');
    expect((await ledger.list({}))[0]).toMatchObject({ state: 'claimed', leaseOwner: null });
    const [report] = await runner.recover({ adapters: [down] });
    expect(report).toMatchObject({ from: 'claimed', to: 'not-sent', action: 'given-back' });
    expect(report?.error?.message).toMatch(/nothing was sent/);
    expect(packets).toEqual([]);
  });

  it('a call that waited for the run giving it back sends it itself, nothing handed off', async () => {
    let first: Promise<unknown> = Promise.resolve();
    let down = true;
    // The second call's claim finds the first in flight (busy); the first then ends, given back, and the upstream is up.
    const ledger = afterCall(
      createMemoryLedger(),
      'claim',
      async () => {
        gate.resolve();
        await first.catch(() => undefined);
        down = false;
      },
      2,
    );
    const { provider, adapter, runner, packets } = setup({}, { ledger, policy: { maxAttempts: 1 } });
    const { held, atGate, gate } = gated(scripted(adapter, () => (down ? refused : undefined)));
    first = runner.run(held, OP, params('waited'));
    await atGate.promise;
    expect(await runner.run(held, OP, params('waited'))).toMatchObject({ status: 'done', adopted: false });
    await expect(first).rejects.toThrow(/nothing was sent/);
    expect(provider.count()).toBe(1);
    expect(packets).toEqual([]);
  });

  it('is handed off as before when one call may have reached the provider (a 429 is not "never sent")', async () => {
    const { adapter, runner, ledger, packets } = setup({}, { policy: { maxAttempts: 3 } });
    const flaky = scripted(adapter, (n) => (n === 0 ? throttled : refused));
    const r = await runner.run(flaky, OP, params('mixed'));
    expect(r.status === 'handed-off' && r.packet.reason).toBe('retry-exhausted');
    expect((await ledger.list({}))[0]?.state).toBe('handed-off');
    expect(packets).toHaveLength(1);
  });
});
