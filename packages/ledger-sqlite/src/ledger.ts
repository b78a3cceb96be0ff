import {
  type ClaimInput,
  type Fenced,
  type Ledger,
  LedgerError,
  type OperationRecord,
  type OperationState,
  type PruneOptions,
  type PruneReport,
  type Receipt,
} from '@retrysafe/contract';
import {
  chainedTransition,
  checkFence,
  checkPruneOptions,
  checkReceipt,
  claimTransition,
  dispatchedTransition,
  handOffTransition,
  releaseTransition,
  renewTransition,
  resolveTransition,
  setStateTransition,
} from '@retrysafe/contract/ledger';
import { createRows, type Rows, type StoredText, toReceipts, toRecord } from './rows.js';
import { listSql, pruneSql, recoverSql } from './statements.js';
import { type Connection, openConnection, read, tx } from './tx.js';

export interface SqliteLedgerOptions {
  /** Database file (created if missing). `:memory:` works for a single connection. */
  readonly path: string;
  /**
   * How long a writer waits for another process's write lock (default 10 s). The wait is asynchronous,
   * in short steps: the event loop (other operations' lease heartbeats) keeps running meanwhile.
   */
  readonly busyTimeoutMs?: number;
  /**
   * `FULL` (default): a committed `dispatched` survives power loss, not only a process crash.
   * `NORMAL` is faster in WAL mode and still survives a process crash.
   */
  readonly synchronous?: 'FULL' | 'NORMAL';
  /**
   * Under `FULL`, what a write the runner marks deferrable costs (StatePatch.durability: an operation's
   * final `succeeded` when its provider can be asked). `defer` (default): committed without waiting for
   * the disk; it is durable once a later commit or a checkpoint syncs the WAL, and an OS crash before
   * that leaves the operation `dispatched`, which the next run or recover() looks up and adopts, never
   * sends again. `sync`: every commit waits for the disk.
   */
  readonly deferrableWrites?: 'defer' | 'sync';
}

const PRUNE_BATCH = 500;

function checkOptions(options: SqliteLedgerOptions) {
  if (typeof options?.path !== 'string' || options.path.length === 0)
    throw new LedgerError('createSqliteLedger needs { path }');
  const busyMs = options.busyTimeoutMs ?? 10_000;
  if (!Number.isFinite(busyMs) || busyMs < 0)
    throw new LedgerError(`busyTimeoutMs must be a number ≥ 0, got ${String(options.busyTimeoutMs)}`);
  const sync = options.synchronous ?? 'FULL';
  if (sync !== 'FULL' && sync !== 'NORMAL')
    throw new LedgerError(`synchronous must be 'FULL' or 'NORMAL', got ${JSON.stringify(sync)}`);
  const deferrable = options.deferrableWrites ?? 'defer';
  if (deferrable !== 'defer' && deferrable !== 'sync')
    throw new LedgerError(`deferrableWrites must be 'defer' or 'sync', got ${JSON.stringify(deferrable)}`);
  // Only FULL has a wait to leave out.
  return {
    path: options.path,
    busyMs: Math.floor(busyMs),
    sync,
    defers: sync === 'FULL' && deferrable === 'defer',
  } as const;
}

/**
 * A fenced write: the known row's lone UPDATE when it applies; else, in one transaction, read the
 * row, check the token, apply `next` and store it with `receipt` appended. A refused write (or
 * receipt) writes nothing; `next` returning the record unchanged writes nothing either.
 */
async function fenced(
  c: Connection,
  rows: Rows,
  ref: Fenced,
  what: string,
  next: (r: OperationRecord) => OperationRecord,
  receipt?: Receipt,
  deferred = false,
): Promise<OperationRecord> {
  const fast = rows.knownWrite(ref, next, receipt);
  if (fast !== undefined && (await tx(c, what, fast.run, { deferred, alone: true }))) return fast.record;
  return tx(
    c,
    what,
    () => {
      const row = rows.load(ref.businessOperationId);
      const current = checkFence(row?.current ?? null, ref);
      const updated = next(current);
      if (receipt === undefined) return updated === current ? current : rows.store(updated, row);
      checkReceipt(ref, receipt, row!.lastSeq);
      return rows.store(chainedTransition(updated, receipt), row, receipt);
    },
    { deferred },
  );
}

/** A new operation's row, or undefined when the input cannot be stored as one (the claim then reads first). */
function newRow(input: ClaimInput) {
  try {
    const claim = claimTransition(null, input);
    return {
      result: claim.result,
      record: claim.write!,
      text: { record: JSON.stringify(claim.write), receipts: null },
    };
  } catch {
    return undefined;
  }
}

/**
 * Retention: closed rows older than `before`, in pages in creation order, each page handed to onPrune
 * and then deleted in one transaction that checks the state and age again (an operation may be
 * superseded meanwhile).
 */
async function prune(c: Connection, rows: Rows, options: PruneOptions): Promise<PruneReport> {
  const states = checkPruneOptions(options);
  const sql = pruneSql(states.length);
  const byState: Partial<Record<OperationState, number>> = {};
  let pruned = 0;
  const count = (s: OperationState) => {
    pruned++;
    byState[s] = (byState[s] ?? 0) + 1;
  };
  // Keyset pages: each starts after the last row of the one before (the first, before every row).
  for (let after: [number, string] = [-Number.MAX_VALUE, '']; ; ) {
    const page = rows.prepared(sql.page);
    const found = await read(
      c,
      'prune',
      () =>
        page.all(
          options.before,
          ...after,
          options.before,
          ...states,
          options.batchSize ?? PRUNE_BATCH,
        ) as unknown as Array<StoredText & { id: string }>,
    );
    if (found.length === 0) break;
    const records = found.map((row) => toRecord(row.record, c.path));
    // The record's createdAt, not the column: a time past 2^53 reads back as a number only from the JSON.
    after = [records[records.length - 1]!.createdAt, found[found.length - 1]!.id];
    if (options.dryRun) {
      for (const r of records) count(r.state);
      continue;
    }
    if (options.onPrune)
      for (const [i, r] of records.entries()) await options.onPrune(r, toReceipts(found[i]!, c.path));
    await tx(c, 'prune', () => {
      for (const [i, r] of records.entries()) {
        if (Number(rows.prepared(sql.remove).run(found[i]!.id, options.before, ...states).changes) > 0) count(r.state);
      }
    });
  }
  return { pruned, byState, dryRun: options.dryRun === true };
}

/**
 * The embedded ledger: one SQLite file in WAL mode, shared safely by several OS processes. Each write
 * is one transaction that holds the write lock from its start, reads the row, checks the fencing
 * token and applies the contract's transition rules. A clean operation takes two lone statements:
 * the claim's INSERT of a new id, and the UPDATE of a row this connection stored (written only while
 * the row still holds that text, else read first as any other write).
 */
export function createSqliteLedger(options: SqliteLedgerOptions): Ledger {
  const o = checkOptions(options);
  const c = openConnection(o.path, o.busyMs, o.sync, o.defers);
  const rows = createRows(c);
  const write = (
    ref: Fenced,
    what: string,
    next: (r: OperationRecord) => OperationRecord,
    receipt?: Receipt,
    deferred = false,
  ) => fenced(c, rows, ref, what, next, receipt, deferred);
  const records = (sql: string, args: Array<string | number>) =>
    (rows.prepared(sql).all(...args) as unknown as StoredText[]).map((row) => toRecord(row.record, o.path));

  return {
    capabilities: { claimDispatch: true, receiptWithState: true },
    async claim(input) {
      // A new id (the common case): one INSERT, its own transaction. Anything else reads the row first.
      const fresh = newRow(input);
      if (fresh && (await tx(c, 'claim', () => rows.insertNew(fresh.record, fresh.text), { alone: true })))
        return fresh.result;
      return tx(c, 'claim', () => {
        const row = rows.load(input.businessOperationId);
        const { result, write: w } = claimTransition(row?.current ?? null, input);
        if (w) rows.store(w, row);
        return result;
      });
    },
    async renewLease(ref, leaseMs, now) {
      // A terminal operation holds no lease: renewing it is a no-op (renewTransition returns it unchanged).
      await write(ref, 'renewLease', (r) => renewTransition(r, ref, leaseMs, now));
    },
    markDispatched: (ref, now) => write(ref, 'markDispatched', (r) => dispatchedTransition(r, now)),
    async setState(ref, patch) {
      return write(
        ref,
        'setState',
        (r) => setStateTransition(r, patch),
        patch.receipt,
        patch.durability === 'deferrable',
      );
    },
    handOff: (ref, packet, now, receipt) => write(ref, 'handOff', (r) => handOffTransition(r, packet, now), receipt),
    async appendReceipt(ref, receipt) {
      await write(ref, 'appendReceipt', (r) => r, receipt);
    },
    async release(ref) {
      await write(ref, 'release', (r) => releaseTransition(r));
    },
    // resolveTransition refuses a missing operation, so the row is there when it returns.
    resolve: (id, resolution, now) =>
      tx(c, 'resolve', () => {
        const row = rows.load(id);
        return rows.store(resolveTransition(row?.current ?? null, id, resolution, now), row);
      }),
    get: (id) =>
      read(c, 'get', () => {
        const row = rows.get(id);
        return row ? toRecord(row.record, o.path) : null;
      }),
    async list(filter = {}) {
      const q = listSql(filter);
      return q === null ? [] : read(c, 'list', () => records(q.sql, q.args));
    },
    receipts: (id) =>
      read(c, 'receipts', () => {
        const row = rows.get(id);
        return row ? toReceipts(row, o.path) : [];
      }),
    async recoverCandidates(now, limit) {
      const found = await read(c, 'recoverCandidates', () =>
        records(recoverSql(limit !== undefined), limit !== undefined ? [now, limit] : [now]),
      );
      return found.filter((r) => r.leaseOwner === null || r.leaseExpiresAt === null || r.leaseExpiresAt <= now);
    },
    prune: (options) => prune(c, rows, options),
    async close() {
      rows.forget();
      c.close();
    },
  };
}
