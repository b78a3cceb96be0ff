import { type Fenced, LedgerError, type OperationRecord, type Receipt } from '@retrysafe/contract';
import {
  appendStoredReceipt,
  checkFence,
  checkReceipt,
  checkRef,
  checkStoredRecord,
  fencedTransition,
  isTerminal,
  parseStoredReceipts,
  storedJson,
} from '@retrysafe/contract/ledger';
import type { FencedWrite, Sql, Statements } from './statements.js';
import type { Db, Run } from './tx.js';

/** Each record field and its column ('int8' comes back from pg as a string, 'json' as a parsed value). */
const FIELDS = [
  ['businessOperationId', 'business_operation_id', ''],
  ['provider', 'provider', ''],
  ['operation', 'operation', ''],
  ['intentFingerprint', 'intent_fingerprint', ''],
  ['paramsFingerprint', 'params_fingerprint', ''],
  ['params', 'params', 'json'],
  ['providerKey', 'provider_key', ''],
  ['state', 'state', ''],
  ['fence', 'fence', 'int8'],
  ['leaseOwner', 'lease_owner', ''],
  ['leaseExpiresAt', 'lease_expires_at', 'int8'],
  ['createdAt', 'created_at', 'int8'],
  ['updatedAt', 'updated_at', 'int8'],
  ['firstDispatchedAt', 'first_dispatched_at', 'int8'],
  ['attemptCount', 'attempt_count', ''],
  ['lastOutcome', 'last_outcome', ''],
  ['result', 'result', 'json'],
  ['providerRef', 'provider_ref', ''],
  ['statusRef', 'status_ref', ''],
  ['handoff', 'handoff', 'json'],
  ['resolution', 'resolution', 'json'],
  ['account', 'account', ''],
  ['intentFrom', 'intent_from', ''],
] as const satisfies ReadonlyArray<readonly [keyof OperationRecord, string, '' | 'int8' | 'json']>;

/** Every column but `receipts`, which only `receipts()` and an exporting prune read. */
export const RECORD_COLUMNS = `${FIELDS.map((f) => f[1]).join(', ')}, receipt_head, receipt_count`;

export type OperationRow = { [C in (typeof FIELDS)[number][1]]: unknown } & {
  business_operation_id: string;
  receipt_head: string | null;
  receipt_count: number;
};

export function toRecord(row: OperationRow): OperationRecord {
  const record: Record<string, unknown> = {};
  for (const [field, column, kind] of FIELDS) {
    const value = row[column];
    record[field] = value == null ? null : kind === 'int8' ? Number(value) : value;
  }
  // No account (no caller's intent) is no field at all, as the contract's claim writes it.
  if (record.account === null) delete record.account;
  if (record.intentFrom === null) delete record.intentFrom;
  record.receiptChain = { head: row.receipt_head, length: row.receipt_count };
  // Its columns hold the rest; a json column (the hand-off packet) may hold anything a statement wrote.
  return checkStoredRecord(record, 'PostgreSQL ledger');
}

export const RECORD_FIELD_COUNT = FIELDS.length;

/** UPDATE … SET of every column from $2 on, in FIELDS order ($1 is left to the caller). */
export const SET_EVERY_COLUMN = FIELDS.map(
  ([, column, kind], i) => `${column} = $${i + 2}${kind === 'json' ? '::json' : ''}`,
).join(', ');

/** The receipts of a row, in seq order (NULL: none yet). */
export function toReceipts(text: string | null, id: string): Receipt[] {
  return parseStoredReceipts(text, id, 'PostgreSQL ledger');
}

/** JSON text for a json column (pg would send an array as a PostgreSQL array); undefined: SQL NULL. */
export function jsonParam(value: unknown): string | null {
  return value === undefined ? null : storedJson(value, 'PostgreSQL ledger');
}

export const parseJson = (text: string | null | undefined): unknown => (text == null ? null : JSON.parse(text));

type JsonField = Extract<(typeof FIELDS)[number], readonly [unknown, unknown, 'json']>[0];
const JSON_FIELDS = FIELDS.flatMap(([field, , kind]) => (kind === 'json' ? [field as JsonField] : []));

/** A record's json columns as the text they hold (null: SQL NULL or JSON null, both read back as null). */
type JsonTexts = Readonly<Record<JsonField, string | null>>;

const jsonTextsOf = (record: OperationRecord) =>
  Object.fromEntries(JSON_FIELDS.map((f) => [f, jsonParam(record[f])])) as JsonTexts;

/** The record as a read of its row would give it: its own json values and chain anchor, shared with nobody. */
const handOut = (record: OperationRecord, json: JsonTexts): OperationRecord => ({
  ...record,
  ...Object.fromEntries(JSON_FIELDS.map((f) => [f, parseJson(json[f])])),
  receiptChain: { ...record.receiptChain },
});

type Rule = (r: OperationRecord) => OperationRecord;

interface FencedCall {
  readonly what: string;
  readonly write: FencedWrite;
  readonly values: readonly unknown[];
  /** The contract's transition; the record unchanged: nothing to do. Absent (release): nothing returned. */
  readonly rule?: Rule;
  /** The json columns the write sets, as the text they will hold. */
  readonly json?: Partial<JsonTexts>;
  readonly receipt?: Receipt | undefined;
  /** The commit need not wait for the WAL flush (deferrableWrites). */
  readonly deferred?: boolean;
}

/** A runner's operations in flight, with room. */
const KNOWN_MAX = 4096;

/** One UPDATE guarded by the token (READ COMMITTED re-checks the WHERE after a takeover), its receipt in it. A
 * remembered operation's write also requires the remembered xmin and returns only the new one: any other write
 * makes another xmin, so a match means the computed record is the row's; no match, and it is sent in full. */
export function createWrites(db: Db, st: Statements, defers: boolean) {
  const known = new Map<string, { xmin: string; record: OperationRecord; json: JsonTexts }>();

  function remember(record: OperationRecord, xmin: string, json: JsonTexts): void {
    const id = record.businessOperationId;
    known.delete(id);
    if (isTerminal(record)) return;
    if (known.size >= KNOWN_MAX) known.delete(known.keys().next().value!);
    // A copy: the caller may change the one it was handed.
    known.set(id, { xmin, record: { ...record, receiptChain: { ...record.receiptChain } }, json });
  }

  function fromRow(row: OperationRow & { xmin: string }): OperationRecord {
    const record = toRecord(row);
    remember(record, row.xmin, jsonTextsOf(record));
    return record;
  }

  async function refused(ref: Fenced, c: FencedCall): Promise<null> {
    const { rows } = await db.query<OperationRow>(c.what, st.get, [ref.businessOperationId]);
    const current = checkFence(rows[0] ? toRecord(rows[0]) : null, ref);
    // The rule says why (it throws), or that there is nothing to do; else the receipt's seq is why.
    if (c.rule?.(current) === current) return null;
    if (c.receipt !== undefined) {
      checkReceipt(ref, c.receipt, rows[0]!.receipt_count);
      // Refused when the stored receipts are no array (the UPDATE's guard would not append to them).
      const stored = await db.query<{ receipts: string | null }>(c.what, st.receipts, [ref.businessOperationId]);
      appendStoredReceipt(stored.rows[0]?.receipts ?? null, c.receipt, 'PostgreSQL ledger');
    }
    // The row now passes the guard, so it changed between the write and this read.
    throw new LedgerError(`${c.what}: ${ref.businessOperationId} changed concurrently; write refused`);
  }

  /** The write of a remembered operation; null when not remembered, refused by the rule, or the row changed. */
  async function knownWrite(ref: Fenced, c: FencedCall, rule: Rule, sql: Sql, args: unknown[]) {
    const k = known.get(ref.businessOperationId);
    if (k === undefined) return null;
    let next: OperationRecord;
    try {
      next = fencedTransition(k.record, ref, rule, c.receipt, k.record.receiptChain.length);
    } catch {
      return null; // the full write says why
    }
    const { rows } = await db.query<{ xmin: string; lease_expires_at: string | null }>(c.what, sql, [...args, k.xmin]);
    if (rows.length === 0) {
      known.delete(ref.businessOperationId);
      return null;
    }
    // The lease's end as the database wrote it (its clock, with leaseClock: 'database').
    const lease = rows[0]!.lease_expires_at;
    const record = { ...next, leaseExpiresAt: lease === null ? null : Number(lease) };
    const json = { ...k.json, ...c.json };
    remember(record, rows[0]!.xmin, json);
    return handOut(record, json);
  }

  async function fenced(ref: Fenced, c: FencedCall): Promise<OperationRecord | null> {
    checkRef(ref);
    const texts = st.fenced(c.write, c.values.length, c.receipt !== undefined, c.deferred === true && defers);
    const args = [...c.values, ref.businessOperationId, ref.fence];
    if (c.receipt !== undefined) {
      checkReceiptShape(ref, c.receipt, c.what);
      args.push(c.receipt.seq, jsonParam(c.receipt), c.receipt.hash);
    }
    if (c.rule === undefined) {
      known.delete(ref.businessOperationId); // the row becomes another version
      const { rows } = await db.query(c.what, texts.bare, args);
      if (rows.length === 0) await refused(ref, c);
      return null;
    }
    const fast = await knownWrite(ref, c, c.rule, texts.known, args);
    if (fast !== null) return fast;
    const { rows } = await db.query<OperationRow & { xmin: string }>(c.what, texts.full, args);
    if (rows.length === 0) return refused(ref, c);
    return fromRow(rows[0]!);
  }

  /** Stores a transition's record over a row this transaction holds FOR UPDATE, with the fence read under the lock,
   * and the receipt the transition anchored. */
  async function writeLocked(run: Run, what: string, fence: unknown, r: OperationRecord, receipt?: Receipt) {
    const values = [fence, ...FIELDS.map(([field, , kind]) => (kind === 'json' ? jsonParam(r[field]) : r[field]))];
    if (receipt !== undefined) values.push(receipt.seq, jsonParam(receipt), receipt.hash);
    const sql = receipt === undefined ? st.writeLocked : st.writeLockedReceipt;
    const { rows } = await run<OperationRow & { xmin: string }>(sql, values);
    if (rows.length === 0)
      throw new LedgerError(`${what}: ${r.businessOperationId} changed under its row lock; nothing written`);
    return fromRow(rows[0]!);
  }

  return { fenced, writeLocked, remember };
}

/** A receipt of the operation it is appended to, with a whole-number seq: the UPDATE's guard checks which one, and
 * its integer cast would take the text '2' for the contract's 2. */
function checkReceiptShape(ref: Fenced, receipt: Receipt, what: string): void {
  const id = ref.businessOperationId;
  if (receipt?.businessOperationId !== id)
    throw new LedgerError(`${what}: receipt belongs to ${receipt?.businessOperationId}, not ${id}`);
  if (!Number.isSafeInteger(receipt.seq))
    throw new LedgerError(`${what}: receipt seq ${JSON.stringify(receipt.seq)} for ${id} is not a whole number`);
}
