import { LedgerError, type OperationRecord, type Receipt } from '@retrysafe/contract';

/** What a row stores of an operation: the record's JSON and its receipts' JSON array (null: none yet). */
export interface StoredText {
  readonly record: string;
  readonly receipts: string | null;
}

function parse<T>(text: string, what: string, path: string): T {
  try {
    return JSON.parse(text) as T;
  } catch (cause) {
    throw new LedgerError(`SQLite ledger at ${path}: ${what} is not valid JSON (cut or corrupt): ${(cause as Error).message}`, { cause });
  }
}

export const toRecord = (text: string, path: string): OperationRecord => parse<OperationRecord>(text, 'a stored record', path);

export function toReceipts(stored: StoredText, path: string): Receipt[] {
  if (stored.receipts === null) return [];
  return parse<Receipt[]>(stored.receipts, `the receipts of ${toRecord(stored.record, path).businessOperationId}`, path);
}

/** The receipts' JSON with `added` appended, the stored ones kept as they are (not parsed). */
export function appendReceipt(receipts: string | null, added: Receipt | undefined): string | null {
  if (added === undefined) return receipts;
  const text = JSON.stringify(added);
  return receipts === null ? `[${text}]` : `${receipts.slice(0, -1)},${text}]`;
}

/** The columns an UPDATE writes for `r` (statements.ts order), then the id. */
export function updateArgs(r: OperationRecord, stored: StoredText): Array<string | number | null> {
  return [r.state, r.fence, r.leaseExpiresAt, r.updatedAt, stored.record, stored.receipts, r.businessOperationId];
}

/** The columns the INSERT writes for a new operation. */
export function insertArgs(r: OperationRecord, stored: StoredText): Array<string | number | null> {
  return [r.businessOperationId, r.provider, r.operation, r.state, r.fence, r.leaseExpiresAt, r.createdAt, r.updatedAt, stored.record, stored.receipts];
}
