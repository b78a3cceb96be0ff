// A new revision is claimed with its supersede receipt in the claim's write, except when the chain grew between the
// read of the row and the read of its receipts: then the claim goes without it and the receipt is appended after
// (claimAgain, restartClaimed). A stop in between leaves a revision the receipts do not name. Its calls would be
// counted with the revision before (whose rejections would vouch for a call of its own that may have applied), and
// the next revision would take its number and its provider key. The row's resolution still names it: these tests hold
// the two places that read it (everyAttemptNotApplied, and supersede's numbering).

import { type AdapterV1, ConflictError, type Ledger, LedgerError, type RetrySafetyCard } from '@retrysafe/contract';
import { createRunner } from '@retrysafe/core';
import { describe, expect, it } from 'vitest';
import { failingOnce, setup } from './helpers.js';

const OP = 'records.create';

/** The sandbox adapter with `patch` applied to its card. */
function withCard(adapter: AdapterV1, patch: (card: RetrySafetyCard) => RetrySafetyCard): AdapterV1 {
  const spec = adapter.operations[OP]!;
  return { ...adapter, operations: { ...adapter.operations, [OP]: { ...spec, card: patch(spec.card) } } } as AdapterV1;
}

/** `inner`, whose first claim answered `terminal` carries the row as read one receipt before its chain's end: the
 * chain grew between that read and the read of the receipts. */
function readOneBehind(inner: Ledger): Ledger {
  let stale = true;
  return {
    ...inner,
    async claim(input) {
      const c = await inner.claim(input);
      if (!stale || c.kind !== 'terminal') return c;
      stale = false;
      const receipts = await inner.receipts(c.record.businessOperationId);
      const receiptChain = { head: receipts.at(-2)?.hash ?? null, length: receipts.length - 1 };
      return { ...c, record: { ...c.record, receiptChain } };
    },
  };
}

/** Revision 2 is claimed; its supersede receipt, appended after the claim, is lost (the worker stops). */
async function loseRevisionReceipt(ledger: Ledger, call: (l: Ledger) => Promise<unknown>, id: string) {
  await expect(call(failingOnce(readOneBehind(ledger), 'appendReceipt'))).rejects.toSatisfy(LedgerError.isInstance);
  expect((await ledger.get(id as never))?.resolution).toMatchObject({ action: 'supersede', revision: 2 });
  const receipts = await ledger.receipts(id as never);
  expect(receipts.filter((r) => r.decision.action === 'supersede')).toEqual([]);
}

describe('a revision whose supersede receipt was lost (the chain moved on between the read and the claim)', () => {
  it('its calls are never vouched for by the revision before: no correction, resend-with not offered, one effect', async () => {
    const { provider, adapter, ledger, clock } = setup({ lookup: 'none' });
    const call = (l: Ledger, note: string) =>
      createRunner({ ledger: l, clock, random: () => 0.5 }).run(adapter, OP, { params: { ref: 'lr-1', note } });
    provider.failNext({ kind: 'rejected' });
    const first = await call(ledger, 'a');
    expect(first.status === 'handed-off' && first.packet.reason).toBe('rejected');
    const id = first.businessOperationId;
    await loseRevisionReceipt(ledger, (l) => call(l, 'b'), id);
    // Revision 2 is taken over, sent and applied; the write of its outcome fails.
    clock.advance(10 * 60_000);
    await expect(call(failingOnce(ledger, 'setState'), 'b')).rejects.toSatisfy(LedgerError.isInstance);
    expect(provider.count()).toBe(1);
    // Taken over again: re-sent under the same key and refused. Counted with revision 1, the two rejections on record
    // would vouch for the two calls on the row, the first of which applied.
    clock.advance(10 * 60_000);
    provider.failNext({ kind: 'rejected' });
    const left = await call(ledger, 'b');
    expect(left.status === 'handed-off' && left.packet.reason).toBe('rejected');
    expect(left.status === 'handed-off' && left.packet.safeNextActions.map((x) => x.action)).not.toContain(
      'resend-with',
    );
    const err = await call(ledger, 'c').catch((e: unknown) => e);
    expect(ConflictError.isInstance(err) && err.message).toMatch(/revision 2 has no supersede receipt/);
    const runner = createRunner({ ledger, clock, random: () => 0.5 });
    const resend = { action: 'resend-with', params: { ref: 'lr-1', note: 'c' } } as const;
    await expect(runner.resolve(id, resend, { adapters: [adapter] })).rejects.toSatisfy(ConflictError.isInstance);
    expect(provider.count()).toBe(1);
  });

  it("the next revision of a set is numbered 3, under a key of its own (revision 2's holds revision 2's values)", async () => {
    const { provider, adapter: plain, ledger, clock } = setup();
    const adapter = withCard(plain, (c) => ({
      ...c,
      sideEffect: {
        ...c.sideEffect,
        kind: { value: 'set', source: 'test: sets the record named by ref' },
        idempotentByNature: { value: true, source: 'test: the same values again change nothing' },
      },
    }));
    const call = (l: Ledger, note: string) =>
      createRunner({ ledger: l, clock, random: () => 0.5 }).run(adapter, OP, { params: { ref: 'lr-set', note } });
    const first = await call(ledger, 'A');
    expect(first.status).toBe('done');
    const id = first.businessOperationId;
    await loseRevisionReceipt(ledger, (l) => call(l, 'B'), id);
    clock.advance(10 * 60_000); // past the lease: revision 2 is taken over and sent
    expect((await call(ledger, 'B')).status).toBe('done');
    expect(provider.count()).toBe(2);
    const third = await call(ledger, 'C');
    expect(third.status === 'done' && third.adopted).toBe(false);
    expect(provider.count()).toBe(3);
    expect((await ledger.get(id))?.resolution).toMatchObject({ action: 'supersede', revision: 3 });
    const last = (await ledger.receipts(id)).findLast((r) => r.decision.action === 'supersede');
    expect(last?.decision.reason).toMatch(/^revision 3 /);
  });
});
