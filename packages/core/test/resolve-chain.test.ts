// Issue 40 item 3: runner.resolve() owns the operator's rules, for code as for the CLI. A receipt chain
// edited outside retrysafe is refused with a typed error before anything is sent or written, whatever
// the resolution (before, only the CLI refused; resolve() from code appended to the broken chain).

import type { Ledger, Receipt } from '@retrysafe/contract';
import { BrokenReceiptChainError, createRunner, type Resolution } from '@retrysafe/core';
import { describe, expect, it } from 'vitest';
import { setup } from './helpers.js';

const OP = 'records.create';
const FORGETFUL = { replays: false, retentionMs: null, lookup: 'none' } as const;

/** The same ledger, seen through an edit someone made outside retrysafe: receipt 1's outcome changed, not re-sealed. */
function edited(ledger: Ledger): Ledger {
  return {
    ...ledger,
    receipts: async (id) =>
      (await ledger.receipts(id)).map((r: Receipt, i) => (i === 0 ? { ...r, outcome: 'rejected' as const } : r)),
  };
}

const resolutions: readonly Resolution[] = [
  { action: 'abandon' },
  { action: 'mark-done', providerRef: 'rec_1' },
  { action: 'resume', force: true },
  { action: 'resend-with', params: { ref: 'chain', amount: 2 } },
];

describe('runner.resolve() on a broken receipt chain', () => {
  it.each(resolutions.map((r) => [r.action, r] as const))(
    '%s is refused with BrokenReceiptChainError: nothing sent, nothing written',
    async (_name, resolution) => {
      const { provider, adapter, ledger, runner, clock } = setup(FORGETFUL);
      provider.failNext({ kind: 'unknown-before-commit' });
      const r = await runner.run(adapter, OP, { params: { ref: 'chain', amount: 1 } });
      expect(r.status).toBe('handed-off');
      const before = {
        record: await ledger.get(r.businessOperationId),
        receipts: await ledger.receipts(r.businessOperationId),
        calls: provider.calls(),
      };
      const operator = createRunner({ ledger: edited(ledger), clock });
      const err = await operator
        .resolve(r.businessOperationId, resolution, { adapters: [adapter], by: 'alice' })
        .catch((e: unknown) => e);
      expect(BrokenReceiptChainError.isInstance(err)).toBe(true);
      expect(err).toMatchObject({
        code: 'RETRYSAFE_BROKEN_RECEIPT_CHAIN',
        businessOperationId: r.businessOperationId,
        index: 0,
      });
      expect(provider.calls()).toBe(before.calls);
      expect(await ledger.get(r.businessOperationId)).toEqual(before.record);
      expect(await ledger.receipts(r.businessOperationId)).toEqual(before.receipts);
    },
  );

  it('a chain sealed with a key the runner lacks is refused naming that key, not as an edit', async () => {
    const k1 = { id: 'k1', secret: '0123456789abcdef0123' };
    const { provider, adapter, ledger, clock } = setup(FORGETFUL, { receiptKey: k1 });
    provider.failNext({ kind: 'unknown-before-commit' });
    const r = await createRunner({ ledger, clock, receiptKey: k1 }).run(adapter, OP, {
      params: { ref: 'k', amount: 1 },
    });
    const operator = createRunner({ ledger, clock, receiptKey: { id: 'k2', secret: 'fedcba9876543210fedc' } });
    const err = await operator.resolve(r.businessOperationId, { action: 'abandon' }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'RETRYSAFE_BROKEN_RECEIPT_CHAIN', missingKey: 'k1' });
    expect((err as Error).message).toMatch(/key k1.*receiptKeyring/);
    expect((err as Error).message).not.toMatch(/edited|broken/);
  });

  it('an intact chain resolves as before', async () => {
    const { provider, adapter, runner } = setup(FORGETFUL);
    provider.failNext({ kind: 'unknown-before-commit' });
    const r = await runner.run(adapter, OP, { params: { ref: 'intact', amount: 1 } });
    expect(await runner.resolve(r.businessOperationId, { action: 'abandon' }, { by: 'alice' })).toMatchObject({
      status: 'resolved',
      state: 'abandoned',
    });
  });
});
