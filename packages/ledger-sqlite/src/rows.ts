import type { StatementSync } from 'node:sqlite';
import type { Fenced, OperationRecord, Receipt } from '@retrysafe/contract';
import {
  appendStoredReceipt,
  checkRef,
  fencedTransition,
  isTerminal,
  parseStoredReceipts,
  parseStoredRecord,
  recordJson,
} from '@retrysafe/contract/ledger';
import { type Connection, tx } from './tx.js';

/** The record's JSON and its receipts' JSON array (null: none yet). */
export interface StoredText {
  readonly record: string;
  readonly receipts: string | null;
}

/** A row read for a write: its text, its record and its last receipt's seq. */
type Loaded = StoredText & { readonly current: OperationRecord; readonly lastSeq: number };

type Next = (r: OperationRecord) => OperationRecord;

/** A runner has a few operations in flight. */
const KNOWN_MAX = 256;

const where = (path: string) => `SQLite ledger at ${path}`;

export const toRecord = (text: string, path: string): OperationRecord => parseStoredRecord(text, where(path));

export const toReceipts = (receipts: string | null, id: string, path: string): Receipt[] =>
  parseStoredReceipts(receipts, id, where(path));

/** The columns an UPDATE writes, then the id (statements.ts order). */
const updateArgs = (r: OperationRecord, t: StoredText) => [
  r.state,
  r.fence,
  r.leaseExpiresAt,
  r.updatedAt,
  t.record,
  t.receipts,
  r.businessOperationId,
];
/** A new row: the same, then the columns that never change. */
const insertArgs = (r: OperationRecord, t: StoredText) => [...updateArgs(r, t), r.provider, r.operation, r.createdAt];

/**
 * Rows in and out of the file, and the text this connection last stored of each open operation: a write
 * on it is one UPDATE guarded by that text (any other write since leaves nothing to update).
 */
export function createRows(c: Connection) {
  const { st } = c;
  const cached = new Map<string, StatementSync>();
  /** Listings and retention vary their text: prepared once per text. */
  const prepared = (sql: string): StatementSync => cached.get(sql) ?? cached.set(sql, c.db.prepare(sql)).get(sql)!;
  const known = new Map<string, StoredText & { readonly lastSeq: number }>();

  const remember = (r: OperationRecord, text: StoredText, lastSeq: number) => {
    known.delete(r.businessOperationId);
    if (isTerminal(r)) return;
    if (known.size >= KNOWN_MAX) known.delete(known.keys().next().value!);
    known.set(r.businessOperationId, { ...text, lastSeq });
  };
  const get = (id: string): StoredText | undefined => st.select.get(id) as StoredText | undefined;
  const load = (id: string): Loaded | null => {
    const row = st.selectForWrite.get(id) as (StoredText & { last_seq: number | null }) | undefined;
    return row ? { ...row, current: toRecord(row.record, c.path), lastSeq: row.last_seq ?? 0 } : null;
  };
  /** Stores `r` over the row `before` (null: a new row), with `added` after its receipts. */
  const store = (next: OperationRecord, before: Loaded | null, added?: Receipt): OperationRecord => {
    const { record: r, text: record } = recordJson(next, where(c.path));
    const text = { record, receipts: appendStoredReceipt(before?.receipts ?? null, added, where(c.path)) };
    if (before === null) st.insert.run(...insertArgs(r, text));
    else st.update.run(...updateArgs(r, text));
    remember(r, text, added?.seq ?? before?.lastSeq ?? 0);
    return r;
  };
  /** False when the id has a row, or `r` is no JSON (the claim then reads the row, and stores or says why). */
  const insertNew = (r: OperationRecord): boolean => {
    let text: StoredText;
    try {
      text = { record: JSON.stringify(r), receipts: null };
    } catch {
      return false;
    }
    if (Number(st.insert.run(...insertArgs(r, text)).changes) !== 1) return false;
    remember(r, text, 0);
    return true;
  };

  /** The record and the lone UPDATE computed on the known text; undefined when only the row can answer. */
  const knownWrite = (ref: Fenced, next: Next, receipt: Receipt | undefined) => {
    const k = known.get(ref.businessOperationId);
    if (k === undefined) return undefined;
    try {
      const current = JSON.parse(k.record) as OperationRecord;
      const updated = fencedTransition(current, ref, next, receipt, k.lastSeq);
      // A no-op or a refusal: the row must say which.
      if (updated === current) return undefined;
      const { record: r, text: record } = recordJson(updated, where(c.path));
      const text = { record, receipts: appendStoredReceipt(k.receipts, receipt, where(c.path)) };
      const run = () => {
        const changed = Number(st.updateKnown.run(...updateArgs(r, text), k.record, k.receipts).changes) === 1;
        if (changed) remember(r, text, receipt?.seq ?? k.lastSeq);
        else known.delete(r.businessOperationId);
        return changed;
      };
      return { record: r, run };
    } catch {
      return undefined;
    }
  };

  /** The known row's lone UPDATE when it applies; else read, check the token and store in one transaction. */
  const fenced = async (ref: Fenced, what: string, next: Next, receipt?: Receipt, deferred = false) => {
    checkRef(ref);
    const fast = knownWrite(ref, next, receipt);
    if (fast !== undefined && (await tx(c, what, fast.run, { deferred, alone: true }))) return fast.record;
    const write = () => {
      const row = load(ref.businessOperationId);
      const updated = fencedTransition(row?.current ?? null, ref, next, receipt, row?.lastSeq ?? 0);
      return updated === row!.current ? updated : store(updated, row, receipt);
    };
    return tx(c, what, write, { deferred });
  };

  return { get, load, store, insertNew, fenced, prepared, forget: () => known.clear() };
}
export type Rows = ReturnType<typeof createRows>;
