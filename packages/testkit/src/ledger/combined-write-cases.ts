import { InvalidStateError, LeaseLostError, LedgerError, type ProviderKey } from '@retrysafe/contract';
import { expect } from 'vitest';
import { claimed, claimInput, expectClaimed, id, idsOf, packet, receipt, refused, T0, type Test } from './fixtures.js';

/** The combined writes of a two-write clean run: claim with dispatch. */
export function claimDispatchCases(test: Test): void {
  test('claim with dispatch creates a new operation already dispatched (attempt 1, firstDispatchedAt = now), durably, in one write', async (l) => {
    const r = await l.claim(claimInput('born-dispatched', { dispatch: true, now: T0 + 7 }));
    expectClaimed(r, false);
    const want = {
      state: 'dispatched',
      fence: 1,
      attemptCount: 1,
      firstDispatchedAt: T0 + 7,
      leaseOwner: 'worker-1',
      leaseExpiresAt: T0 + 1007,
      createdAt: T0 + 7,
      updatedAt: T0 + 7,
    };
    expect(r.record).toMatchObject(want);
    expect(await l.get(id('born-dispatched'))).toMatchObject(want);
    // It is an ordinary dispatched operation from here on: a second dispatch counts attempt 2, the first time stays.
    const ref = { businessOperationId: r.record.businessOperationId, fence: r.record.fence };
    await l.setState(ref, { state: 'unknown', lastOutcome: 'unknown', now: T0 + 8 });
    const again = await l.markDispatched(ref, T0 + 9);
    expect(again).toMatchObject({ state: 'dispatched', attemptCount: 2, firstDispatchedAt: T0 + 7 });
    // and a dead worker's dispatched operation is a recover candidate once its lease is gone
    await l.release(ref);
    expect(await idsOf(l.recoverCandidates(T0 + 10))).toEqual([id('born-dispatched')]);
  });

  test('claim with dispatch changes nothing else: busy, conflict, terminal and takeovers behave as without it', async (l) => {
    const first = await claimed(l, 'dispatch-existing');
    const busy = await l.claim(claimInput('dispatch-existing', { owner: 'w2', dispatch: true, now: T0 + 10 }));
    expect(busy.kind).toBe('busy');
    const conflict = await l.claim(
      claimInput('dispatch-existing', { intentFingerprint: 'sha256:intent-b', dispatch: true, now: T0 + 5000 }),
    );
    expect(conflict.kind).toBe('conflict');
    const undispatched = { state: 'claimed', attemptCount: 0, firstDispatchedAt: null };
    expect(await l.get(id('dispatch-existing'))).toMatchObject({ ...undispatched, fence: 1 });
    // An expired claim taken over with dispatch: the state stays as it was (the taker decides from it).
    const taken = await l.claim(claimInput('dispatch-existing', { owner: 'w2', dispatch: true, now: T0 + 5000 }));
    expectClaimed(taken, true);
    expect(taken.record).toMatchObject({ ...undispatched, fence: 2, leaseOwner: 'w2' });
    await refused(l.markDispatched(first.ref, T0 + 5001), LeaseLostError);
    const ref = { businessOperationId: taken.record.businessOperationId, fence: taken.record.fence };
    await l.setState(ref, { state: 'succeeded', now: T0 + 5002 });
    const terminal = await l.claim(claimInput('dispatch-existing', { owner: 'w3', dispatch: true, now: T0 + 5003 }));
    expect(terminal.kind).toBe('terminal');
    expect(await l.get(id('dispatch-existing'))).toMatchObject({ state: 'succeeded', fence: 2, attemptCount: 0 });
  });
}

/** The combined writes of a two-write clean run: a state or handoff with its receipt; and supersede. */
export function receiptCases(test: Test): void {
  test('a provider result of 1 MB still closes the operation with its receipt: never left in flight after the call', async (l) => {
    const params = { ref: 'large-result', blob: 'p'.repeat(200 * 1024) };
    const { ref } = await claimed(l, 'large-result', { dispatch: true, params });
    const r1 = receipt('large-result', 1, null);
    const result = { body: 'r'.repeat(1024 * 1024) };
    const patch = { state: 'succeeded', result, providerRef: 'rec_big', now: T0 + 1, receipt: r1 } as const;
    const closed = { state: 'succeeded', providerRef: 'rec_big', leaseOwner: null };
    expect(await l.setState(ref, patch)).toMatchObject(closed);
    expect(await l.get(id('large-result'))).toMatchObject(closed);
    expect(await l.receipts(id('large-result'))).toEqual([r1]);
  });

  test('setState with a receipt writes the state and the receipt together', async (l) => {
    const { ref } = await claimed(l, 'state-receipt', { dispatch: true });
    const r1 = receipt('state-receipt', 1, null);
    const u = await l.setState(ref, { state: 'unknown', lastOutcome: 'unknown', now: T0 + 1, receipt: r1 });
    expect(u).toMatchObject({ state: 'unknown', lastOutcome: 'unknown', updatedAt: T0 + 1 });
    expect(u).not.toHaveProperty('receipt');
    const r2 = receipt('state-receipt', 2, r1.hash);
    const result = { result: { id: 'rec_2' }, providerRef: 'rec_2', lastOutcome: 'succeeded' } as const;
    const done = await l.setState(ref, { state: 'succeeded', ...result, now: T0 + 2, receipt: r2 });
    expect(done).toMatchObject({ state: 'succeeded', providerRef: 'rec_2', leaseOwner: null, leaseExpiresAt: null });
    expect(await l.get(id('state-receipt'))).toMatchObject({ state: 'succeeded', result: { id: 'rec_2' } });
    expect(await l.receipts(id('state-receipt'))).toEqual([r1, r2]);
  });

  test('setState with a receipt writes neither when the fence is stale, the receipt is not the next seq, or the state may not change', async (l) => {
    const first = await claimed(l, 'atomic');
    await l.markDispatched(first.ref, T0 + 1);
    const second = await claimed(l, 'atomic', { owner: 'worker-2', now: T0 + 1000 });
    const before = await l.get(id('atomic'));
    const done = { state: 'succeeded', result: { id: 'x' } } as const;
    const writes: [...Parameters<typeof l.setState>, Parameters<typeof refused>[1]][] = [
      [first.ref, { ...done, now: T0 + 1001, receipt: receipt('atomic', 1, null) }, LeaseLostError], // stale fence
      [second.ref, { ...done, now: T0 + 1002, receipt: receipt('atomic', 2, null) }, LedgerError], // wrong seq
      [second.ref, { state: 'unknown', now: T0 + 1003, receipt: receipt('other', 1, null) }, LedgerError], // another op's
    ];
    for (const [ref, patch, error] of writes) await refused(l.setState(ref, patch), error);
    expect(await l.get(id('atomic'))).toEqual(before);
    expect(await l.receipts(id('atomic'))).toEqual([]);
    // a state the operation may not leave: the receipt is not written either
    const r1 = receipt('atomic', 1, null);
    await l.setState(second.ref, { state: 'succeeded', now: T0 + 1004, receipt: r1 });
    await refused(
      l.setState(second.ref, { state: 'unknown', now: T0 + 1005, receipt: receipt('atomic', 2, r1.hash) }),
      InvalidStateError,
    );
    expect(await l.receipts(id('atomic'))).toEqual([r1]);
    expect(await l.get(id('atomic'))).toMatchObject({ state: 'succeeded', updatedAt: T0 + 1004 });
  });

  test('handOff with a receipt writes the handoff and the receipt together, or neither', async (l) => {
    const first = await claimed(l, 'handoff-receipt');
    await l.markDispatched(first.ref, T0 + 1);
    const r1 = receipt('handoff-receipt', 1, null);
    await l.appendReceipt(first.ref, r1);
    const r2 = receipt('handoff-receipt', 2, r1.hash);
    const p = packet('handoff-receipt');
    // wrong seq, then a stale fence: nothing written
    await refused(l.handOff(first.ref, p, T0 + 2, receipt('handoff-receipt', 3, r1.hash)), LedgerError);
    const second = await claimed(l, 'handoff-receipt', { owner: 'worker-2', now: T0 + 1000 });
    await refused(l.handOff(first.ref, p, T0 + 1001, r2), LeaseLostError);
    expect(await l.get(id('handoff-receipt'))).toMatchObject({ state: 'dispatched', handoff: null, fence: 2 });
    expect(await l.receipts(id('handoff-receipt'))).toEqual([r1]);
    const h = await l.handOff(second.ref, p, T0 + 1002, r2);
    expect(h).toMatchObject({ state: 'handed-off', leaseOwner: null, lastOutcome: 'unknown', updatedAt: T0 + 1002 });
    expect(h.handoff?.reason).toBe('unknown-no-safe-resend');
    expect(await l.receipts(id('handoff-receipt'))).toEqual([r1, r2]);
    // already handed off: refused, and the receipt with it
    await refused(l.handOff(second.ref, p, T0 + 1003, receipt('handoff-receipt', 3, r2.hash)), InvalidStateError);
    expect(await l.receipts(id('handoff-receipt'))).toEqual([r1, r2]);
  });

  test('supersede re-opens a rejected or handed-off operation as a new revision (params, key, no attempts), only at the fence the caller checked', async (l) => {
    const { ref } = await claimed(l, 'supersede');
    await l.markDispatched(ref, T0 + 1);
    await l.setState(ref, { state: 'rejected', lastOutcome: 'rejected', now: T0 + 2 });
    const next = {
      params: { ref: 'supersede', fixed: true },
      paramsFingerprint: 'sha256:params-b',
      providerKey: 'rs-supersede-r2' as ProviderKey,
    };
    const supersede = (name: string, fence: number, over: Parameters<typeof claimInput>[1] = {}) =>
      l.claim(claimInput(name, { ...next, now: T0 + 3, supersede: { fence, revision: 2 }, ...over }));
    // a stale fence (someone changed it since the check) answers as without supersede: nothing written
    const stale = await supersede('supersede', ref.fence + 7);
    expect(stale.kind).toBe('terminal');
    expect((await l.get(id('supersede')))?.paramsFingerprint).toBe('sha256:params-a');
    const s = await supersede('supersede', ref.fence, { owner: 'w2' });
    expectClaimed(s);
    expect(s.record).toMatchObject({
      state: 'claimed',
      fence: ref.fence + 1,
      attemptCount: 0,
      firstDispatchedAt: null,
      lastOutcome: null,
      handoff: null,
      ...next,
      leaseOwner: 'w2',
    });
    expect(s.record.resolution).toMatchObject({ action: 'supersede', revision: 2, at: T0 + 3 });
    expect(await l.get(id('supersede'))).toEqual(s.record);
    await refused(l.markDispatched(ref, T0 + 4), LeaseLostError);
    // never on a live or succeeded operation
    const live = await claimed(l, 'supersede-live');
    const supersedeLive = (now: number) => supersede('supersede-live', live.ref.fence, { owner: 'w2', now });
    expect((await supersedeLive(T0)).kind).toBe('busy');
    await l.setState(live.ref, { state: 'succeeded', now: T0 + 1 });
    expect((await supersedeLive(T0 + 2)).kind).toBe('terminal');
  });
}
