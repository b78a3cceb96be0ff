import { LedgerError, RetrysafeError } from '@retrysafe/contract';
import type pg from 'pg';
import { type ConnectionOptions, Connections, transaction } from './connections.js';
import { checkMigrated, type MigrateReport, migrate } from './schema.js';
import type { Sql } from './statements.js';

export type Db = ReturnType<typeof createDb>;
/** Runs one statement on a transaction's connection; `tx` reports its failure. */
export type Run = <R extends pg.QueryResultRow>(sql: Sql, values: unknown[]) => Promise<pg.QueryResult<R>>;

/** Your pool or connections of its own, migrated before the first statement; every failure is a LedgerError. */
export function createDb(
  options: ConnectionOptions & { readonly pool: pg.Pool | null; readonly schema: string; readonly migrate: boolean },
) {
  const own = options.pool === null ? new Connections(options) : null;
  const pool: Pick<Connections, 'query' | 'connect'> = options.pool ?? own!;
  // An idle client that breaks emits 'error' on the pool, which unhandled would end the process; the pool drops it.
  const onPoolError = () => undefined;
  options.pool?.on('error', onPoolError);
  let closed = false;
  let readyPromise: Promise<MigrateReport | null> | null = null;
  const ready = (): Promise<MigrateReport | null> => {
    const check = options.migrate ? migrate : checkMigrated;
    readyPromise ??= check(own ?? options.pool!, options.schema).catch((err: unknown) => {
      readyPromise = null; // a database that was down may be back next time
      throw asLedgerError(err, 'checking the schema');
    });
    return readyPromise;
  };

  const configOf = (sql: Sql, values: unknown[]): pg.QueryConfig => ({ name: sql.name, text: sql.text, values });

  async function query<R extends pg.QueryResultRow>(what: string, sql: Sql, values: unknown[]) {
    if (closed) throw new LedgerError(`ledger is closed (${what})`);
    try {
      await ready();
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
    } catch (err) {
      throw asLedgerError(err, what);
    }
  }

  async function tx<T>(what: string, fn: (run: Run) => Promise<T>): Promise<T> {
    try {
      if (closed) throw new LedgerError(`ledger is closed (${what})`);
      await ready();
      const client = await pool.connect();
      const run: Run = (sql, values) => client.query(configOf(sql, values));
      return await transaction(client, () => fn(run), options.timeoutMs);
    } catch (err) {
      throw asLedgerError(err, what);
    }
  }

  async function close(): Promise<void> {
    if (closed) return;
    closed = true;
    options.pool?.off('error', onPoolError);
    await own?.end();
  }

  return { query, tx, ready, close };
}

function asLedgerError(err: unknown, what: string): RetrysafeError {
  if (RetrysafeError.isInstance(err)) return err;
  const e = err as { message?: string; code?: string };
  return new LedgerError(`${what} failed in PostgreSQL${e?.code ? ` (${e.code})` : ''}: ${e?.message ?? String(err)}`, {
    cause: err,
  });
}
