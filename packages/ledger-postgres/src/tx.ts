import { LedgerError, RetrysafeError } from '@retrysafe/contract';
import pg from 'pg';
import { checkMigrated, type MigrateReport, migrate } from './schema.js';
import type { Sql } from './statements.js';

export type Db = ReturnType<typeof createDb>;
/** Runs one statement on a transaction's connection; `tx` reports its failure. */
export type Run = <R extends pg.QueryResultRow>(sql: Sql, values: unknown[]) => Promise<pg.QueryResult<R>>;

interface DbOptions {
  readonly connectionString?: string | undefined;
  readonly pool: pg.Pool | null;
  readonly schema: string;
  readonly migrate: boolean;
  readonly max: number;
  readonly timeoutMs: number;
  readonly idleMs: number;
}

const ignore = () => undefined;

/** pg's message for a statement its `query_timeout` gave up on: the statement is still running on that connection. */
const TIMED_OUT = 'Query read timeout';

/** Your pool or one of its own, migrated before the first statement; every failure is a LedgerError. */
export function createDb(options: DbOptions) {
  // pg ends a connection whose statement timed out when it is released with the error, so it is never reused.
  const pool =
    options.pool ??
    new pg.Pool({
      connectionString: options.connectionString,
      max: options.max,
      query_timeout: options.timeoutMs,
      connectionTimeoutMillis: options.timeoutMs,
      idleTimeoutMillis: options.idleMs,
    });
  const own = options.pool ? null : options;
  // An idle client that breaks emits 'error' on the pool, which unhandled would end the process; the pool drops it.
  pool.on('error', ignore);
  let closed = false;
  /** Calls under way: close() ends the ledger's own pool once they are done. */
  let running = 0;
  let drained: (() => void) | undefined;
  let readyPromise: Promise<MigrateReport | null> | null = null;
  const ready = (): Promise<MigrateReport | null> => {
    const check = options.migrate ? migrate : checkMigrated;
    readyPromise ??= check(pool, options.schema).catch((err: unknown) => {
      readyPromise = null; // a database that was down may be back next time
      throw asLedgerError(err, 'checking the schema', own);
    });
    return readyPromise;
  };

  /** `work` once the schema is checked, counted as under way; any failure as LedgerError. */
  async function using<T>(what: string, work: () => Promise<T>): Promise<T> {
    if (closed) throw new LedgerError(`ledger is closed (${what})`);
    running++;
    try {
      await ready();
      return await work();
    } catch (err) {
      throw asLedgerError(err, what, own);
    } finally {
      if (--running === 0) drained?.();
    }
  }

  const configOf = (sql: Sql, values: unknown[]): pg.QueryConfig => ({ name: sql.name, text: sql.text, values });

  const query = <R extends pg.QueryResultRow>(what: string, sql: Sql, values: unknown[]) =>
    using(what, async () => {
      const config = configOf(sql, values);
      for (let stale = 0; ; stale++) {
        try {
          return await pool.query<R>(config);
        } catch (err) {
          // 0A000: prepared before a column it returns changed type, refused before it ran; the failure
          // closed that connection, so on another it is prepared anew.
          if ((err as { code?: unknown }).code !== '0A000' || stale >= options.max) throw err;
        }
      }
    });

  const tx = <T>(what: string, fn: (run: Run) => Promise<T>): Promise<T> =>
    using(what, async () => {
      const client = await pool.connect();
      const run: Run = (sql, values) => client.query(configOf(sql, values));
      return transaction(client, () => fn(run), options.timeoutMs);
    });

  async function close(): Promise<void> {
    if (closed) return;
    closed = true;
    if (options.pool) {
      pool.off('error', ignore);
      return;
    }
    if (running > 0) await new Promise<void>((resolve) => (drained = resolve));
    await pool.end();
  }

  return { query, tx, ready, close };
}

/** A connection held for a transaction: a pg.PoolClient, or a client of yours with `query` alone. */
type Session = {
  query(config: pg.QueryConfig): Promise<unknown>;
  release?(err?: Error): void;
  on?(event: 'error', listener: () => void): unknown;
  off?(event: 'error', listener: () => void): unknown;
};

/**
 * `fn` inside BEGIN … COMMIT on `client`; any failure rolls back, and a connection whose rollback failed is closed.
 * `holdMs` (> 0): the server ends the session once it has waited that long for the next statement of the transaction (a
 * paused worker, a network gone quiet), so the row lock it took does not keep every other worker from the row.
 */
export async function transaction<T>(client: Session, fn: () => Promise<T>, holdMs = 0): Promise<T> {
  let broken: Error | undefined;
  // The pool listens for a connection breaking only while it is idle: held here, its statement fails instead.
  client.on?.('error', ignore);
  try {
    const hold = Math.min(Math.ceil(holdMs), 2 ** 31 - 1); // the setting's range, in ms
    await client.query({ text: hold > 0 ? `BEGIN; SET LOCAL idle_in_transaction_session_timeout = ${hold}` : 'BEGIN' });
    const out = await fn();
    await client.query({ text: 'COMMIT' });
    return out;
  } catch (err) {
    // A statement that timed out still runs and a ROLLBACK would wait behind it: a pooled connection is closed instead.
    if (client.release && (err as Error)?.message === TIMED_OUT) broken = err as Error;
    else
      await client.query({ text: 'ROLLBACK' }).catch((e: Error) => {
        broken = e;
      });
    throw err;
  } finally {
    client.off?.('error', ignore);
    client.release?.(broken);
  }
}

/** `own`: the options of the ledger's own pool, whose limits pg names in its words, said here in the user's. */
function asLedgerError(err: unknown, what: string, own: DbOptions | null): RetrysafeError {
  if (RetrysafeError.isInstance(err)) return err;
  const e = err as { message?: string; code?: string };
  let message = e?.message ?? String(err);
  if (own && message === TIMED_OUT)
    message = `no answer within ${own.timeoutMs} ms: the connection is closed (the statement may still have committed)`;
  if (own && message === 'timeout exceeded when trying to connect')
    message = `no free connection within ${own.timeoutMs} ms (all ${own.max} busy); the statement was not sent`;
  return new LedgerError(`${what} failed in PostgreSQL${e?.code ? ` (${e.code})` : ''}: ${message}`, { cause: err });
}
