import { errorClass } from '@retrysafe/contract/provider';

/**
 * The operation's receipt chain does not verify (edited, removed or reordered receipts outside retrysafe):
 * resolve() refuses to act on it, and nothing is sent or written. Find out who edited the ledger first.
 * `index`: the first receipt (0-based) where the chain breaks.
 */
export const BrokenReceiptChainError = errorClass(
  'BrokenReceiptChainError',
  'RETRYSAFE_BROKEN_RECEIPT_CHAIN',
  (businessOperationId: string, index: number, reason: string) => ({
    businessOperationId,
    index,
    reason,
    message: `the receipt chain of ${businessOperationId} is broken at receipt #${index + 1} (${reason}); nothing was sent or written`,
  }),
);
export type BrokenReceiptChainError = InstanceType<typeof BrokenReceiptChainError>;
