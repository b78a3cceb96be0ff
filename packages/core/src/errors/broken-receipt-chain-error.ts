import { errorClass } from '@retrysafe/contract/provider';

/** The receipt chain does not verify (receipts edited, removed or reordered outside retrysafe; `index`: the
 * first broken one): resolve() refuses to act on it. Find out who edited the ledger first. `missingKey`: the
 * receipt was sealed with a key this runner was not given, so it could not be checked (pass that key). */
export const BrokenReceiptChainError = errorClass(
  'BrokenReceiptChainError',
  'RETRYSAFE_BROKEN_RECEIPT_CHAIN',
  (businessOperationId: string, index: number, reason: string, missingKey?: string) => ({
    businessOperationId,
    index,
    reason,
    missingKey,
    message:
      missingKey === undefined
        ? `the receipt chain of ${businessOperationId} is broken at receipt #${index + 1} (${reason}); nothing was sent or written`
        : `the receipt chain of ${businessOperationId} cannot be checked: receipt #${index + 1} is sealed with key ${missingKey}, which this runner was not given (pass it in receiptKeyring); nothing was sent or written`,
  }),
);
export type BrokenReceiptChainError = InstanceType<typeof BrokenReceiptChainError>;
