import type { StatementSync } from 'node:sqlite';
import { type Fenced, LedgerError, type OperationRecord, type Receipt } from '@retrysafe/contract';
import { chainedTransition, checkFence, checkReceipt, isTerminal } from '@retrysafe/contract/ledger';
import { prepareStatements } from './statements.js';
import type { Connection } from './tx.js';

/** What a row stores of an operation: the record's JSON and its receipts' JSON array (null: none yet). */
export interface StoredText {
  readonly record: string;
  readonly receipts: string | null;
}

/** A row as a fenced write starts from it. */
export interface Loaded extends StoredText {
  readonly current: OperationRecord;
  readonly lastSeq: number;
}

/** Open operations whose last stored text a connection keeps (a runner has a few in flight). */
const KNOWN_MAX = 256;

function parse<T>(text: string, what: string, path: string): T {
  try {
    return JSON.parse(text) as T;
  } catch (cause) {
    throw new LedgerError(
      `SQLite ledger at ${path}: ${what} is not valid JSON (cut or corrupt): ${(cause as Error).message}`,
      { cause },
    );
  }
}

export const toRecord = (text: string, path: string): OperationRecord =>
  parse<OperationRecord>(text, 'a stored record', path);

export function toReceipts(stored: StoredText, path: string): Receipt[] {
  if (stored.receipts === null) return [];
  return parse<Receipt[]>(
    stored.receipts,
    `the receipts of ${toRecord(stored.record, path).businessOperationId}`,
    path,
  );
}

/** The receipts' JSON with `added` appended, the stored ones kept as they are (not parsed). */
function appendReceipt(receipts: string | null, added: Receipt | undefined): string | null {
  if (added === undefined) return receipts;
  const text = JSON.stringify(added);
  return receipts === null ? `[${text}]` : `${receipts.slice(0, -1)},${text}]`;
}

/** The columns an UPDATE writes for `r` (statements.ts order), then the id. */
const updateArgs = (r: OperationRecord, t: StoredText) => [
  r.state,
  r.fence,
  r.leaseExpiresAt,
  r.updatedAt,
  t.record,
  t.receipts,
  r.businessOperationId,
];
/** The columns the INSERT writes for a new operation. */
export const insertArgs = (r: OperationRecord, t: StoredText) => [
  r.businessOperationId,
  r.provider,
  r.operation,
  r.state,
  r.fence,
  r.leaseExpiresAt,
  r.createdAt,
  r.updatedAt,
  t.record,
  t.receipts,
];

/**
 * Whole rows in and out of the file, and what this connection last stored of each open operation: a
 * fenced write on such a row computes on that text and stores with one UPDATE guarded by it (any other
 * write to the row since, by anyone, leaves nothing to update: the caller then reads the row).
 */
export function createRows(c: Connection) {
  let st: ReturnType<typeof prepareStatements>;
  try {
    st = prepareStatements(c.db);
  } catch (cause) {
    c.close();
    throw new LedgerError(`cannot open SQLite ledger at ${c.path}: ${(cause as Error).message}`, { cause });
  }
  const cached = new Map<string, StatementSync>();
  /** A statement whose text depends on its arguments (listings, retention), prepared once per text. */
  const prepared = (sql: string): StatementSync => {
    let statement = cached.get(sql);
    if (statement === undefined) {
      statement = c.db.prepare(sql);
      cached.set(sql, statement);
    }
    return statement;
  };
  const known = new Map<string, StoredText & { readonly lastSeq: number }>();

  const remember = (r: OperationRecord, text: StoredText, lastSeq: number) => {
    known.delete(r.businessOperationId);
    if (isTerminal(r)) return;
    if (known.size >= KNOWN_MAX) known.delete(known.keys().next().value!);
    known.set(r.businessOperationId, { ...text, lastSeq });
  };
  const get = (id: string): StoredText | undefined => st.select.get(id) as StoredText | undefined;
  const load = (id: string): Loaded | null => {
    const row = st.selectForWrite.get(id) as
      | { record: string; receipts: string | null; last_seq: number | null }
      | undefined;
    return row
      ? {
          record: row.record,
          receipts: row.receipts,
          current: toRecord(row.record, c.path),
          lastSeq: row.last_seq ?? 0,
        }
      : null;
  };
  /** Stores `r` over the row `before` (null: a new row), with `added` after its receipts. */
  const store = (r: OperationRecord, before: Loaded | null, added?: Receipt): OperationRecord => {
    const text = { record: JSON.stringify(r), receipts: appendReceipt(before?.receipts ?? null, added) };
    if (before === null) st.insert.run(...insertArgs(r, text));
    else st.update.run(...updateArgs(r, text));
    remember(r, text, added?.seq ?? before?.lastSeq ?? 0);
    return r;
  };
  /** A new operation's row, stored unless the id has one; false when it has. */
  const insertNew = (r: OperationRecord, text: StoredText): boolean => {
    if (Number(st.insert.run(...insertArgs(r, text)).changes) !== 1) return false;
    remember(r, text, 0);
    return true;
  };

  /** A fenced write computed on the known text: the record and the lone UPDATE that stores it; undefined when only the row can answer. */
  const knownWrite = (ref: Fenced, next: (r: OperationRecord) => OperationRecord, receipt: Receipt | undefined) => {
    const k = known.get(ref.businessOperationId);
    if (k === undefined) return undefined;
    try {
      const current = checkFence(JSON.parse(k.record) as OperationRecord, ref);
      let r = next(current);
      // A no-op or a refusal: the row must say which.
      if (r === current && receipt === undefined) return undefined;
      if (receipt !== undefined) {
        checkReceipt(ref, receipt, k.lastSeq);
        r = chainedTransition(r, receipt);
      }
      const text = { record: JSON.stringify(r), receipts: appendReceipt(k.receipts, receipt) };
      const record = r;
      const run = () => {
        const changed = Number(st.updateKnown.run(...updateArgs(record, text), k.record, k.receipts).changes) === 1;
        if (changed) remember(record, text, receipt?.seq ?? k.lastSeq);
        else known.delete(record.businessOperationId);
        return changed;
      };
      return { record, run };
    } catch {
      return undefined;
    }
  };

  return { get, load, store, insertNew, knownWrite, prepared, forget: () => known.clear() };
}
export type Rows = ReturnType<typeof createRows>;
