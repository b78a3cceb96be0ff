import { type BusinessOperationId, type Ledger, LedgerError } from '@retrysafe/contract';
import { expect } from 'vitest';
import { claimed, claimInput, expectClaimed, id, idsOf, receipt, refused, T0, type Test } from './fixtures.js';

/** Writes a record that does not parse over the stored one of `id`, from outside the ledger. */
export type Corrupt = (ledger: Ledger, id: BusinessOperationId) => Promise<void>;

const raw = (s: string) => s as BusinessOperationId;

/**
 * Ids every store keeps exactly or none takes: each store has its own limit (a key's bytes, an index entry's) and its own
 * way with text that is not well-formed UTF-16 (replaced by U+FFFD, escaped, refused), so two intents could become one
 * operation on one ledger and stay two on another. The contract's id rule decides for all, before the claim.
 */
export function identityCases(test: Test): void {
  test('takes an id of the longest length the contract allows; refuses one longer, near or past any store’s key limit (LedgerError), storing nothing', async (l) => {
    const longest = `suite-${'x'.repeat(194)}`;
    expectClaimed(await l.claim(claimInput('long', { businessOperationId: raw(longest) })));
    expect((await l.get(raw(longest)))!.businessOperationId).toBe(longest);
    for (const length of [201, 1024, 2048, 2049, 2800, 70_000]) {
      const over = raw(`suite-${'y'.repeat(length - 6)}`);
      await refused(l.claim(claimInput('long', { businessOperationId: over })), LedgerError);
      expect(await l.get(over)).toBeNull();
      expect(await l.receipts(over)).toEqual([]);
      await refused(l.markDispatched({ businessOperationId: over, fence: 1 }, T0 + 1), LedgerError);
    }
    expect(await idsOf(l.list())).toEqual([longest]);
  });

  test('refuses an id with a lone surrogate, U+FFFD, U+0000 or any non-ASCII letter in either normalisation form (LedgerError), so none becomes another', async (l) => {
    const ids = ['a\uD800', 'a\uDC00b', 'a\uFFFD', 'a\u0000', 'caf\u00e9', 'cafe\u0301', 'a\uD83D\uDE00'];
    for (const bad of ids) {
      await refused(l.claim(claimInput('unicode', { businessOperationId: raw(`suite-${bad}`) })), LedgerError);
      expect(await l.get(raw(`suite-${bad}`))).toBeNull();
    }
    expect(await l.list()).toEqual([]);
  });

  test('keeps ids that differ only in case as separate operations, each with its own params', async (l) => {
    for (const name of ['case', 'Case', 'CASE']) await claimed(l, name, { params: { name } });
    for (const name of ['case', 'Case', 'CASE']) expect((await l.get(id(name)))!.params).toEqual({ name });
    expect(await idsOf(l.list())).toEqual([id('CASE'), id('Case'), id('case')]);
  });

  test('refuses claim texts with a lone surrogate (LedgerError); keeps one in params, a result and receipts exactly', async (l) => {
    const lone = 'x\uD800y';
    for (const field of ['provider', 'operation', 'intentFingerprint', 'paramsFingerprint', 'providerKey', 'account'])
      await refused(l.claim(claimInput('lone-claim', { [field]: lone })), LedgerError);
    await refused(l.claim(claimInput('lone-claim', { owner: lone })), LedgerError);
    expect(await l.list()).toEqual([]);
    const { ref } = await claimed(l, 'lone', { dispatch: true, params: { a: lone, b: 'x\uFFFDy' } });
    await refused(l.setState(ref, { state: 'succeeded', providerRef: lone, now: T0 + 1 }), LedgerError);
    const r1 = { ...receipt('lone', 1, null), message: lone };
    await l.setState(ref, { state: 'succeeded', result: { body: lone }, now: T0 + 1, receipt: r1 });
    const stored = (await l.get(id('lone')))!;
    expect(stored.params).toEqual({ a: lone, b: 'x\uFFFDy' });
    expect(stored.result).toEqual({ body: lone });
    expect(await l.receipts(id('lone'))).toEqual([r1]);
  });

  test('refuses a listing by a provider or operation no claim can hold (U+0000, a lone surrogate), as claims refuse it (LedgerError)', async (l) => {
    await claimed(l, 'filter', { provider: 'x\uFFFDy' });
    for (const bad of ['x\u0000y', 'x\uD800y']) {
      await refused(l.list({ provider: bad }), LedgerError);
      await refused(l.list({ operation: bad }), LedgerError);
    }
    expect(await idsOf(l.list({ provider: 'x\uFFFDy' }))).toEqual([id('filter')]);
  });

  test('two intents that differ only in normalisation form are two: the second is a conflict', async (l) => {
    await claimed(l, 'nfc', { intentFingerprint: 'caf\u00e9' });
    const second = await l.claim(claimInput('nfc', { intentFingerprint: 'cafe\u0301', now: T0 + 5000 }));
    expect(second.kind === 'conflict' && second.field).toBe('intent');
  });
}

/** One record that cannot be read never blocks the others: listings, recovery, prune and claims go on around it. */
export function unreadableCases(test: Test, corrupt: Corrupt | undefined): void {
  test('a record that does not parse is told by id and passed over by list, recoverCandidates and prune; the others are claimed as before', async (l) => {
    if (corrupt === undefined) return; // a ledger whose store cannot be edited from outside
    for (const name of ['u-1', 'u-bad', 'u-3']) {
      const { ref } = await claimed(l, name, { dispatch: true });
      await l.setState(ref, { state: name === 'u-3' ? 'succeeded' : 'unknown', now: T0 + 1 });
    }
    await corrupt(l, id('u-bad'));
    const told: string[] = [];
    const onUnreadable = (bad: string) => told.push(bad);
    expect(await idsOf(l.list({ onUnreadable }))).toEqual([id('u-1'), id('u-3')]);
    expect(await idsOf(l.list({ onUnreadable, states: ['unknown'] }))).toEqual([id('u-1')]);
    expect(await idsOf(l.recoverCandidates(T0 + 5000, undefined, onUnreadable))).toEqual([id('u-1')]);
    await refused(l.list(), LedgerError);
    if (typeof l.prune === 'function')
      expect(await l.prune({ before: T0 + 100, onUnreadable })).toMatchObject({ pruned: 1 });
    expect(new Set(told)).toEqual(new Set([id('u-bad')]));
    expectClaimed(await l.claim(claimInput('u-1', { owner: 'w2', now: T0 + 5000 })), true);
    expectClaimed(await l.claim(claimInput('u-new', { now: T0 + 5000 })), false);
  });
}
