// The receipt rule every ledger applies with a write that carries one: the chain's next, anchored in the same write.
import { LedgerError } from './errors.js';
import type { Fenced, OperationRecord } from './ledger.js';
import type { Receipt } from './receipt.js';

/** The chain's anchor every ledger writes with the receipt. */
export function chainedTransition(record: OperationRecord, receipt: Receipt | undefined): OperationRecord {
  return receipt === undefined ? record : { ...record, receiptChain: { head: receipt.hash, length: receipt.seq } };
}

export function checkReceipt(ref: Fenced, receipt: Receipt, lastSeq: number): void {
  if (typeof receipt !== 'object' || receipt === null)
    throw new LedgerError(`a receipt { businessOperationId, seq, … } is required, got ${String(receipt)}`);
  if (receipt.businessOperationId !== ref.businessOperationId)
    throw new LedgerError(`receipt for ${receipt.businessOperationId} appended to ${ref.businessOperationId}`);
  if (receipt.seq !== lastSeq + 1)
    throw new LedgerError(`receipt seq ${receipt.seq} for ${ref.businessOperationId}: expected ${lastSeq + 1}`);
}
