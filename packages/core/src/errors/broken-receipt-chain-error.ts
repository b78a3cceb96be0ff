import { errorClass } from '@retrysafe/contract/provider';

/** The receipt chain does not verify (receipts edited, removed or reordered outside retrysafe; `index`: the
 * first broken one): resolve() refuses to act on it. Find out who edited the ledger first. */
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
