import type { OperationRecord, Receipt } from '@retrysafe/contract';
import { parseStored } from '@retrysafe/contract/ledger';

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
] as const satisfies ReadonlyArray<readonly [keyof OperationRecord, string, '' | 'int8' | 'json']>;

/** Every column but `receipts`, which only `receipts()` and an exporting prune read. */
export const RECORD_COLUMNS = `${FIELDS.map((f) => f[1]).join(', ')}, receipt_head, receipt_count`;

/** A row as pg returns it. */
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
  record.receiptChain = { head: row.receipt_head, length: row.receipt_count };
  return record as unknown as OperationRecord;
}

/** UPDATE … SET of every column from $2 on, as `recordValues` gives them ($1 is left to the caller). */
export const SET_EVERY_COLUMN = FIELDS.map(
  ([, column, kind], i) => `${column} = $${i + 2}${kind === 'json' ? '::json' : ''}`,
).join(', ');

export const recordValues = (r: OperationRecord): unknown[] =>
  FIELDS.map(([field, , kind]) => (kind === 'json' ? jsonParam(r[field]) : r[field]));

/** The receipts of a row, in seq order (NULL: none yet). */
export function toReceipts(text: string | null, id: string): Receipt[] {
  return text === null ? [] : parseStored<Receipt[]>(text, `the receipts of ${id}`, 'PostgreSQL ledger');
}

/** JSON text for a json column (pg would send an array as a PostgreSQL array); undefined: SQL NULL. */
export function jsonParam(value: unknown): string | null {
  return value === undefined ? null : JSON.stringify(value);
}

export const parseJson = (text: string | null | undefined): unknown => (text == null ? null : JSON.parse(text));

const JSON_FIELDS = ['params', 'result', 'handoff', 'resolution'] as const;

/** A record's json columns as the text they hold (null: SQL NULL or JSON null, both read back as null). */
export type JsonTexts = Readonly<Record<(typeof JSON_FIELDS)[number], string | null>>;

export const jsonTextsOf = (record: OperationRecord) =>
  Object.fromEntries(JSON_FIELDS.map((f) => [f, jsonParam(record[f])])) as JsonTexts;

/** The record as a read of its row would give it: its own json values and chain anchor, shared with nobody. */
export const handOut = (record: OperationRecord, json: JsonTexts): OperationRecord => ({
  ...record,
  ...Object.fromEntries(JSON_FIELDS.map((f) => [f, parseJson(json[f])])),
  receiptChain: { ...record.receiptChain },
});
