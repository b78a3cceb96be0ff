import { type ClaimInput, InvalidStateError, LedgerError } from '@retrysafe/contract';
import { verifyReceiptChain } from '@retrysafe/core';
import { expect } from 'vitest';
import {
  claimed,
  claimInput,
  expectClaimed,
  expectStored,
  handedOffWithReceipt,
  id,
  packet,
  REVISED,
  receipt,
  refused,
  T0,
  type Test,
} from './fixtures.js';

/** A person's resolve: the state and its resolve receipt in one write, or nothing. */
export function resolveCases(test: Test): void {
  test('resolve with a receipt writes the state and the receipt together: the chain anchor moves in the same write', async (l) => {
    const { ref } = await claimed(l, 'res-receipt');
    const r1 = receipt('res-receipt', 1, null);
    await l.appendReceipt(ref, r1);
    const r2 = receipt('res-receipt', 2, r1.hash);
    await l.handOff(ref, packet('res-receipt'), T0 + 1, r2);
    const r3 = receipt('res-receipt', 3, r2.hash);
    const resolution = { action: 'mark-done', providerRef: 'rec_9', by: 'alice' } as const;
    const done = await l.resolve(id('res-receipt'), resolution, T0 + 2, r3);
    const anchor = { head: r3.hash, length: 3 };
    expect(done).toMatchObject({ state: 'succeeded', providerRef: 'rec_9', receiptChain: anchor });
    expect(await l.get(id('res-receipt'))).toEqual(done);
    const receipts = await l.receipts(id('res-receipt'));
    expect(receipts).toEqual([r1, r2, r3]);
    expect(verifyReceiptChain(receipts, { anchor })).toEqual({ ok: true });
    // The first receipt of an operation that has none yet.
    const b = await claimed(l, 'res-first');
    await l.handOff(b.ref, packet('res-first'), T0 + 1);
    const first = receipt('res-first', 1, null);
    expect(await l.resolve(id('res-first'), { action: 'abandon' }, T0 + 2, first)).toMatchObject({
      state: 'abandoned',
      receiptChain: { head: first.hash, length: 1 },
    });
    expect(await l.receipts(id('res-first'))).toEqual([first]);
  });

  test('a resolve whose receipt is refused (not the next seq, a stale one, another operation’s, not a receipt) is a LedgerError and writes nothing', async (l) => {
    const { r1, handed } = await handedOffWithReceipt(l, 'res-refused');
    const before = await l.receipts(id('res-refused'));
    for (const bad of [
      receipt('res-refused', 3, r1.hash), // a gap
      receipt('res-refused', 1, null), // stale: another write came in between
      receipt('res-other', 2, r1.hash), // another operation's
      null,
    ])
      for (const resolution of [{ action: 'abandon' }, { action: 'mark-done', providerRef: 'rec_1' }] as const)
        await refused(l.resolve(id('res-refused'), resolution, T0 + 2, bad as never), LedgerError);
    await expectStored(l, 'res-refused', handed, before);
    const r2 = receipt('res-refused', 2, r1.hash);
    expect((await l.resolve(id('res-refused'), { action: 'abandon' }, T0 + 3, r2)).state).toBe('abandoned');
    expect(await l.receipts(id('res-refused'))).toEqual([r1, r2]);
  });

  test('a resolve naming a hand-off (handoffAt) that is not the current one is an InvalidStateError and writes nothing', async (l) => {
    const { r1, handed } = await handedOffWithReceipt(l, 'res-stale');
    const r2 = receipt('res-stale', 2, r1.hash);
    const earlier = new Date(T0 - 1).toISOString(); // the packet decided on, replaced since
    for (const resolution of [{ action: 'abandon' }, { action: 'mark-done', providerRef: 'rec_1' }] as const)
      await refused(l.resolve(id('res-stale'), { ...resolution, handoffAt: earlier }, T0 + 2, r2), InvalidStateError);
    await expectStored(l, 'res-stale', handed, [r1]);
    const current = { action: 'abandon', handoffAt: handed.handoff!.createdAt } as const;
    expect((await l.resolve(id('res-stale'), current, T0 + 3, r2)).state).toBe('abandoned');
  });

  test('mark-done refuses a provider reference that is blank after trimming or holds U+0000 (InvalidStateError), writing nothing', async (l) => {
    const { ref } = await claimed(l, 'res-blank');
    const handed = await l.handOff(ref, packet('res-blank'), T0 + 1);
    for (const providerRef of [' ', '\t\n ', '\u0000', 'rec_\u00001']) {
      const resolution = { action: 'mark-done', providerRef } as const;
      await refused(l.resolve(id('res-blank'), resolution, T0 + 2), InvalidStateError);
      await refused(l.resolve(id('res-blank'), resolution, T0 + 2, receipt('res-blank', 1, null)), InvalidStateError);
    }
    await expectStored(l, 'res-blank', handed);
  });

  test('setState and handOff refuse a provider or status reference holding U+0000 (LedgerError), writing nothing', async (l) => {
    const { ref, record } = await claimed(l, 'nul-ref');
    const nul = 'ref_\u0000x';
    await refused(l.setState(ref, { state: 'succeeded', providerRef: nul, now: T0 + 1 }), LedgerError);
    await refused(l.setState(ref, { state: 'in-progress', statusRef: nul, now: T0 + 1 }), LedgerError);
    await refused(
      l.setState(ref, { state: 'succeeded', providerRef: nul, now: T0 + 1, receipt: receipt('nul-ref', 1, null) }),
      LedgerError,
    );
    const lastKnown = { ...packet('nul-ref').lastKnown, providerRef: nul };
    await refused(l.handOff(ref, { ...packet('nul-ref'), lastKnown }, T0 + 1), LedgerError);
    await expectStored(l, 'nul-ref', record);
  });
}

/** A person's resume and a new revision claimed with their resolve receipt, and a claim of a stored row only. */
export function restartCases(test: Test): void {
  test('a resume or a revision claimed with its receipt writes the claim and the receipt together: the chain anchor moves in the same write', async (l) => {
    const { ref, r1 } = await handedOffWithReceipt(l, 'rs-resume');
    const r2 = receipt('rs-resume', 2, r1.hash);
    const over = { owner: 'w2', now: T0 + 2, resume: true, existing: true, receipt: r2 } as const;
    const resumed = await l.claim(claimInput('rs-resume', over));
    expectClaimed(resumed, true);
    const anchor = { head: r2.hash, length: 2 };
    expect(resumed.record).toMatchObject({ state: 'claimed', fence: ref.fence + 1, receiptChain: anchor });
    expect(await l.get(id('rs-resume'))).toEqual(resumed.record);
    const receipts = await l.receipts(id('rs-resume'));
    expect(receipts).toEqual([r1, r2]);
    expect(verifyReceiptChain(receipts, { anchor })).toEqual({ ok: true });
    // A new revision, its receipt the first of an operation that has none yet.
    const b = await claimed(l, 'rs-revise');
    await l.handOff(b.ref, packet('rs-revise'), T0 + 1);
    const first = receipt('rs-revise', 1, null);
    const supersede = { fence: b.ref.fence, revision: 2 };
    const revised = await l.claim(claimInput('rs-revise', { ...REVISED, now: T0 + 2, supersede, receipt: first }));
    expectClaimed(revised, false);
    expect(revised.record).toMatchObject({ ...REVISED, receiptChain: { head: first.hash, length: 1 } });
    expect(await l.get(id('rs-revise'))).toEqual(revised.record);
    expect(await l.receipts(id('rs-revise'))).toEqual([first]);
  });

  test('a done revision (a set’s next values) re-opens a succeeded operation at the fence read, its receipt next on the chain; of two racing revisions one wins, the other is busy, then terminal on its stale fence', async (l) => {
    const { ref } = await claimed(l, 'rs-done', { dispatch: true });
    const r1 = receipt('rs-done', 1, null);
    await l.setState(ref, {
      state: 'succeeded',
      lastOutcome: 'succeeded',
      result: { v: 'a' },
      now: T0 + 2,
      receipt: r1,
    });
    const r2 = receipt('rs-done', 2, r1.hash);
    const revise = (owner: string, now: number, over: Partial<ClaimInput> = {}) =>
      l.claim(
        claimInput('rs-done', {
          ...REVISED,
          owner,
          now,
          existing: true,
          supersede: { fence: ref.fence, revision: 2, done: true },
          ...over,
        }),
      );
    const won = await revise('w2', T0 + 3, { receipt: r2 });
    expectClaimed(won, false);
    expect(won.record).toMatchObject({
      ...REVISED,
      state: 'claimed',
      fence: ref.fence + 1,
      attemptCount: 0,
      result: null,
      resolution: { action: 'supersede', revision: 2 },
      receiptChain: { head: r2.hash, length: 2 },
    });
    expect(await l.receipts(id('rs-done'))).toEqual([r1, r2]);
    // The other revision read the same fence: busy while the winner holds it, then terminal (its fence is stale).
    expect((await revise('w3', T0 + 4, { paramsFingerprint: 'sha256:params-c' })).kind).toBe('busy');
    const wonRef = { businessOperationId: won.record.businessOperationId, fence: won.record.fence };
    await l.setState(wonRef, { state: 'succeeded', now: T0 + 5 });
    const lost = await revise('w3', T0 + 6, { paramsFingerprint: 'sha256:params-c' });
    expect(lost.kind).toBe('terminal');
    expect(await l.get(id('rs-done'))).toMatchObject({ ...REVISED, state: 'succeeded', fence: ref.fence + 1 });
    // Two revisions sent at once on the fence both read: exactly one is claimed.
    const race = await claimed(l, 'rs-race');
    await l.setState(race.ref, { state: 'succeeded', now: T0 + 1 });
    const supersede = { fence: race.ref.fence, revision: 2, done: true } as const;
    const at = (owner: string, paramsFingerprint: string) =>
      l.claim(claimInput('rs-race', { ...REVISED, paramsFingerprint, owner, now: T0 + 2, supersede }));
    const both = await Promise.all([at('w2', 'sha256:params-b'), at('w3', 'sha256:params-c')]);
    expect(both.map((r) => r.kind).sort()).toEqual(['busy', 'claimed']);
    expect((await l.get(id('rs-race')))?.fence).toBe(race.ref.fence + 1);
  });

  test('a claim whose receipt is refused (not the next seq, a stale one, another operation’s, on a plain claim, a takeover or a new operation) is a LedgerError and writes nothing', async (l) => {
    const { ref, r1, handed } = await handedOffWithReceipt(l, 'rs-refused');
    const r2 = receipt('rs-refused', 2, r1.hash);
    const supersede = { fence: ref.fence, revision: 2 };
    for (const how of [{ resume: true }, { ...REVISED, supersede }, {}] as const)
      for (const bad of [
        receipt('rs-refused', 3, r1.hash), // a gap
        receipt('rs-refused', 1, null), // stale: another write came in between
        receipt('rs-other', 2, r1.hash), // another operation's
        ...(Object.keys(how).length === 0 ? [r2] : []), // the chain's next, on a claim that is no resume or revision
      ])
        await refused(
          l.claim(claimInput('rs-refused', { ...how, owner: 'w2', now: T0 + 2, receipt: bad })),
          LedgerError,
        );
    await expectStored(l, 'rs-refused', handed, [r1]);
    // A resume that would be a takeover of an open row whose lease ran out, or a new operation: refused, nothing written.
    await claimed(l, 'rs-open');
    const stored = await l.get(id('rs-open'));
    const late = { owner: 'w2', now: T0 + 5_000, resume: true, receipt: receipt('rs-open', 1, null) } as const;
    await refused(l.claim(claimInput('rs-open', late)), LedgerError);
    await expectStored(l, 'rs-open', stored);
    await refused(l.claim(claimInput('rs-new', { ...late, receipt: receipt('rs-new', 1, null) })), LedgerError);
    expect(await l.get(id('rs-new'))).toBeNull();
    // The chain's next on the resume itself is taken.
    expectClaimed(await l.claim(claimInput('rs-refused', { resume: true, owner: 'w2', now: T0 + 3, receipt: r2 })));
    expect(await l.receipts(id('rs-refused'))).toEqual([r1, r2]);
  });

  test('a claim of a stored row only (`existing`) where there is none is `gone` and writes nothing; where there is one, it claims as without', async (l) => {
    for (const how of [{}, { resume: true }, { supersede: { fence: 1, revision: 2 } }] as const)
      expect(await l.claim(claimInput('ex-none', { ...how, existing: true }))).toEqual({ kind: 'gone' });
    expect(await l.get(id('ex-none'))).toBeNull();
    expect(await l.list()).toEqual([]);
    const { ref } = await claimed(l, 'ex-some');
    expect((await l.claim(claimInput('ex-some', { owner: 'w2', existing: true }))).kind).toBe('busy');
    const taken = await l.claim(claimInput('ex-some', { owner: 'w2', now: T0 + 5_000, existing: true }));
    expectClaimed(taken, true);
    expect(taken.record.fence).toBe(ref.fence + 1);
  });
}
