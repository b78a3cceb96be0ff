import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { LedgerError, type OperationRecord, type Receipt } from '@retrysafe/contract';
import {
  appendStoredReceipt,
  isTerminal,
  PRUNABLE_STATES,
  parseStoredReceipts,
  parseStoredRecord,
  recordJson,
  storedJson,
} from '@retrysafe/contract/ledger';
import { TTL_ATTRIBUTE } from './schema.js';

export type Item = Record<string, AttributeValue>;

/** An operation as stored: the record, its receipts' JSON array (null: none yet) and the item's version. */
export interface Stored {
  readonly record: OperationRecord;
  readonly recordText: string;
  readonly receipts: string | null;
  readonly lastSeq: number;
  /** Goes up by one on every write: each write is conditioned on the version it started from. */
  readonly version: number;
}

/**
 * DynamoDB refuses an item over 400 KB. A later write (a receipt, the provider's result) must still fit, so a new
 * operation gets less room than the receipts and results of an open one, and those less than what closes it or hands
 * it off; a person's resolve has the rest. Bookkeeping that adds neither (a takeover, the dispatch, the lease, the
 * state) may use a closing write's room: recovery can drive an operation whose receipts filled it.
 */
const MAX_NEW_ITEM_BYTES = 256 * 1024;
const MAX_OPEN_ITEM_BYTES = 350 * 1024;
const MAX_CLOSING_ITEM_BYTES = 392 * 1024;
const MAX_ITEM_BYTES = 400 * 1024;

/** How large the item of `next`, written over `current` (null: a new item) by `what`, may be. */
export function maxBytes(next: Stored, current: Stored | null, what: string): number {
  if (current === null) return MAX_NEW_ITEM_BYTES;
  if (what === 'resolve') return MAX_ITEM_BYTES;
  // A resume or a revision sends next: its run's receipts and result need the room an open operation leaves.
  if (what === 'claim' && isTerminal(current.record)) return MAX_OPEN_ITEM_BYTES;
  const adds = next.receipts !== current.receipts || next.record.result !== current.record.result;
  return adds && !isTerminal(next.record) ? MAX_OPEN_ITEM_BYTES : MAX_CLOSING_ITEM_BYTES;
}

/** The optional attributes: absent (REMOVEd) when the record has no value for them. */
export const OPTIONAL_ATTRIBUTES = ['leaseExpiresAt', 'receipts', 'openState', 'closedState', TTL_ATTRIBUTE] as const;

const s = (v: string): AttributeValue => ({ S: v });
const n = (v: number): AttributeValue => ({ N: String(v) });

/** What `record` (with `added` after the receipts of `before`) stores as. */
export function nextStored(next: OperationRecord, before: Stored | null, added?: Receipt): Stored {
  const { record, text: recordText } = recordJson(next, 'DynamoDB ledger');
  return {
    record,
    recordText,
    receipts: appendStoredReceipt(before?.receipts ?? null, added, 'DynamoDB ledger'),
    lastSeq: added?.seq ?? before?.lastSeq ?? 0,
    version: (before?.version ?? 0) + 1,
  };
}

/** Closed for good (prunable): in the closed index, and expires after the retention when one is set. */
const closed = (r: OperationRecord) => PRUNABLE_STATES.includes(r.state);

/** `retainFor`: how long after its last change a closed operation expires (null: never by itself). */
export function toItem(st: Stored, retainFor: (r: OperationRecord) => number | null): Item {
  const r = st.record;
  const item: Item = {
    id: s(r.businessOperationId),
    provider: s(r.provider),
    operation: s(r.operation),
    state: s(r.state),
    fence: n(r.fence),
    version: n(st.version),
    lastSeq: n(st.lastSeq),
    createdAt: n(r.createdAt),
    updatedAt: n(r.updatedAt),
    record: s(st.recordText),
  };
  if (r.leaseExpiresAt !== null) item.leaseExpiresAt = n(r.leaseExpiresAt);
  if (st.receipts !== null) item.receipts = s(st.receipts);
  if (!closed(r)) item.openState = s(r.state);
  else {
    item.closedState = s(r.state);
    const keep = retainFor(r);
    if (keep !== null) item[TTL_ATTRIBUTE] = n(Math.ceil((r.updatedAt + keep) / 1000));
  }
  return item;
}

export function fromItem(item: Item, table: string): Stored {
  const recordText = item.record?.S;
  if (recordText === undefined)
    throw new LedgerError(`DynamoDB ledger table ${table}: item ${item.id?.S} has no record`);
  return {
    record: parseStoredRecord(recordText, `DynamoDB ledger table ${table}`),
    recordText,
    receipts: item.receipts?.S ?? null,
    lastSeq: Number(item.lastSeq?.N ?? 0),
    version: Number(item.version?.N ?? 0),
  };
}

export const toReceipts = (st: Stored, table: string): Receipt[] =>
  parseStoredReceipts(st.receipts, st.record.businessOperationId, `DynamoDB ledger table ${table}`);

/** Past its TTL: DynamoDB deletes it some time later; reads treat it as gone already. */
export const expired = (item: Item, nowMs: number) =>
  item[TTL_ATTRIBUTE]?.N !== undefined && Number(item[TTL_ATTRIBUTE].N) * 1000 <= nowMs;

/** The item's size as DynamoDB counts it: names and values in UTF-8, a number at most 21 bytes. */
export function itemBytes(item: Item): number {
  let bytes = 0;
  for (const [name, v] of Object.entries(item))
    bytes += Buffer.byteLength(name) + (v.S !== undefined ? Buffer.byteLength(v.S) : 21);
  return bytes;
}

/** What a write stores: the operation and the item it is written as. */
export type Write = Stored & { readonly item: Item };

/**
 * `st` as it can be stored: when its item would be over `max`, its result (the provider was called by then, so the
 * state must be written) is replaced by a note saying so, and a hand-off packet's attempts and last message (copies of
 * receipts, which stay stored) by a word where to read them: a row whose receipts filled it can still be handed off.
 */
export function withinSize(st: Stored, build: (st: Stored) => Item, max: number): Write {
  const item = build(st);
  if (itemBytes(item) <= max) return { ...st, item };
  const unfit = `does not fit in the operation's DynamoDB item`;
  let record = st.record;
  const { result, handoff } = record;
  if (result !== null) {
    const bytes = Buffer.byteLength(JSON.stringify(result));
    const why = `the provider's result (${bytes} bytes of JSON) ${unfit}; the provider holds it (providerRef)`;
    record = { ...record, result: { notStored: 'result', why } };
  }
  if (handoff?.attempts.length || handoff?.lastKnown.message !== undefined) {
    const { message, ...lastKnown } = handoff.lastKnown;
    const explanation = `${handoff.explanation} (its ${handoff.attempts.length} attempts and last message ${unfit}: read them in the operation's receipts)`;
    record = { ...record, handoff: { ...handoff, attempts: [], lastKnown, explanation } };
  }
  if (record === st.record) return { ...st, item };
  const fitted = { ...st, record, recordText: storedJson(record, 'DynamoDB ledger') };
  return { ...fitted, item: build(fitted) };
}

/** Refuses, before anything is written, an item DynamoDB would refuse or that leaves no room to finish. `restarted`:
 * the state of a closed operation the claim would run again (only a hand-off can be resolved). */
export function checkSize(item: Item, max: number, what: string, restarted?: OperationRecord['state']): void {
  const bytes = itemBytes(item);
  if (bytes <= max) return;
  const then = restarted === 'handed-off' ? 'resolve it instead (mark-done or abandon)' : 'it can only be pruned';
  const instead = restarted ? `: its receipts leave no room for another run; ${then}` : '';
  throw new LedgerError(
    `${what} of ${item.id?.S}: the operation's item would be ${bytes} bytes, more than the ${max} this DynamoDB ledger writes (the item limit is 400 KB); nothing written${instead}`,
  );
}

/** Whether what is stored is exactly `st`: a write whose answer was lost but which was applied. */
export const isSame = (seen: Stored | null, st: Stored) =>
  seen !== null && seen.version === st.version && seen.recordText === st.recordText && seen.receipts === st.receipts;

/** Open operations whose last stored state this process keeps (a runner has a few in flight). */
const KNOWN_MAX = 256;

/**
 * What this process last wrote of each open operation: its next write starts there, without a read. It starts from
 * the text written, parsed again: the record written shares objects with the caller (its params, the record handed
 * back), and what a caller changes in them must not reach the next write.
 */
export function createKnown() {
  const known = new Map<string, Stored>();
  return {
    get(id: string): Stored | undefined {
      const st = known.get(id);
      return st && { ...st, record: JSON.parse(st.recordText) as OperationRecord };
    },
    forget: (id: string) => known.delete(id),
    remember(st: Stored) {
      const id = st.record.businessOperationId;
      known.delete(id);
      if (isTerminal(st.record)) return;
      if (known.size >= KNOWN_MAX) known.delete(known.keys().next().value!);
      known.set(id, st);
    },
    clear: () => known.clear(),
  };
}
