import type { DatabaseSync } from 'node:sqlite';
import { setTimeout as sleep } from 'node:timers/promises';
import { LedgerError, RetrysafeError } from '@retrysafe/contract';
import { migrate } from './schema.js';

/** The longest a single SQLite call may block the event loop on a lock before giving the loop a turn. */
const SYNC_BUSY_MS = 20;

/** SQLITE_BUSY: another connection holds the lock (nothing was written). */
export function isBusy(err: unknown): boolean {
  const code = (err as { errcode?: unknown } | null)?.errcode;
  return typeof code === 'number' && (code & 0xff) === 5;
}

/**
 * node:sqlite, loaded when a ledger is opened (a process that opens none loads no SQLite). Node 22
 * announces the module with an ExperimentalWarning on stderr; the embedded ledger is the default, so
 * that line would follow every command of a user who never chose an experimental feature. Only that
 * warning, and only while loading, is left out.
 */
function loadSqlite(): typeof import('node:sqlite') {
  const emit = process.emitWarning;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    if (
      String(typeof warning === 'string' ? warning : warning?.message).startsWith('SQLite is an experimental feature')
    )
      return;
    (emit as (...args: unknown[]) => void).call(process, warning, ...rest);
  }) as typeof process.emitWarning;
  try {
    return process.getBuiltinModule('node:sqlite') as typeof import('node:sqlite');
  } finally {
    process.emitWarning = emit;
  }
}

export interface Connection {
  readonly db: DatabaseSync;
  readonly path: string;
  /** How long a write waits for another connection's lock, in ms. */
  readonly busyMs: number;
  /** Whether a deferrable write commits at NORMAL (the file runs at FULL and the caller allows it). */
  readonly defers: boolean;
  readonly isOpen: () => boolean;
  readonly close: () => void;
}

/**
 * Opens the file in WAL mode and brings its schema up to date. Opening is synchronous (the factory
 * returns the ledger), so waits for a process that is creating or migrating the file are synchronous
 * too; SQLite answers some of those conflicts with SQLITE_BUSY without its busy handler, hence the loop.
 */
export function openConnection(
  path: string,
  busyMs: number,
  synchronous: 'FULL' | 'NORMAL',
  defers: boolean,
): Connection {
  let db: DatabaseSync | undefined;
  try {
    const { DatabaseSync } = loadSqlite();
    db = new DatabaseSync(path);
    db.exec(`PRAGMA busy_timeout = ${busyMs}`);
    const deadline = Date.now() + busyMs;
    for (let step = 1; ; step = Math.min(step * 2, SYNC_BUSY_MS)) {
      try {
        db.exec('PRAGMA journal_mode = WAL');
        db.exec(`PRAGMA synchronous = ${synchronous}`);
        migrate(db, path);
        break;
      } catch (err) {
        if (!isBusy(err) || Date.now() >= deadline) throw err;
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, step);
      }
    }
    // From now on one call blocks the event loop briefly at most; longer waits are asynchronous (tx).
    db.exec(`PRAGMA busy_timeout = ${Math.min(busyMs, SYNC_BUSY_MS)}`);
  } catch (cause) {
    // A failed open must not leave its file descriptor behind.
    closeQuietly(db);
    if (RetrysafeError.isInstance(cause)) throw cause;
    throw new LedgerError(`cannot open SQLite ledger at ${path}: ${(cause as Error).message}`, { cause });
  }
  const opened = db;
  let open = true;
  const close = () => {
    if (!open) return;
    open = false;
    closeQuietly(opened);
  };
  return { db: opened, path, busyMs, defers, isOpen: () => open, close };
}

function closeQuietly(db: DatabaseSync | undefined): void {
  try {
    db?.close();
  } catch {
    /* already unusable */
  }
}

/** What one attempt answers when another connection held the write lock: nothing written. */
const BUSY: unique symbol = Symbol('busy');

export interface TxOptions {
  /** Commit at NORMAL (not waiting for the disk) when the connection defers: see deferrableWrites. */
  readonly deferred?: boolean;
  /** `fn` runs exactly one write statement, which is its own transaction (no BEGIN and COMMIT to run). */
  readonly alone?: boolean;
}

/**
 * Runs `fn` in one transaction that holds the write lock from its start (BEGIN IMMEDIATE, or a lone
 * statement), so two processes never both read "free" and both claim. While another connection holds
 * the lock, waits in short asynchronous steps up to busyMs, never in one long synchronous wait that
 * would stall the event loop (other operations' lease heartbeats). BEGIN, `fn` and COMMIT run in one
 * synchronous stretch: nothing else on this connection runs inside the transaction. Library errors
 * become LedgerError, retrysafe errors pass through; any failure rolls back.
 */
export async function tx<T>(c: Connection, what: string, fn: () => T, options: TxOptions = {}): Promise<T> {
  const deadline = Date.now() + c.busyMs;
  const relax = options.deferred === true && c.defers;
  for (let step = 1, waited = false; ; step = Math.min(step * 2, SYNC_BUSY_MS), waited = true) {
    const out = attempt(c, what, fn, relax, options.alone === true, waited && Date.now() >= deadline);
    if (out !== BUSY) return out;
    await sleep(Math.max(0, Math.min(step, deadline - Date.now())));
  }
}

function attempt<T>(
  c: Connection,
  what: string,
  fn: () => T,
  relax: boolean,
  alone: boolean,
  last: boolean,
): T | typeof BUSY {
  if (!c.isOpen()) throw new LedgerError(`SQLite ledger ${what} failed: the ledger is closed`);
  let locked = false;
  try {
    // The safety level may not change inside a transaction: set before it, restored after it.
    if (relax) c.db.exec('PRAGMA synchronous = NORMAL');
    if (!alone) {
      c.db.exec('BEGIN IMMEDIATE');
      locked = true;
    }
    const out = fn();
    if (!alone) c.db.exec('COMMIT');
    if (relax) restoreSync(c, what, null);
    return out;
  } catch (err) {
    if (locked && c.isOpen()) rollback(c.db);
    if (relax && c.isOpen()) restoreSync(c, what, err);
    if (RetrysafeError.isInstance(err)) throw err;
    // Busy before the lock was taken (BEGIN, or the lone statement): nothing written, wait and try again.
    if (locked || !isBusy(err) || last)
      throw new LedgerError(`SQLite ledger ${what} failed: ${(err as Error).message}`, { cause: err });
    return BUSY;
  }
}

function rollback(db: DatabaseSync): void {
  try {
    db.exec('ROLLBACK');
  } catch {
    /* no transaction left to roll back */
  }
}

/**
 * Back to FULL after a deferred write. If even that fails the connection cannot be trusted to sync:
 * it is closed, and the error says what ended the transaction first.
 */
function restoreSync(c: Connection, what: string, first: unknown): void {
  try {
    c.db.exec('PRAGMA synchronous = FULL');
  } catch (restore) {
    c.close();
    const how =
      first === null ? 'the write is committed' : `nothing written: ${(first as Error)?.message ?? String(first)}`;
    throw new LedgerError(
      `SQLite ledger ${what} at ${c.path} (${how}); then synchronous = FULL could not be restored (${(restore as Error)?.message ?? String(restore)}): the ledger is closed`,
      {
        cause: first ?? restore,
      },
    );
  }
}

/** Runs a read; a lock (rare in WAL mode) is waited for in short asynchronous steps; library errors become LedgerError. */
export async function read<T>(c: Connection, what: string, fn: () => T): Promise<T> {
  const deadline = Date.now() + c.busyMs;
  for (let step = 1, waited = false; ; step = Math.min(step * 2, SYNC_BUSY_MS), waited = true) {
    try {
      if (!c.isOpen()) throw new LedgerError(`SQLite ledger ${what} failed: the ledger is closed`);
      return fn();
    } catch (err) {
      if (RetrysafeError.isInstance(err)) throw err;
      if (!isBusy(err) || (waited && Date.now() >= deadline))
        throw new LedgerError(`SQLite ledger ${what} failed: ${(err as Error).message}`, { cause: err });
    }
    await sleep(Math.max(0, Math.min(step, deadline - Date.now())));
  }
}
