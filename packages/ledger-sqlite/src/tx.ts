import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import type { DatabaseSync } from 'node:sqlite';
import { setTimeout as sleep } from 'node:timers/promises';
import { LedgerError, RetrysafeError } from '@retrysafe/contract';
import type { CheckedOptions } from './ledger.js';
import { migrate, quietly } from './schema.js';
import { prepareStatements } from './statements.js';

/** The longest one SQLite call may block the event loop on a lock. */
const SYNC_BUSY_MS = 20;

/** SQLITE_BUSY: another connection holds the lock (nothing was written). */
function isBusy(err: unknown): boolean {
  const code = (err as { errcode?: unknown } | null)?.errcode;
  return typeof code === 'number' && (code & 0xff) === 5;
}

/**
 * Loaded when a ledger is opened. Node 22 warns that SQLite is experimental; the embedded ledger is the
 * default, so only that warning, only while loading, is left out for users who never chose it.
 */
function loadSqlite(): typeof import('node:sqlite') {
  const emit = process.emitWarning;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    const text = String(typeof warning === 'string' ? warning : warning?.message);
    if (!text.startsWith('SQLite is an experimental feature')) Reflect.apply(emit, process, [warning, ...rest]);
  }) as typeof process.emitWarning;
  try {
    // Undefined before Node 22.13 (and getBuiltinModule itself before 20.16): said so, not as a TypeError.
    const sqlite = process.getBuiltinModule?.('node:sqlite') as typeof import('node:sqlite') | undefined;
    if (sqlite) return sqlite;
    throw new Error(`node:sqlite is not in Node ${process.version}: the SQLite ledger needs Node 22.13 or later`);
  } finally {
    process.emitWarning = emit;
  }
}

export type Connection = ReturnType<typeof openConnection>;

/**
 * WAL mode, schema up to date. The factory is synchronous, so is the wait for another process creating
 * the file; SQLite answers some of those conflicts with SQLITE_BUSY without its busy handler, hence the loop.
 */
export function openConnection(o: CheckedOptions) {
  const { path, busyMs, defers } = o;
  let db: DatabaseSync | undefined;
  let st: ReturnType<typeof prepareStatements>;
  try {
    const { DatabaseSync } = loadSqlite();
    db = new DatabaseSync(path);
    db.exec(`PRAGMA busy_timeout = ${busyMs}`);
    // Checked before WAL mode is set: a file that is no ledger is left exactly as it was.
    if (!o.migrate) migrate(db, path, false);
    const deadline = Date.now() + busyMs;
    for (let step = 1; ; step = Math.min(step * 2, SYNC_BUSY_MS)) {
      try {
        db.exec('PRAGMA journal_mode = WAL');
        db.exec(`PRAGMA synchronous = ${o.sync}`);
        migrate(db, path, o.migrate);
        break;
      } catch (err) {
        if (!isBusy(err) || Date.now() >= deadline) throw err;
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, step);
      }
    }
    // From now on longer waits are asynchronous (tx).
    db.exec(`PRAGMA busy_timeout = ${Math.min(busyMs, SYNC_BUSY_MS)}`);
    st = prepareStatements(db);
  } catch (cause) {
    quietly(() => db?.close());
    if (RetrysafeError.isInstance(cause)) throw cause;
    const folder = dirname(path);
    // SQLite says only "unable to open database file", or "database is locked".
    const why = !existsSync(folder)
      ? `the folder ${folder} does not exist (the ledger creates its file, not its folder)`
      : isBusy(cause)
        ? `${(cause as Error).message}: another connection held its lock longer than busyTimeoutMs (${busyMs} ms): nothing was written; try again once it lets go (a long transaction of another process, an open sqlite3 shell)`
        : (cause as Error).message;
    throw new LedgerError(`cannot open SQLite ledger at ${path}: ${why}`, {
      cause,
      ...(isBusy(cause) ? { reason: 'busy' } : {}),
    });
  }
  const opened = db;
  let open = true;
  const close = () => {
    if (!open) return;
    open = false;
    quietly(() => opened.close());
  };
  // `defers`: a deferrable write commits at NORMAL.
  return { db: opened, st, path, busyMs, defers, isOpen: () => open, close };
}

interface TxOptions {
  /** Commit at NORMAL when the connection defers. */
  readonly deferred?: boolean;
  /** `fn` runs without BEGIN: one write statement (its own transaction), or reads. */
  readonly alone?: boolean;
}

/**
 * `fn` in one transaction holding the write lock from its start, so two processes never both read "free".
 * A held lock is waited for in short asynchronous steps up to busyMs (lease heartbeats keep running);
 * BEGIN, `fn` and COMMIT run in one synchronous stretch. Any failure rolls back.
 */
export async function tx<T>(c: Connection, what: string, fn: () => T, options: TxOptions = {}): Promise<T> {
  const relax = options.deferred === true && c.defers;
  const deadline = Date.now() + c.busyMs;
  for (let step = 1, waited = false; ; step = Math.min(step * 2, SYNC_BUSY_MS), waited = true) {
    const last = waited && Date.now() >= deadline;
    if (!c.isOpen()) throw new LedgerError(`SQLite ledger ${what} failed: the ledger is closed`);
    let locked = false;
    try {
      // The safety level may not change inside a transaction.
      if (relax) c.db.exec('PRAGMA synchronous = NORMAL');
      if (!options.alone) {
        c.db.exec('BEGIN IMMEDIATE');
        locked = true;
      }
      const out = fn();
      if (!options.alone) c.db.exec('COMMIT');
      if (relax) restoreSync(c, what, null);
      return out;
    } catch (err) {
      if (locked && c.isOpen()) quietly(() => c.db.exec('ROLLBACK'));
      if (relax && c.isOpen()) restoreSync(c, what, err);
      // Retrysafe errors pass through, library errors become LedgerError; busy before the lock was taken:
      // nothing written, so it may wait and try again.
      if (RetrysafeError.isInstance(err)) throw err;
      if (locked || !isBusy(err))
        throw new LedgerError(`SQLite ledger ${what} failed: ${(err as Error).message}`, { cause: err });
      if (last)
        throw new LedgerError(
          `SQLite ledger ${what} failed: ${(err as Error).message}: another connection held the write lock longer than busyTimeoutMs (${c.busyMs} ms): nothing was written; try again once it lets go (a long transaction of another process, an open sqlite3 shell)`,
          { cause: err, reason: 'busy' },
        );
    }
    await sleep(Math.max(0, Math.min(step, deadline - Date.now())));
  }
}

/** Back to FULL; a connection that cannot be is closed, as it cannot be trusted to sync. */
function restoreSync(c: Connection, what: string, first: unknown): void {
  try {
    c.db.exec('PRAGMA synchronous = FULL');
  } catch (restore) {
    c.close();
    const how =
      first === null ? 'the write is committed' : `nothing written: ${(first as Error)?.message ?? String(first)}`;
    throw new LedgerError(
      `SQLite ledger ${what} at ${c.path} (${how}); then synchronous = FULL could not be restored (${(restore as Error)?.message ?? String(restore)}): the ledger is closed`,
      { cause: first ?? restore },
    );
  }
}

/** No transaction: a lock (rare in WAL mode) is waited for in short asynchronous steps. */
export const read = <T>(c: Connection, what: string, fn: () => T): Promise<T> => tx(c, what, fn, { alone: true });
