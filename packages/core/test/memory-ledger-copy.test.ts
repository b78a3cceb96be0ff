// The memory ledger keeps and hands out copies nobody else holds.
import { LedgerError } from '@retrysafe/contract';
import { createMemoryLedger } from '@retrysafe/core';
import { describe, expect, it } from 'vitest';

describe('memory ledger copy', () => {
  it('a caller mutating what it gave or got never changes the ledger', async () => {
    const ledger = createMemoryLedger();
    const params = { orderRef: 'o-1', lines: [{ sku: 'a' }] };
    const claim = await ledger.claim({
      businessOperationId: 'op:1' as never,
      provider: 'p',
      operation: 'orders.create',
      intentFingerprint: 'sha256:i',
      paramsFingerprint: 'sha256:p',
      params,
      providerKey: null,
      owner: 'w',
      leaseMs: 30_000,
      now: 1_000,
    });
    if (claim.kind === 'gone') throw new Error('a new claim always holds a record');
    params.lines[0]!.sku = 'changed-after-claim';
    (claim.record.params as typeof params).lines[0]!.sku = 'changed-in-answer';
    (claim.record as { state: string }).state = 'succeeded';
    const stored = await ledger.get('op:1' as never);
    expect(stored?.state).toBe('claimed');
    expect((stored?.params as typeof params).lines[0]!.sku).toBe('a');
    (stored!.params as typeof params).lines.push({ sku: 'pushed' });
    expect(((await ledger.get('op:1' as never))?.params as typeof params).lines).toEqual([{ sku: 'a' }]);
  });

  it('a closed memory ledger refuses every call with a LedgerError, as the SQLite and PostgreSQL ledgers do', async () => {
    const ledger = createMemoryLedger();
    await ledger.close();
    const ref = { businessOperationId: 'op:1' as never, fence: 1 };
    const calls = [
      ledger.get('op:1' as never),
      ledger.list(),
      ledger.receipts('op:1' as never),
      ledger.recoverCandidates(1),
      ledger.markDispatched(ref, 1),
      ledger.prune!({ before: 1 }),
    ];
    for (const call of calls) await expect(call).rejects.toSatisfy(LedgerError.isInstance);
  });
});
