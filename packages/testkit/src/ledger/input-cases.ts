import { type ClaimInput, LedgerError } from '@retrysafe/contract';
import { expect } from 'vitest';
import { claimed, claimInput, expectStored, id, idsOf, packet, receipt, refused, T0, type Test } from './fixtures.js';

/** Values no JSON carries: a BigInt, a cycle, nesting deeper than JSON.stringify reaches. */
function notJson(): unknown[] {
  const cycle: Record<string, unknown> = {};
  cycle.self = cycle;
  return [10n, cycle, JSON.parse(`${'['.repeat(20_000)}${']'.repeat(20_000)}`)];
}

/** Bad input to any method is a LedgerError with nothing written, on every ledger alike; and listings in one order. */
export function inputCases(test: Test): void {
  test('refuses a claim whose id, provider, operation or fingerprints are not strings (LedgerError), storing nothing', async (l) => {
    const bad = (over: Record<string, unknown>) => l.claim(claimInput('bad-claim', over as Partial<ClaimInput>));
    for (const over of [
      { businessOperationId: 123 },
      { businessOperationId: '' },
      { provider: 5 },
      { operation: undefined },
      { intentFingerprint: undefined },
      { paramsFingerprint: null },
    ])
      await refused(bad(over), LedgerError);
    expect(await l.list()).toEqual([]);
    expect(await l.get(id('bad-claim'))).toBeNull();
  });

  test('refuses a claim whose id, provider, operation, fingerprints, provider key, account or owner holds U+0000 (LedgerError), storing nothing', async (l) => {
    const nul = 'x\u0000y';
    for (const field of [
      'provider',
      'operation',
      'intentFingerprint',
      'paramsFingerprint',
      'providerKey',
      'account',
      'owner',
    ])
      await refused(l.claim(claimInput('nul-claim', { [field]: nul })), LedgerError);
    await refused(l.claim(claimInput('nul-claim', { businessOperationId: `suite-${nul}` as never })), LedgerError);
    expect(await l.list()).toEqual([]);
  });

  test('keeps U+0000 in params, a result, a hand-off packet and receipts as given: read back equal, never refused after the call', async (l) => {
    const nul = 'a\u0000b';
    const { ref } = await claimed(l, 'nul-values', { dispatch: true, params: { note: nul } });
    const r1 = { ...receipt('nul-values', 1, null), message: nul };
    const unknown = await l.setState(ref, { state: 'unknown', result: { body: nul }, now: T0 + 1, receipt: r1 });
    expect(unknown.result).toEqual({ body: nul });
    const handed = await l.handOff(ref, { ...packet('nul-values'), explanation: nul }, T0 + 2);
    expect(handed.handoff?.explanation).toBe(nul);
    await expectStored(l, 'nul-values', handed, [r1]);
    expect((await l.get(id('nul-values')))!.params).toEqual({ note: nul });
  });

  test('refuses a value JSON cannot carry (a BigInt, a cycle, nesting deeper than JSON.stringify reaches) in params or a packet (LedgerError), writing nothing', async (l) => {
    for (const bad of notJson()) await refused(l.claim(claimInput('not-json-new', { params: { bad } })), LedgerError);
    expect(await l.get(id('not-json-new'))).toBeNull();
    const { ref, record } = await claimed(l, 'not-json', { dispatch: true });
    for (const bad of notJson()) {
      const lastKnown = { outcome: 'unknown', extra: bad } as never;
      await refused(l.handOff(ref, { ...packet('not-json'), lastKnown }, T0 + 1), LedgerError);
    }
    await expectStored(l, 'not-json', record);
  });

  test('a provider result JSON cannot carry still closes the operation (the provider was called): stored with a note in its place, its receipt and references kept', async (l) => {
    for (const [i, bad] of notJson().entries()) {
      const name = `not-json-result-${i}`;
      const { ref } = await claimed(l, name, { dispatch: true });
      const r1 = receipt(name, 1, null);
      const patch = { state: 'succeeded', result: { bad }, providerRef: 'rec_1', now: T0 + 1, receipt: r1 } as const;
      const closed = { state: 'succeeded', providerRef: 'rec_1', result: { notStored: 'result' } };
      expect(await l.setState(ref, patch)).toMatchObject(closed);
      expect(await l.get(id(name))).toMatchObject(closed);
      expect(await l.receipts(id(name))).toEqual([r1]);
    }
  });

  test('refuses fenced writes and resolve at a time that is not a number, and a lease of no finite length (LedgerError), writing nothing', async (l) => {
    const { ref, record } = await claimed(l, 'bad-time');
    for (const now of [Number.NaN, Number.POSITIVE_INFINITY, undefined as unknown as number]) {
      await refused(l.markDispatched(ref, now), LedgerError);
      await refused(l.renewLease(ref, 1000, now), LedgerError);
      await refused(l.setState(ref, { state: 'unknown', now }), LedgerError);
      await refused(l.handOff(ref, packet('bad-time'), now), LedgerError);
    }
    await refused(l.renewLease(ref, Number.NaN, T0 + 1), LedgerError);
    await refused(l.renewLease(ref, Number.POSITIVE_INFINITY, T0 + 1), LedgerError);
    expect(await l.get(id('bad-time'))).toEqual(record);
    const h = await l.handOff(ref, packet('bad-time'), T0 + 2);
    await refused(l.resolve(id('bad-time'), { action: 'abandon' }, Number.NaN), LedgerError);
    await refused(l.resolve(id('bad-time'), null as never, T0 + 3), LedgerError);
    expect(await l.get(id('bad-time'))).toEqual(h);
  });

  test('refuses a receipt that is not one (LedgerError), writing neither it nor the state', async (l) => {
    const { ref, record } = await claimed(l, 'bad-receipt');
    await refused(l.appendReceipt(ref, null as never), LedgerError);
    await refused(l.setState(ref, { state: 'unknown', now: T0 + 1, receipt: null as never }), LedgerError);
    await refused(l.handOff(ref, packet('bad-receipt'), T0 + 1, 'r1' as never), LedgerError);
    await expectStored(l, 'bad-receipt', record);
    await l.appendReceipt(ref, receipt('bad-receipt', 1, null));
    expect(await l.receipts(id('bad-receipt'))).toHaveLength(1);
  });

  test('lists operations created in the same millisecond by id in code-unit order (case and punctuation as stored), with or without a limit', async (l) => {
    const names = ['Zeta', 'alpha', 'a_b', 'a-b', 'aB', 'ab', 'a:b', 'a/b', 'a.b', 'e', 'A9'];
    for (const name of names) await claimed(l, `same-ms-${name}`, { now: T0 + 7 });
    const ids = names.map((n) => id(`same-ms-${n}`)).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    expect(await idsOf(l.list())).toEqual(ids);
    expect(await idsOf(l.list({ newestFirst: true, limit: 3 }))).toEqual(ids.slice().reverse().slice(0, 3));
    expect(await idsOf(l.list({ limit: 4 }))).toEqual(ids.slice(0, 4));
  });

  test('refuses prune options that are not what they say (states not a list, onPrune not a function) with LedgerError, deleting nothing', async (l) => {
    if (typeof l.prune !== 'function') return; // optional: a ledger without retention keeps everything
    const { ref } = await claimed(l, 'bad-prune', { dispatch: true });
    await l.setState(ref, { state: 'succeeded', now: T0 + 1 });
    await refused(l.prune({ before: T0 + 100, states: 'succeeded' as never }), LedgerError);
    await refused(l.prune({ before: T0 + 100, onPrune: 'export' as never }), LedgerError);
    await refused(l.prune({ before: T0 + 100, onUnreadable: 'log' as never }), LedgerError);
    expect(await l.get(id('bad-prune'))).toMatchObject({ state: 'succeeded' });
  });

  test('refuses an onUnreadable that is not a function, on list and recoverCandidates (LedgerError); a function lists as before', async (l) => {
    await claimed(l, 'bad-unreadable');
    await refused(l.list({ onUnreadable: 'log' as never }), LedgerError);
    await refused(l.recoverCandidates(T0 + 5000, undefined, {} as never), LedgerError);
    const told: string[] = [];
    const onUnreadable = (bad: string) => told.push(bad);
    expect(await idsOf(l.list({ onUnreadable }))).toEqual([id('bad-unreadable')]);
    expect(await l.recoverCandidates(T0 + 5000, undefined, onUnreadable)).toHaveLength(1);
    expect(told).toEqual([]);
  });
}

/** Limits and lease lengths every ledger takes or refuses alike. */
export function boundCases(test: Test): void {
  test('refuses a list or recover limit that is not a whole number ≥ 0, and a recover time that is no number (LedgerError); 0 lists nothing', async (l) => {
    for (const name of ['lim-1', 'lim-2']) await claimed(l, name);
    for (const limit of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, null as unknown as number]) {
      await refused(l.list({ limit }), LedgerError);
      await refused(l.recoverCandidates(T0 + 5000, limit), LedgerError);
    }
    await refused(l.recoverCandidates(Number.NaN), LedgerError);
    expect(await l.list({ limit: 0 })).toEqual([]);
    expect(await l.recoverCandidates(T0 + 5000, 0)).toEqual([]);
    expect(await l.recoverCandidates(T0 + 5000)).toHaveLength(2);
  });

  test('refuses a list filter whose states are no list of states (LedgerError), as prune refuses them', async (l) => {
    await claimed(l, 'states-1');
    for (const states of ['claimed', ['done'], [null], { 0: 'claimed', length: 1 }])
      await refused(l.list({ states: states as never }), LedgerError);
    expect(await idsOf(l.list({ states: ['claimed'] }))).toEqual([id('states-1')]);
  });

  test('refuses a time that is no whole ms or past the safe integers, and a lease ending past them, alike (LedgerError), writing nothing', async (l) => {
    for (const over of [{ now: T0 + 0.5 }, { now: 1e200 }, { leaseMs: 1e20 }, { leaseMs: '5' as never }])
      await refused(l.claim(claimInput('odd-time', over)), LedgerError);
    expect(await l.get(id('odd-time'))).toBeNull();
    const { ref, record } = await claimed(l, 'odd-time');
    await refused(l.markDispatched(ref, T0 + 0.5), LedgerError);
    await refused(l.setState(ref, { state: 'unknown', now: 2 ** 60 }), LedgerError);
    await refused(l.renewLease(ref, 1e20, T0 + 1), LedgerError);
    await refused(l.recoverCandidates(T0 + 0.5), LedgerError);
    if (typeof l.prune === 'function')
      for (const before of [T0 + 0.5, 1e200]) await refused(l.prune({ before }), LedgerError);
    expect(await l.get(id('odd-time'))).toEqual(record);
  });

  test('refuses to renew a lease for 0 ms or less, as claim refuses it (LedgerError), writing nothing', async (l) => {
    const { ref, record } = await claimed(l, 'renew-zero');
    await refused(l.claim(claimInput('renew-zero-claim', { leaseMs: 0 })), LedgerError);
    for (const leaseMs of [0, -1000]) await refused(l.renewLease(ref, leaseMs, T0 + 1), LedgerError);
    expect(await l.get(id('renew-zero'))).toEqual(record);
  });
}
