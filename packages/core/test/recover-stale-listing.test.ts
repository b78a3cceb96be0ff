// recover() lists its candidates, then claims each. Whatever happened to a row between the two (another worker drove
// it, a person sent a corrected request as a new revision) is in the claimed record, not in the listed one: recover
// drives what it claimed, never a request the person replaced.

import { type AdapterV1, LedgerError, type RetrySafetyCard } from '@retrysafe/contract';
import { createRunner } from '@retrysafe/core';
import { describe, expect, it } from 'vitest';
import { afterCall, failingOnce, setup, stoppedBeforeSend } from './helpers.js';

const OP = 'records.create';

/** The sandbox adapter whose card says the provider stores rejections: a new revision gets a provider key of its own. */
function storingErrors(adapter: AdapterV1): AdapterV1 {
  const spec = adapter.operations[OP]!;
  const card: RetrySafetyCard = {
    ...spec.card,
    storedResult: {
      ...spec.card.storedResult,
      includesErrors: { value: true, source: 'test: the provider stores rejections' },
    },
  };
  return { ...adapter, operations: { ...adapter.operations, [OP]: { ...spec, card } } };
}

describe('recover() and a row that changed between its listing and its claim', () => {
  it('a corrected request (resend-with) made meanwhile, applied, its worker stopped: recover adopts it under its own key, never re-sends the replaced request: one record', async () => {
    const { provider, adapter: plain, ledger, clock } = setup();
    const adapter = storingErrors(plain);
    const bad = { ref: 'rc-1', note: 'bad' };
    const good = { ref: 'rc-1', note: 'good' };
    // A worker claims the operation and stops before sending anything: `claimed`, nothing at the provider.
    await expect(
      createRunner({ ledger, clock, random: () => 0.5 }).run(adapter, OP, { params: bad, signal: stoppedBeforeSend() }),
    ).rejects.toSatisfy(LedgerError.isInstance);
    expect(provider.calls()).toBe(0);
    clock.advance(120_000);
    // recover() lists it; before its claim, another worker drives it (the provider rejects it), a person sends the
    // corrected request, the provider applies it under the new revision's key, and that worker stops before writing
    // the outcome. Its lease runs out.
    const listing = afterCall(ledger, 'recoverCandidates', async () => {
      provider.failNext({ kind: 'rejected', message: 'note not accepted' });
      const other = await createRunner({ ledger, clock, random: () => 0.5 }).run(adapter, OP, { params: bad });
      expect(other.status).toBe('handed-off');
      const person = createRunner({ ledger: failingOnce(ledger, 'setState'), clock, random: () => 0.5 });
      await expect(
        person.resolve(other.businessOperationId, { action: 'resend-with', params: good }, { adapters: [adapter] }),
      ).rejects.toSatisfy(LedgerError.isInstance);
      expect(provider.count()).toBe(1);
      clock.advance(300_000);
    });
    const recoverer = createRunner({ ledger: listing, clock, random: () => 0.5 });
    const reports = await recoverer.recover({ adapters: [adapter] });
    expect(reports).toHaveLength(1);
    expect(provider.count()).toBe(1);
    expect(provider.records().map((r) => r.key)).toHaveLength(1);
    expect(reports[0]).toMatchObject({ action: 'adopted', to: 'succeeded' });
    const after = await ledger.get(reports[0]!.businessOperationId);
    expect(after?.params).toEqual(good);
  });
});

describe('recover() and a row finished and pruned between its listing and its claim', () => {
  it('is not created again as a new operation and sent a second time: reported already-terminal, nothing written', async () => {
    const { provider, adapter, ledger, clock } = setup({ replays: false, retentionMs: null, lookup: 'none' });
    // A worker claims the operation and stops before sending anything: `claimed`, nothing at the provider.
    await expect(
      createRunner({ ledger, clock, random: () => 0.5 }).run(adapter, OP, {
        params: { ref: 'rc-pruned' },
        signal: stoppedBeforeSend(),
      }),
    ).rejects.toSatisfy(LedgerError.isInstance);
    clock.advance(120_000);
    // recover() lists it; before its claim, another worker finishes it and a prune deletes the closed row.
    const listing = afterCall(ledger, 'recoverCandidates', async () => {
      const other = await createRunner({ ledger, clock, random: () => 0.5 }).run(adapter, OP, {
        params: { ref: 'rc-pruned' },
      });
      expect(other.status).toBe('done');
      expect((await ledger.prune!({ before: clock.now() + 1 })).pruned).toBe(1);
    });
    const reports = await createRunner({ ledger: listing, clock, random: () => 0.5 }).recover({ adapters: [adapter] });
    expect(provider.count()).toBe(1);
    expect(reports).toMatchObject([{ action: 'already-terminal' }]);
    expect(await ledger.list()).toEqual([]);
  });
});
