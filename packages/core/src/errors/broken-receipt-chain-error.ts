import { RetrysafeError } from '@retrysafe/contract';
import { markerGuard } from '@retrysafe/contract/provider';

const marker = Symbol.for('retrysafe.error.BrokenReceiptChainError');

/**
 * The operation's receipt chain does not verify (edited, removed or reordered receipts outside retrysafe):
 * resolve() refuses to act on it, and nothing is sent or written. Find out who edited the ledger first.
 */
export class BrokenReceiptChainError extends RetrysafeError {
  readonly [marker] = true;
  readonly businessOperationId: string;
  /** The first receipt (0-based) where the chain breaks. */
  readonly index: number;
  readonly reason: string;
  constructor(businessOperationId: string, index: number, reason: string) {
    super(
      'RETRYSAFE_BROKEN_RECEIPT_CHAIN',
      `the receipt chain of ${businessOperationId} is broken at receipt #${index + 1} (${reason}); nothing was sent or written`,
    );
    this.businessOperationId = businessOperationId;
    this.index = index;
    this.reason = reason;
  }
  static override isInstance = markerGuard<BrokenReceiptChainError>(marker);
  /** `instanceof` by the marker too: the bundled root and the subpath entries each hold a copy of this class. */
  static [Symbol.hasInstance] = BrokenReceiptChainError.isInstance;
}
