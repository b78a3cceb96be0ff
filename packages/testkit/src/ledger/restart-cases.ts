import { LedgerError, type ProviderKey } from '@retrysafe/contract';
import { verifyReceiptChain } from '@retrysafe/core';
import { expect } from 'vitest';
import {
  claimed,
  claimInput,
  expectClaimed,
  handedOffWithReceipt,
  id,
  packet,
  receipt,
  refused,
  T0,
  type Test,
} from './fixtures.js';

const REVISED = {
  params: { ref: 'revised', fixed: true },
  paramsFingerprint: 'sha256:params-b',
  providerKey: 'rs-revised-r2' as ProviderKey,
};

/** A person's resume and a new revision claimed with their resolve receipt, and a claim of a stored row only. */
export function restartCases(test: Test): void {
  test('a resume or a revision claimed with its receipt writes the claim and the receipt together: the chain anchor moves in the same write', async (l) => {
    const { ref } = await claimed(l, 'rs-resume');
    const r1 = receipt('rs-resume', 1, null);
    await l.appendReceipt(ref, r1);
    await l.handOff(ref, packet('rs-resume'), T0 + 1);
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
    expect(await l.get(id('rs-refused'))).toEqual(handed);
    expect(await l.receipts(id('rs-refused'))).toEqual([r1]);
    // A resume that would be a takeover of an open row whose lease ran out, or a new operation: refused, nothing written.
    await claimed(l, 'rs-open');
    const stored = await l.get(id('rs-open'));
    const late = { owner: 'w2', now: T0 + 5_000, resume: true, receipt: receipt('rs-open', 1, null) } as const;
    await refused(l.claim(claimInput('rs-open', late)), LedgerError);
    expect(await l.get(id('rs-open'))).toEqual(stored);
    expect(await l.receipts(id('rs-open'))).toEqual([]);
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
