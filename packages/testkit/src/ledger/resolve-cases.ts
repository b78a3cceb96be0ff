import { InvalidStateError, LedgerError } from '@retrysafe/contract';
import { verifyReceiptChain } from '@retrysafe/core';
import { expect } from 'vitest';
import { claimed, handedOffWithReceipt, id, packet, receipt, refused, T0, type Test } from './fixtures.js';

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
    expect(await l.get(id('res-refused'))).toEqual(handed);
    expect(await l.receipts(id('res-refused'))).toEqual(before);
    const r2 = receipt('res-refused', 2, r1.hash);
    expect((await l.resolve(id('res-refused'), { action: 'abandon' }, T0 + 3, r2)).state).toBe('abandoned');
    expect(await l.receipts(id('res-refused'))).toEqual([r1, r2]);
  });

  test('mark-done refuses a provider reference that is blank after trimming or holds U+0000 (InvalidStateError), writing nothing', async (l) => {
    const { ref } = await claimed(l, 'res-blank');
    const handed = await l.handOff(ref, packet('res-blank'), T0 + 1);
    for (const providerRef of [' ', '\t\n ', '\u0000', 'rec_\u00001']) {
      const resolution = { action: 'mark-done', providerRef } as const;
      await refused(l.resolve(id('res-blank'), resolution, T0 + 2), InvalidStateError);
      await refused(l.resolve(id('res-blank'), resolution, T0 + 2, receipt('res-blank', 1, null)), InvalidStateError);
    }
    expect(await l.get(id('res-blank'))).toEqual(handed);
    expect(await l.receipts(id('res-blank'))).toEqual([]);
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
    expect(await l.get(id('nul-ref'))).toEqual(record);
    expect(await l.receipts(id('nul-ref'))).toEqual([]);
  });
}
