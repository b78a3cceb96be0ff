import { type Ledger, LedgerError, type PruneOptions, type PruneReport } from '@retrysafe/contract';
import {
  checkListFilter,
  checkPruneOptions,
  checkRecoverCandidates,
  choiceOption,
  claimTransition,
  fencedMethods,
  numberOption,
  type OnUnreadable,
  pruneTally,
  readEach,
  readLimited,
  resolveTransition,
} from '@retrysafe/contract/ledger';
import { createRows, type Rows, type StoredText, toReceipts, toRecord } from './rows.js';
import { listSql, pruneSql, RECOVER_SQL } from './statements.js';
import { type Connection, openConnection, read, tx } from './tx.js';

/** The options; the README's table says what each does. */
export interface SqliteLedgerOptions {
  /** Database file (created if missing); `:memory:` for a single connection. */
  readonly path: string;
  /** How long a write waits for another process's lock, in short asynchronous steps (default 10 s). */
  readonly busyTimeoutMs?: number;
  /** `FULL` (default): a committed `dispatched` survives power loss; `NORMAL`: a process crash only. */
  readonly synchronous?: 'FULL' | 'NORMAL';
  /** Under `FULL`: `defer` (default) commits a deferrable write without waiting for the disk; recovery adopts it if lost. */
  readonly deferrableWrites?: 'defer' | 'sync';
  /** `true` (default): create the schema in a new or empty file, or bring it up to date; `false`: refuse a file that
   * does not already hold a ledger of this schema version, writing nothing to it. */
  readonly migrate?: boolean;
}

type StoredRow = StoredText & { id: string };
export type CheckedOptions = ReturnType<typeof checkOptions>;

function checkOptions(options: SqliteLedgerOptions) {
  if (typeof options?.path !== 'string' || options.path.length === 0)
    throw new LedgerError('createSqliteLedger needs { path }');
  const busyTimeoutMs = numberOption(options.busyTimeoutMs, 10_000, 'busyTimeoutMs', 0);
  const synchronous = choiceOption(options.synchronous, ['FULL', 'NORMAL'], 'synchronous');
  const deferrable = choiceOption(options.deferrableWrites, ['defer', 'sync'], 'deferrableWrites');
  const defers = synchronous === 'FULL' && deferrable === 'defer'; // only FULL has a wait to leave out
  const { migrate = true } = options;
  if (typeof migrate !== 'boolean') throw new LedgerError(`migrate must be true or false, got ${String(migrate)}`);
  return { path: options.path, busyMs: Math.floor(busyTimeoutMs), sync: synchronous, defers, migrate } as const;
}

/** Keyset pages in rowid order, each handed to onPrune, then deleted only where still closed and old. */
async function prune(c: Connection, rows: Rows, options: PruneOptions): Promise<PruneReport> {
  const states = checkPruneOptions(options);
  const sql = pruneSql(states.length);
  const { count, report } = pruneTally(options.dryRun);
  // Below every rowid SQLite assigns (one given from outside may be negative).
  for (let after = -(2n ** 63n); ; ) {
    const args = [after, options.before, options.before, ...states, options.batchSize ?? 500];
    const found = await read(c, 'prune', () => {
      // Read exactly: a rowid given from outside may be past 2^53.
      const page = rows.prepared(sql.page);
      page.setReadBigInts(true);
      return page.all(...args) as unknown as Array<StoredRow & { n: bigint }>;
    });
    if (found.length === 0) break;
    after = found[found.length - 1]!.n;
    const exporting = options.onPrune !== undefined && !options.dryRun;
    // A row that cannot be read (or, to export, its receipts) is kept and told; the others are pruned.
    const page = readEach(
      found,
      (row) => row.id,
      (row) => ({
        id: row.id,
        record: toRecord(row.record, c.path),
        receipts: exporting ? toReceipts(row.receipts, row.id, c.path) : [],
      }),
      options.onUnreadable,
    );
    if (options.dryRun) {
      for (const p of page) count(p.record.state);
      continue;
    }
    if (options.onPrune) {
      // The write lock is waited for first: on a ledger held locked, fail before exporting what would not be deleted.
      await tx(c, 'prune', () => undefined);
      for (const p of page) await options.onPrune(p.record, p.receipts);
    }
    await tx(c, 'prune', () => {
      for (const p of page)
        if (Number(rows.prepared(sql.remove).run(p.id, options.before, ...states).changes) > 0) count(p.record.state);
    });
  }
  return report();
}

/**
 * One SQLite file in WAL mode, shared by several processes; each write holds the write lock from its
 * start. A clean operation is two lone statements: the claim's INSERT and the UPDATE of the row this
 * connection stored, guarded by that text.
 */
export function createSqliteLedger(options: SqliteLedgerOptions): Ledger {
  const o = checkOptions(options);
  const c = openConnection(o);
  const rows = createRows(c);
  /** Up to `limit` readable rows of `sql` (its last parameter the limit): an unreadable one takes no place. */
  const records = (
    what: string,
    sql: string,
    args: Array<string | number>,
    limit?: number,
    onUnreadable?: OnUnreadable,
  ) =>
    readLimited(
      (n) => read(c, what, () => rows.prepared(sql).all(...args, n ?? -1) as unknown as StoredRow[]),
      limit,
      (row) => row.id,
      (row) => toRecord(row.record, o.path),
      onUnreadable,
    );

  return {
    capabilities: { sharedLeaseClock: true },
    async claim(input) {
      // A claim of a stored row (`existing`, or with its receipt) reads it first; a new one tries the INSERT.
      if (!input.existing && input.receipt === undefined) {
        const fresh = claimTransition(null, input); // the rule checks the input before anything is written
        if (await tx(c, 'claim', () => rows.insertNew(fresh.write!), { alone: true })) return fresh.result;
      }
      return tx(c, 'claim', () => {
        const row = rows.load(input.businessOperationId);
        const { result, write: w } = claimTransition(row?.current ?? null, input);
        if (w) rows.store(w, row, input.receipt);
        return result;
      });
    },
    ...fencedMethods(rows.fenced),
    resolve: (id, resolution, now, receipt) =>
      tx(c, 'resolve', () => {
        const row = rows.load(id);
        const next = resolveTransition(row?.current ?? null, id, resolution, now, receipt, row?.lastSeq);
        return rows.store(next, row, receipt);
      }),
    get: (id) =>
      read(c, 'get', () => {
        const row = rows.get(id);
        return row ? toRecord(row.record, o.path) : null;
      }),
    async list(filter = {}) {
      checkListFilter(filter);
      const q = listSql(filter);
      return q === null ? [] : records('list', q.sql, q.args, filter.limit, filter.onUnreadable);
    },
    receipts: (id) =>
      read(c, 'receipts', () => {
        const row = rows.get(id);
        return row ? toReceipts(row.receipts, id, o.path) : [];
      }),
    async recoverCandidates(now, limit, onUnreadable) {
      checkRecoverCandidates(now, limit, onUnreadable);
      return records('recoverCandidates', RECOVER_SQL, [now], limit, onUnreadable);
    },
    prune: (options) => prune(c, rows, options),
    async close() {
      rows.forget();
      c.close();
    },
  };
}
