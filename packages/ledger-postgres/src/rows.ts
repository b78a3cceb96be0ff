import type {
  BusinessOperationId,
  HandoffPacket,
  OperationRecord,
  OperationState,
  ProviderKey,
  Receipt,
} from '@retrysafe/contract';
import { parseStored } from '@retrysafe/contract/ledger';

/** Every column but `receipts`, which only `receipts()` and an exporting prune read. */
export const RECORD_COLUMNS = `business_operation_id, provider, operation, intent_fingerprint, params_fingerprint,
  params, provider_key, state, fence, lease_owner, lease_expires_at, created_at, updated_at, first_dispatched_at,
  attempt_count, last_outcome, result, provider_ref, status_ref, handoff, resolution, receipt_head, receipt_count`;

/** As pg returns it: int8 as a string, json parsed. */
export interface OperationRow {
  business_operation_id: string;
  provider: string;
  operation: string;
  intent_fingerprint: string;
  params_fingerprint: string;
  params: unknown;
  provider_key: string | null;
  state: string;
  fence: string | number;
  lease_owner: string | null;
  lease_expires_at: string | number | null;
  created_at: string | number;
  updated_at: string | number;
  first_dispatched_at: string | number | null;
  attempt_count: number;
  last_outcome: string | null;
  result: unknown;
  provider_ref: string | null;
  status_ref: string | null;
  handoff: unknown;
  resolution: unknown;
  receipt_head: string | null;
  receipt_count: number;
}

const num = (v: string | number): number => (typeof v === 'number' ? v : Number(v));
const numOrNull = (v: string | number | null): number | null => (v === null ? null : num(v));

export function toRecord(row: OperationRow): OperationRecord {
  return {
    businessOperationId: row.business_operation_id as BusinessOperationId,
    provider: row.provider,
    operation: row.operation,
    intentFingerprint: row.intent_fingerprint,
    paramsFingerprint: row.params_fingerprint,
    params: row.params ?? null,
    providerKey: row.provider_key as ProviderKey | null,
    state: row.state as OperationState,
    fence: num(row.fence),
    leaseOwner: row.lease_owner,
    leaseExpiresAt: numOrNull(row.lease_expires_at),
    createdAt: num(row.created_at),
    updatedAt: num(row.updated_at),
    firstDispatchedAt: numOrNull(row.first_dispatched_at),
    attemptCount: row.attempt_count,
    lastOutcome: row.last_outcome as OperationRecord['lastOutcome'],
    result: row.result ?? null,
    providerRef: row.provider_ref,
    statusRef: row.status_ref,
    handoff: (row.handoff ?? null) as HandoffPacket | null,
    resolution: (row.resolution ?? null) as OperationRecord['resolution'],
    receiptChain: { head: row.receipt_head, length: row.receipt_count },
  };
}

/** The receipts of a row, in seq order (NULL: none yet). */
export function toReceipts(text: string | null, id: string): Receipt[] {
  return text === null ? [] : parseStored<Receipt[]>(text, `the receipts of ${id}`, 'PostgreSQL ledger');
}

/** JSON text for a json column (pg would send an array as a PostgreSQL array); undefined: SQL NULL. */
export function jsonParam(value: unknown): string | null {
  return value === undefined ? null : JSON.stringify(value);
}

export const parseJson = (text: string | null | undefined): unknown => (text == null ? null : JSON.parse(text));

/** A record's json columns as the text they hold (null: SQL NULL or JSON null, both read back as null). */
export type JsonTexts = Readonly<Record<'params' | 'result' | 'handoff' | 'resolution', string | null>>;

export const jsonTextsOf = (record: OperationRecord): JsonTexts => ({
  params: jsonParam(record.params),
  result: jsonParam(record.result),
  handoff: jsonParam(record.handoff),
  resolution: jsonParam(record.resolution),
});

/** The record as a read of its row would give it: its own json values and chain anchor, shared with nobody. */
export function handOut(record: OperationRecord, json: JsonTexts): OperationRecord {
  return {
    ...record,
    params: parseJson(json.params),
    result: parseJson(json.result),
    handoff: parseJson(json.handoff) as OperationRecord['handoff'],
    resolution: parseJson(json.resolution) as OperationRecord['resolution'],
    ...(record.receiptChain ? { receiptChain: { ...record.receiptChain } } : {}),
  };
}
