import { type AdapterV1, ConflictError, type Outcome, RetryExhaustedError } from '@retrysafe/contract';
import { describe, expect, it } from 'vitest';
import { gated, scripted, setup } from './helpers.js';

const OP = 'records.create';
const conflictOf = (e: unknown) => {
  expect(ConflictError.isInstance(e)).toBe(true);
  return e as ConflictError;
};
const leftObject: Outcome = { kind: 'rejected', reason: 'card-declined', message: 'declined', created: 'pi_1' };

describe("another intent under the caller's own business-operation id", () => {
  const call = (ref: string, note = 'a') => ({ params: { ref, note }, businessOperationId: 'order-7' });

  it('after every call was rejected: a conflict saying nothing applied, nothing sent; the same intent corrected supersedes', async () => {
    const { provider, adapter, runner } = setup();
    provider.failNext({ kind: 'rejected' });
    expect((await runner.run(adapter, OP, call('o-1'))).status).toBe('handed-off');
    const err = conflictOf(await runner.run(adapter, OP, call('o-2')).catch((e: unknown) => e));
    expect([err.field, err.paths, err.storedMayApply]).toEqual(['intent', ['ref'], false]);
    expect(err.message).toMatch(/run them as a new operation instead/);
    expect(err.message).not.toMatch(/sha256/);
    expect(provider.count()).toBe(0);
    expect((await runner.run(adapter, OP, call('o-1', 'b'))).status).toBe('done');
    expect(provider.count()).toBe(1);
  });

  it('after it was done, left an object, or while it is in flight: the stored request may apply, never "a new operation"', async () => {
    const { provider, adapter: plain, runner } = setup();
    const adapter = scripted(plain, (n) => (n === 1 ? leftObject : undefined));
    const done = { params: { ref: 'o-1', note: 'a' }, businessOperationId: 'order-done' };
    const declined = { params: { ref: 'o-1', note: 'a' }, businessOperationId: 'order-declined' };
    expect((await runner.run(adapter, OP, done)).status).toBe('done');
    expect((await runner.run(adapter, OP, declined)).status).toBe('handed-off');
    const { held, atGate, gate } = gated(plain);
    const flying = { params: { ref: 'o-1', note: 'a' }, businessOperationId: 'order-flying' };
    const first = runner.run(held, OP, flying);
    await atGate.promise;
    for (const id of ['order-done', 'order-declined', 'order-flying']) {
      const moved = { params: { ref: 'o-2', note: 'a' }, businessOperationId: id };
      const err = conflictOf(await runner.run(adapter, OP, moved).catch((e: unknown) => e));
      // One waiting for a person says so, as a params conflict on it does.
      const waits = id === 'order-declined';
      expect([id, err.field, err.storedMayApply, err.needsPerson]).toEqual([id, 'intent', true, waits]);
      expect(err.message).not.toMatch(/new operation instead/);
    }
    gate.resolve();
    expect((await first).status).toBe('done');
    expect(provider.count()).toBe(2);
  });

  it('given back unsent: the conflict says nothing was sent, and that a call of it again under the id sends it', async () => {
    const { provider, adapter: plain, runner } = setup({}, { policy: { maxAttempts: 2 } });
    const refused: Outcome = { kind: 'not-applied', message: 'connect ECONNREFUSED', neverSent: true };
    const adapter = scripted(plain, () => refused);
    await expect(runner.run(adapter, OP, call('o-1'))).rejects.toSatisfy(RetryExhaustedError.isInstance);
    const err = conflictOf(await runner.run(plain, OP, call('o-2')).catch((e: unknown) => e));
    expect([err.field, err.storedMayApply]).toEqual(['intent', true]);
    expect(err.message).toMatch(/may still \(nothing of it was sent, but a call of it under this id sends it\)/);
    expect(provider.count()).toBe(0);
  });
});

describe('after a rejection, params that differ only where the card compares them normalised', () => {
  it('are the same request: answered with the hand-off, no revision, nothing sent', async () => {
    const { provider, adapter: plain, ledger, runner } = setup();
    const spec = plain.operations[OP]!;
    const rule = { field: 'note', compare: 'normalized', steps: ['trim'], providerDefault: 'none' } as const;
    const paramComparison = [{ ...rule, source: 'test', evidence: 'https://provider.example/docs/note' }];
    const card = { ...spec.card, paramComparison };
    const adapter = { ...plain, operations: { [OP]: { ...spec, card } } } as AdapterV1;
    provider.failNext({ kind: 'rejected' });
    const first = await runner.run(adapter, OP, { params: { ref: 'o-9', note: 'none' } });
    for (const params of [{ ref: 'o-9' }, { ref: 'o-9', note: ' none ' }])
      expect((await runner.run(adapter, OP, { params })).status).toBe('handed-off');
    const receipts = await ledger.receipts(first.businessOperationId);
    expect(receipts.map((r) => r.kind)).toEqual(['dispatch']);
    expect(provider.count()).toBe(0);
  });
});
