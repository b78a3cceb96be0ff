// How every ledger reads, lists, prunes and writes its stored rows: the rule is one, so a cut or edited row gives every
// ledger the same LedgerError, and no ledger appends to text that is not a list.
import { LedgerError } from './errors.js';
import type { ListFilter, OperationRecord, PruneReport } from './ledger.js';
import { type OperationState, STATES } from './ledger-states.js';
import type { Receipt } from './receipt.js';

/** What every ledger stores: SQLite's JSON functions refuse nesting deeper than 1000, and params sit inside the record. */
export const PAYLOAD_LIMITS = Object.freeze({ maxDepth: 100, maxBytes: 1024 * 1024 });

/** A JSON.parse error's message cut where the parser quotes the text around the break (a param, an email, a token). */
export const jsonErrorReason = (message: string): string => message.replace(/,?\s*(?:\.\.\.)?".*$/s, '');

function parseStored(text: string, what: string, where: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    const reason = jsonErrorReason((err as Error).message);
    // The parser's own error is not the cause: a logger printing the cause would print the quote.
    const cause = new SyntaxError(reason);
    throw new LedgerError(`${where}: ${what} is not valid JSON (cut or corrupt): ${reason}`, { cause });
  }
}

const TEXT_FIELDS = ['businessOperationId', 'provider', 'operation', 'intentFingerprint', 'paramsFingerprint'] as const;
const NUMBER_FIELDS = ['fence', 'createdAt', 'updatedAt', 'attemptCount'] as const;

/** Whether `h` is no packet, or one with the lists its readers walk (a hand-off list, resolve-all, an agent's tool). */
const isPacket = (h: unknown) => {
  const p = h as { attempts?: unknown; safeNextActions?: unknown } | null | undefined;
  return p == null || (typeof p === 'object' && Array.isArray(p.attempts) && Array.isArray(p.safeNextActions));
};

/** The first field every reader relies on (listings print them, claims and recover() match by them) that `r` lacks. */
function missingField(r: Record<string, unknown>): string | undefined {
  return (
    TEXT_FIELDS.find((f) => typeof r[f] !== 'string') ??
    NUMBER_FIELDS.find((f) => !Number.isFinite(r[f])) ??
    (STATES.includes(r.state as never) ? undefined : 'state') ??
    (isPacket(r.handoff) ? undefined : 'handoff')
  );
}

/** A LedgerError names the field it lacks, never its value. */
export function checkStoredRecord(record: Record<string, unknown>, where: string): OperationRecord {
  const missing = missingField(record);
  if (missing !== undefined)
    throw new LedgerError(`${where}: a stored record has no valid ${missing} (written by hand or by a newer version?)`);
  return record as unknown as OperationRecord;
}

/** Anything but an object with every field readers rely on is a LedgerError (`null` would read as "no such
 * operation"): unreadable, never acted on or rewritten. */
export function parseStoredRecord(text: string, where: string): OperationRecord {
  const record = parseStored(text, 'a stored record', where);
  if (typeof record !== 'object' || record === null || Array.isArray(record))
    throw new LedgerError(
      `${where}: a stored record is ${Array.isArray(record) ? 'an array' : record === null ? 'null' : `a ${typeof record}`}, not an operation record`,
    );
  return checkStoredRecord(record as Record<string, unknown>, where);
}

const EMPTY_ARRAY = /^\[\s*\]$/;

const notAList = (id: string, where: string) =>
  new LedgerError(`${where}: the receipts of ${id} are not a JSON array (edited from outside?)`);

/** null: none yet. */
export function parseStoredReceipts(text: string | null, id: string, where: string): Receipt[] {
  if (text === null) return [];
  const list = parseStored(text, `the receipts of ${id}`, where);
  if (!Array.isArray(list)) throw notAList(id, where);
  return list as Receipt[];
}

/** A value JSON cannot carry (a BigInt, a cycle) is a LedgerError before anything is written. */
export function storedJson(value: unknown, where: string): string {
  try {
    return JSON.stringify(value);
  } catch (cause) {
    throw new LedgerError(`${where}: a value to store is not JSON (${(cause as Error).message}); nothing written`, {
      cause,
    });
  }
}

const notJson = (err: unknown) => ({
  notStored: 'result',
  why: `the provider's result is not JSON (${((err as Error).cause as Error | undefined)?.message}); the provider holds it (providerRef)`,
});

/** The JSON a ledger stores for `record`, and the record that is: a provider result no JSON carries gives way to a note,
 * as the provider was called by then and the state must be written (the run that got it still returns it whole). */
export function recordJson(record: OperationRecord, where: string): { record: OperationRecord; text: string } {
  try {
    return { record, text: storedJson(record, where) };
  } catch (err) {
    if (record.result == null) throw err;
    const noted = { ...record, result: notJson(err) };
    return { record: noted, text: storedJson(noted, where) };
  }
}

/** For a ledger that stores the result apart from the record. */
export function resultJson(result: unknown, where: string): string {
  try {
    return storedJson(result, where);
  } catch (err) {
    return storedJson(notJson(err), where);
  }
}

/** Text that is not an array is refused (cut JSON). */
export function appendStoredReceipt(text: string | null, added: Receipt | undefined, where: string): string | null {
  if (added === undefined) return text;
  if (text !== null && !(text.startsWith('[') && text.endsWith(']'))) throw notAList(added.businessOperationId, where);
  const receipt = storedJson(added, where);
  // An empty array (emptied from outside) takes the receipt as none would: '[,' is cut JSON.
  return text === null || EMPTY_ARRAY.test(text) ? `[${receipt}]` : `${text.slice(0, -1)},${receipt}]`;
}

/** That row is left out and the others listed. */
export type OnUnreadable = (id: string, error: LedgerError) => void;

/** One that cannot be read goes to `onUnreadable` (none: the listing rejects, so no row is dropped silently). */
export function readEach<Row, T>(
  rows: readonly Row[],
  idOf: (row: Row) => string,
  read: (row: Row) => T,
  onUnreadable: OnUnreadable | undefined,
): T[] {
  const out: T[] = [];
  for (const row of rows) {
    try {
      out.push(read(row));
    } catch (err) {
      if (onUnreadable === undefined) throw err;
      const error = LedgerError.isInstance(err)
        ? err
        : new LedgerError(`the stored row of ${idOf(row)} cannot be read: ${(err as Error).message}`, { cause: err });
      onUnreadable(idOf(row), error);
    }
  }
  return out;
}

/** Up to `limit` readable rows (`fetch(n)`: the first n rows, all when undefined). The fetch is widened by each
 * unreadable row, so one stuck at the head of the order cannot hide the rows behind it; each is told once. */
export async function readLimited<Row, T>(
  fetch: (n: number | undefined) => Promise<readonly Row[]>,
  limit: number | undefined,
  idOf: (row: Row) => string,
  read: (row: Row) => T,
  onUnreadable: OnUnreadable | undefined,
): Promise<T[]> {
  const told = new Map<string, LedgerError>();
  const tell = onUnreadable && ((id: string, error: LedgerError) => void told.set(id, error));
  for (let n = limit; ; n = limit! + told.size) {
    const rows = await fetch(n);
    const out = readEach(rows, idOf, read, tell);
    if (n === undefined || out.length >= limit! || rows.length < n) {
      for (const [id, error] of told) onUnreadable!(id, error);
      return out.slice(0, limit);
    }
  }
}

export const inListing = (r: OperationRecord, filter: ListFilter) =>
  (!filter.states || filter.states.includes(r.state)) &&
  (!filter.provider || r.provider === filter.provider) &&
  (!filter.operation || r.operation === filter.operation);

/** A listing's order: oldest first by creation, the id breaking ties by code unit (localeCompare: `a_b` before `A9`). */
export const byCreation = (a: OperationRecord, b: OperationRecord) =>
  a.createdAt - b.createdAt ||
  (a.businessOperationId < b.businessOperationId ? -1 : a.businessOperationId > b.businessOperationId ? 1 : 0);

export function isPrunable(record: OperationRecord, states: readonly OperationState[], before: number): boolean {
  return states.includes(record.state) && record.updatedAt < before;
}

/** `count` each operation pruned (or, in a dry run, that would be). */
export function pruneTally(dryRun: boolean | undefined) {
  const byState: Partial<Record<OperationState, number>> = {};
  let pruned = 0;
  return {
    count(state: OperationState, n = 1) {
      byState[state] = (byState[state] ?? 0) + n;
      pruned += n;
    },
    report: (): PruneReport => ({ pruned, byState, dryRun: dryRun === true }),
  };
}
