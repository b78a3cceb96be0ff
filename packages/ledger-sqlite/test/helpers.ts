import type { ClaimInput, Receipt } from '@retrysafe/contract';
import { claimOf } from '@retrysafe/testkit/ledger';

/** A claim that dispatches at once, its fingerprints and key derived from `id`. */
export const claimInput = (id: string, over: Partial<ClaimInput> = {}): ClaimInput =>
  claimOf(id, { operation: 'records.create', leaseMs: 10_000, now: 1_000, dispatch: true, ...over });

/** A receipt of `id` at `seq`; its hash is made up (the ledger stores a chain, it does not check one). */
export const receiptOf = (id: string, seq: number, prevHash: string | null = null, reason = 'r'): Receipt =>
  ({
    businessOperationId: id,
    seq,
    runId: 'run_1',
    attemptId: 'att_1',
    provider: 'p',
    operation: 'p.op',
    kind: 'dispatch',
    startedAt: '2026-12-01T12:00:00.000Z',
    finishedAt: '2026-12-01T12:00:00.001Z',
    outcome: 'unknown',
    decision: { action: 'lookup', reason },
    providerKey: null,
    requestFingerprint: `sha256:${'a'.repeat(64)}`,
    prevHash,
    hash: `${seq}`.repeat(64),
  }) as never;
