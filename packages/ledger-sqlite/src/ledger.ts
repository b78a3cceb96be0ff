import type { StatementSync } from 'node:sqlite';
import {
  LedgerError,
  chainedTransition,
  checkFence,
  checkReceipt,
  claimTransition,
  dispatchedTransition,
  handOffTransition,
  isTerminal,
  pruneStates,
  releaseTransition,
  renewTransition,
  resolveTransition,
  setStateTransition,
  type ClaimInput,
  type Fenced,
  type Ledger,
  type OperationRecord,
  type OperationState,
  type PruneOptions,
  type PruneReport,
  type Receipt,
} from '@retrysafe/contract';
import { appendReceipt, insertArgs, toReceipts, toRecord, updateArgs, type StoredText } from './rows.js';
import { listSql, prepareStatements, pruneSql, recoverSql } from './statements.js';
import { openConnection, read, tx, type Connection } from './tx.js';

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

/** Open operations whose last stored text a connection keeps (a runner has a few in flight). */
const KNOWN_MAX = 256;
const PRUNE_BATCH = 500;

/** A row as a fenced write starts from it. */
interface Loaded extends StoredText {
  readonly current: OperationRecord;
  readonly lastSeq: number;
}

function checkOptions(options: SqliteLedgerOptions) {
  if (typeof options?.path !== 'string' || options.path.length === 0) throw new LedgerError('createSqliteLedger needs { path }');
  const busyMs = options.busyTimeoutMs ?? 10_000;
  if (!Number.isFinite(busyMs) || busyMs < 0) throw new LedgerError(`busyTimeoutMs must be a number ≥ 0, got ${String(options.busyTimeoutMs)}`);
  const sync = options.synchronous ?? 'FULL';
  if (sync !== 'FULL' && sync !== 'NORMAL') throw new LedgerError(`synchronous must be 'FULL' or 'NORMAL', got ${JSON.stringify(sync)}`);
  const deferrable = options.deferrableWrites ?? 'defer';
  if (deferrable !== 'defer' && deferrable !== 'sync') throw new LedgerError(`deferrableWrites must be 'defer' or 'sync', got ${JSON.stringify(deferrable)}`);
  // Only FULL has a wait to leave out.
  return { path: options.path, busyMs: Math.floor(busyMs), sync, defers: sync === 'FULL' && deferrable === 'defer' } as const;
}

function prepareAll(c: Connection) {
  try {
    return prepareStatements(c.db);
  } catch (cause) {
    c.close();
    throw new LedgerError(`cannot open SQLite ledger at ${c.path}: ${(cause as Error).message}`, { cause });
  }
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
  const st = prepareAll(c);
  const path = o.path;
  const cached = new Map<string, StatementSync>();
  const prepared = (sql: string): StatementSync => cached.get(sql) ?? cached.set(sql, c.db.prepare(sql)).get(sql)!;

  /** What this connection last stored of an open operation, by id (the first is the oldest). */
  const known = new Map<string, StoredText & { readonly lastSeq: number }>();
  const remember = (r: OperationRecord, text: StoredText, lastSeq: number) => {
    known.delete(r.businessOperationId);
    if (isTerminal(r)) return;
    if (known.size >= KNOWN_MAX) known.delete(known.keys().next().value!);
    known.set(r.businessOperationId, { ...text, lastSeq });
  };

  const load = (id: string): Loaded | null => {
    const row = st.selectForWrite.get(id) as { record: string; receipts: string | null; last_seq: number | null } | undefined;
    return row ? { record: row.record, receipts: row.receipts, current: toRecord(row.record, path), lastSeq: row.last_seq ?? 0 } : null;
  };
  /** Stores `r` over the row `before` (null: a new row), with `added` after its receipts. */
  const store = (r: OperationRecord, before: StoredText | null, lastSeq: number, added?: Receipt): OperationRecord => {
    const text = { record: JSON.stringify(r), receipts: appendReceipt(before?.receipts ?? null, added) };
    if (before === null) st.insert.run(...insertArgs(r, text));
    else st.update.run(...updateArgs(r, text));
    remember(r, text, added?.seq ?? lastSeq);
    return r;
  };

  /** A fenced write computed on the text this connection stored; undefined when it cannot answer alone. */
  const knownWrite = (ref: Fenced, next: (r: OperationRecord) => OperationRecord, receipt: Receipt | undefined) => {
    const k = known.get(ref.businessOperationId);
    if (k === undefined) return undefined;
    try {
      const current = checkFence(JSON.parse(k.record) as OperationRecord, ref);
      let r = next(current);
      // A no-op or a refusal: the row must say which.
      if (r === current && receipt === undefined) return undefined;
      if (receipt !== undefined) (checkReceipt(ref, receipt, k.lastSeq), (r = chainedTransition(r, receipt)));
      const text = { record: JSON.stringify(r), receipts: appendReceipt(k.receipts, receipt) };
      const record = r;
      const run = () => {
        const changed = Number(st.updateKnown.run(...updateArgs(record, text), k.record, k.receipts).changes) === 1;
        if (changed) remember(record, text, receipt?.seq ?? k.lastSeq);
        return changed;
      };
      return { record, run };
    } catch {
      return undefined;
    }
  };

  /**
   * A fenced write: the known row's lone UPDATE when it applies; else, in one transaction, read the
   * row, check the token, apply `next` and store it with `receipt` appended. A refused write (or
   * receipt) writes nothing; `next` returning the record unchanged writes nothing either.
   */
  async function fenced(ref: Fenced, what: string, next: (r: OperationRecord) => OperationRecord, receipt?: Receipt, deferred = false): Promise<OperationRecord> {
    const fast = knownWrite(ref, next, receipt);
    if (fast !== undefined) {
      if (await tx(c, what, fast.run, { deferred, alone: true })) return fast.record;
      known.delete(ref.businessOperationId);
    }
    return tx(c, what, () => {
      const row = load(ref.businessOperationId);
      const current = checkFence(row?.current ?? null, ref);
      const updated = next(current);
      if (receipt === undefined) return updated === current ? current : store(updated, row, row!.lastSeq);
      checkReceipt(ref, receipt, row!.lastSeq);
      return store(chainedTransition(updated, receipt), row, row!.lastSeq, receipt);
    }, { deferred });
  }

  /** A new operation's row, or undefined when the input cannot be stored as one (the claim then reads first). */
  const newRow = (input: ClaimInput) => {
    try {
      const claim = claimTransition(null, input);
      return { claim, record: claim.write!, text: { record: JSON.stringify(claim.write), receipts: null } };
    } catch {
      return undefined;
    }
  };

  return {
    capabilities: { claimDispatch: true, receiptWithState: true },
    async claim(input) {
      // A new id (the common case): one INSERT, its own transaction. Anything else reads the row first.
      const fresh = newRow(input);
      const inserted = fresh && (await tx(c, 'claim', () => Number(st.insert.run(...insertArgs(fresh.record, fresh.text)).changes) === 1, { alone: true }));
      if (fresh && inserted) return remember(fresh.record, fresh.text, 0), fresh.claim.result;
      return tx(c, 'claim', () => {
        const row = load(input.businessOperationId);
        const { result, write } = claimTransition(row?.current ?? null, input);
        if (write) store(write, row, row?.lastSeq ?? 0);
        return result;
      });
    },
    async renewLease(ref, leaseMs, now) {
      // A terminal operation holds no lease: renewing it is a no-op (renewTransition returns it unchanged).
      await fenced(ref, 'renewLease', (r) => renewTransition(r, ref, leaseMs, now));
    },
    markDispatched: (ref, now) => fenced(ref, 'markDispatched', (r) => dispatchedTransition(r, now)),
    async setState(ref, patch) {
      return fenced(ref, 'setState', (r) => setStateTransition(r, patch), patch.receipt, patch.durability === 'deferrable');
    },
    handOff: (ref, packet, now, receipt) => fenced(ref, 'handOff', (r) => handOffTransition(r, packet, now), receipt),
    async appendReceipt(ref, receipt) {
      await fenced(ref, 'appendReceipt', (r) => r, receipt);
    },
    async release(ref) {
      await fenced(ref, 'release', (r) => releaseTransition(r));
    },
    resolve: (id, resolution, now) =>
      tx(c, 'resolve', () => {
        const row = load(id);
        // resolveTransition refuses a missing operation, so `row` is there when it returns.
        return store(resolveTransition(row?.current ?? null, id, resolution, now), row, row?.lastSeq ?? 0);
      }),
    get: (id) =>
      read(c, 'get', () => {
        const row = st.select.get(id) as StoredText | undefined;
        return row ? toRecord(row.record, path) : null;
      }),
    async list(filter = {}) {
      const q = listSql(filter);
      if (q === null) return [];
      return read(c, 'list', () => (prepared(q.sql).all(...q.args) as unknown as StoredText[]).map((row) => toRecord(row.record, path)));
    },
    receipts: (id) =>
      read(c, 'receipts', () => {
        const row = st.select.get(id) as StoredText | undefined;
        return row ? toReceipts(row, path) : [];
      }),
    async recoverCandidates(now, limit) {
      const sql = recoverSql(limit !== undefined);
      const args = limit !== undefined ? [now, limit] : [now];
      const rows = await read(c, 'recoverCandidates', () => (prepared(sql).all(...args) as unknown as StoredText[]).map((row) => toRecord(row.record, path)));
      return rows.filter((r) => r.leaseOwner === null || r.leaseExpiresAt === null || r.leaseExpiresAt <= now);
    },
    prune: (options) => prune(options),
    async close() {
      known.clear();
      c.close();
    },
  };

  /**
   * Retention: closed rows older than `before`, in rowid pages, each page handed to onPrune and then
   * deleted in one transaction that checks the state and age again (an operation may be superseded meanwhile).
   */
  async function prune(options: PruneOptions): Promise<PruneReport> {
    const states = pruneStates(options);
    const sql = pruneSql(states.length);
    const byState: Partial<Record<OperationState, number>> = {};
    const count = (s: OperationState) => (byState[s] = (byState[s] ?? 0) + 1);
    let pruned = 0;
    for (let after = 0; ; ) {
      const page = prepared(sql.page);
      const rows = await read(c, 'prune', () => page.all(after, options.before, ...states, options.batchSize ?? PRUNE_BATCH) as unknown as Array<StoredText & { n: number }>);
      if (rows.length === 0) break;
      after = rows[rows.length - 1]!.n;
      const found = rows.map((row) => ({ row, record: toRecord(row.record, path) }));
      if (options.dryRun) {
        for (const f of found) (pruned++, count(f.record.state));
        continue;
      }
      if (options.onPrune) for (const f of found) await options.onPrune(f.record, toReceipts(f.row, path));
      await tx(c, 'prune', () => {
        for (const f of found) if (Number(prepared(sql.remove).run(f.row.n, options.before, ...states).changes) > 0) (pruned++, count(f.record.state));
      });
    }
    return { pruned, byState, dryRun: options.dryRun === true };
  }
}
