// The runbook promises every resolution appends a resolve receipt, and the ledger never holds a half-written
// operation: a person's mark-done or abandon is closed together with its receipt, or not at all. Before, the ledger
// closed the row and the receipt was a second write: a crash or a failing write between the two left the operation
// succeeded or abandoned with no receipt saying who closed it or why.

import { InvalidStateError } from '@retrysafe/contract';
import { createRunner } from '@retrysafe/core';
import { describe, expect, it } from 'vitest';
import { receiptWriteFails, setup } from './helpers.js';

const FORGETFUL = { replays: false, retentionMs: null, lookup: 'none' } as const;

describe('runner.resolve(): mark-done and abandon close the operation with its resolve receipt, or not at all', () => {
  it.each([
    ['mark-done', { action: 'mark-done', providerRef: 'rec_1' }],
    ['abandon', { action: 'abandon' }],
  ] as const)('%s: a failing receipt write leaves no closed row without a receipt', async (action, resolution) => {
    const { ledger, failing } = receiptWriteFails();
    const { provider, adapter, runner, clock } = setup(FORGETFUL, { ledger });
    provider.failNext({ kind: 'unknown-before-commit' });
    const r = await runner.run(adapter, 'records.create', { params: { ref: `rr-${action}`, amount: 1 } });
    expect(r.status).toBe('handed-off');
    const before = await ledger.receipts(r.businessOperationId);
    failing.on = true;
    const operator = createRunner({ ledger, clock });
    await operator.resolve(r.businessOperationId, resolution, { by: 'alice' }).catch(() => undefined);
    const row = (await ledger.get(r.businessOperationId))!;
    const receipts = await ledger.receipts(r.businessOperationId);
    if (row.state === 'handed-off') {
      expect(receipts).toEqual(before); // nothing written
    } else {
      expect(row.state).toBe(action === 'mark-done' ? 'succeeded' : 'abandoned');
      expect(receipts).toHaveLength(before.length + 1);
      expect(receipts.at(-1)).toMatchObject({ kind: 'resolve', decision: { action } });
      expect(row.receiptChain).toEqual({ head: receipts.at(-1)!.hash, length: receipts.length });
    }
  });

  it.each([
    ['blank', ' \t'],
    ['U+0000', 'rec_\u00001'],
  ])(
    'mark-done with a %s provider reference is refused (InvalidStateError) on the API as the CLI refuses it: nothing written',
    async (_name, providerRef) => {
      const { provider, adapter, runner, ledger } = setup(FORGETFUL);
      provider.failNext({ kind: 'unknown-before-commit' });
      const r = await runner.run(adapter, 'records.create', { params: { ref: 'rr-blank', amount: 1 } });
      const before = {
        row: await ledger.get(r.businessOperationId),
        receipts: await ledger.receipts(r.businessOperationId),
      };
      const err = await runner
        .resolve(r.businessOperationId, { action: 'mark-done', providerRef }, { by: 'alice' })
        .catch((e: unknown) => e);
      expect(InvalidStateError.isInstance(err)).toBe(true);
      expect(await ledger.get(r.businessOperationId)).toEqual(before.row);
      expect(await ledger.receipts(r.businessOperationId)).toEqual(before.receipts);
    },
  );
});
