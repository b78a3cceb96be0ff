import type { AdapterV1, Outcome, RejectReason, RetrySafetyCard } from '@retrysafe/contract';
import { UnsafeResumeError } from '@retrysafe/contract';
import { describe, expect, it } from 'vitest';
import { scripted, setup } from './helpers.js';

const OP = 'records.create';
const refusal = (reason: RejectReason): Outcome => ({
  kind: 'rejected',
  reason,
  status: reason === 'authentication' ? 401 : 403,
  code: 'not_in_channel',
  message: 'the bot is not in the channel',
});

// Refused before processing for a cause outside the params (Slack's not_in_channel, a 401/403): nothing was applied,
// so a resume cannot make a second effect; it is refused again until the cause is fixed, then it goes out.
describe('a request refused for a cause outside its params, then the cause fixed', () => {
  for (const reason of ['permission', 'authentication', 'configuration'] as const) {
    it(`${reason}: the packet marks resume safe, and resume (no force) sends it once and is done`, async () => {
      const { provider, adapter, runner, ledger } = setup({ lookup: 'none' });
      const refusing = scripted(adapter, (n) => (n === 0 ? refusal(reason) : undefined));
      const r = await runner.run(refusing, OP, { params: { ref: `fixed-${reason}`, amount: 5 } });
      expect(r.status === 'handed-off' && r.packet.reason).toBe('rejected');
      const resume = r.status === 'handed-off' ? r.packet.safeNextActions[0] : undefined;
      expect(resume).toMatchObject({ action: 'resume', safe: true });
      expect(resume?.why).toMatch(/nothing was applied/);
      expect(resume?.why).toMatch(/refused again until .*fixed/);
      // The same call is answered from the packet (one intent, one id): nothing sent.
      expect((await runner.run(refusing, OP, { params: { ref: `fixed-${reason}`, amount: 5 } })).status).toBe(
        'handed-off',
      );
      expect(provider.calls()).toBe(0);
      const resumed = await runner.resolve(r.businessOperationId, { action: 'resume' }, { adapters: [refusing] });
      expect(resumed).toMatchObject({ status: 'done', adopted: false });
      expect(provider.calls()).toBe(1);
      expect(provider.count()).toBe(1);
      // The same key: nothing the provider processed is stored under it.
      const keys = (await ledger.receipts(r.businessOperationId)).map((x) => x.providerKey);
      expect(new Set(keys).size).toBe(1);
    });
  }

  it('a validation rejection (the params themselves) still marks resume not safe and points to resend-with', async () => {
    const { provider, adapter, runner } = setup({ lookup: 'none' });
    provider.failNext({ kind: 'rejected', message: 'amount must be positive' });
    const r = await runner.run(adapter, OP, { params: { ref: 'invalid-1', amount: 5 } });
    const resume = r.status === 'handed-off' ? r.packet.safeNextActions[0] : undefined;
    expect(resume).toMatchObject({ action: 'resume', safe: false });
    expect(resume?.why).toMatch(/resend-with/);
    await expect(
      runner.resolve(r.businessOperationId, { action: 'resume' }, { adapters: [adapter] }),
    ).rejects.toSatisfy(UnsafeResumeError.isInstance);
  });

  // No card says whether a not-found lies outside the params: GitHub answers 404 for a repository the token cannot see,
  // Slack's channel_not_found documents an invalid channel value. Left not safe, and the packet says what to check.
  it('a not-found rejection: resume not safe, and the packet says it may be access as well as the params', async () => {
    const { adapter, runner } = setup({ lookup: 'none' });
    const refusing = scripted(adapter, () => ({ ...refusal('not-found'), status: 404, code: 'not_found' }));
    const r = await runner.run(refusing, OP, { params: { ref: 'missing-1', amount: 5 } });
    const resume = r.status === 'handed-off' ? r.packet.safeNextActions[0] : undefined;
    expect(resume).toMatchObject({ action: 'resume', safe: false });
    expect(resume?.why).toMatch(/cannot see/);
    expect(resume?.why).toMatch(/--force/);
    await expect(
      runner.resolve(r.businessOperationId, { action: 'resume' }, { adapters: [refusing] }),
    ).rejects.toSatisfy(UnsafeResumeError.isInstance);
  });

  it('a forced resume where the provider may have stored the rejection goes out under the key a correction takes', async () => {
    const { provider, adapter, runner, ledger } = setup({ lookup: 'none' });
    const spec = adapter.operations[OP]!;
    const includesErrors = { value: true, source: 'test: the provider stores errors under the key' };
    const card = { ...spec.card, storedResult: { ...spec.card.storedResult, includesErrors } } as RetrySafetyCard;
    const storing = { ...adapter, operations: { ...adapter.operations, [OP]: { ...spec, card } } } as AdapterV1;
    provider.failNext({ kind: 'rejected', message: 'activate the account first' });
    const r = await runner.run(storing, OP, { params: { ref: 'stored-400', amount: 5 } });
    expect(r.status).toBe('handed-off');
    const resumed = await runner.resolve(
      r.businessOperationId,
      { action: 'resume', force: true },
      { adapters: [storing] },
    );
    expect(resumed).toMatchObject({ status: 'done' });
    const sends = (await ledger.receipts(r.businessOperationId)).filter(
      (x) => x.kind === 'dispatch' || x.kind === 'resend',
    );
    expect(sends).toHaveLength(2);
    expect(sends[1]?.providerKey).not.toBe(sends[0]?.providerKey);
    expect(provider.count()).toBe(1);
  });
});
