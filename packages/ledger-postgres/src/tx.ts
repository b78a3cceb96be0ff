import { createHash } from 'node:crypto';
import { LedgerError, RetrysafeError } from '@retrysafe/contract';
import type pg from 'pg';
import { type ConnectionOptions, Connections } from './connections.js';
import { type MigrateReport, migrate } from './schema.js';
import type { Sql } from './statements.js';

/** Runs one statement; inside `tx` it runs on the transaction's connection. */
export type Run = <R extends pg.QueryResultRow>(
  what: string,
  sql: Sql,
  values: unknown[],
) => Promise<pg.QueryResult<R>>;

export interface DbOptions extends ConnectionOptions {
  readonly pool: pg.Pool | null;
  readonly schema: string;
  readonly migrate: boolean;
}

/** What the ledger uses of a pool: yours, or its own Connections. */
type Pool = Pick<Connections, 'query' | 'connect'>;

export type Db = ReturnType<typeof createDb>;

/**
 * Your pool, or connections of its own; every failure is a LedgerError; migrated before the first statement.
 * `tx` runs `fn` inside BEGIN … COMMIT on one connection; any failure rolls back.
 */
export function createDb(options: DbOptions) {
  const own = options.pool === null ? new Connections(options) : null;
  const pool: Pool = options.pool ?? own!;
  // An idle client that breaks emits 'error' on the pool, which unhandled would end the process; the pool drops it.
  const onPoolError = () => undefined;
  options.pool?.on('error', onPoolError);
  let closed = false;
  let readyPromise: Promise<MigrateReport | null> | null = options.migrate ? null : Promise.resolve(null);
  const ready = (): Promise<MigrateReport | null> => {
    // On a connection of the pool, with the ledger's time limits.
    readyPromise ??= migrate(own ?? options.pool!, options.schema).catch((err: unknown) => {
      readyPromise = null; // a database that was down may be back next time
      throw err;
    });
    return readyPromise;
  };

  // Statement names are per connection; the schema is part of the text, so it is part of the name.
  const names = new Map<string, string>();
  const configOf = (sql: Sql, values: unknown[]): pg.QueryConfig => {
    if (sql.name === null) return { text: sql.text, values };
    const name = names.get(sql.name) ?? statementName(options.schema, sql.name);
    names.set(sql.name, name);
    return { name, text: sql.text, values };
  };

  async function query<R extends pg.QueryResultRow>(
    what: string,
    sql: Sql,
    values: unknown[],
  ): Promise<pg.QueryResult<R>> {
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
    if (closed) throw new LedgerError(`ledger is closed (${what})`);
    let client: Awaited<ReturnType<Pool['connect']>>;
    try {
      await ready();
      client = await pool.connect();
    } catch (err) {
      throw asLedgerError(err, what);
    }
    const run: Run = async (w, sql, values) => {
      try {
        return await client.query(configOf(sql, values));
      } catch (err) {
        throw asLedgerError(err, w);
      }
    };
    let broken: Error | undefined;
    try {
      await client.query({ text: 'BEGIN' });
      const out = await fn(run);
      await client.query({ text: 'COMMIT' });
      return out;
    } catch (err) {
      await client.query({ text: 'ROLLBACK' }).catch((e: Error) => {
        broken = e;
      });
      throw asLedgerError(err, what);
    } finally {
      client.release(broken);
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

/**
 * `rs:<schema>:<name>`, or `rs:<name>#<schema hash>` past the 63 bytes PostgreSQL keeps of a name (cut
 * names alike would be one statement). Schema names hold no `#`, so the two forms never meet.
 */
function statementName(schema: string, name: string): string {
  const full = `rs:${schema}:${name}`;
  if (full.length <= 63) return full;
  const short = `rs:${name}#${createHash('sha256').update(schema).digest('hex').slice(0, 12)}`;
  if (short.length > 63) throw new LedgerError(`statement name ${name} is too long for PostgreSQL`);
  return short;
}

function asLedgerError(err: unknown, what: string): RetrysafeError {
  if (RetrysafeError.isInstance(err)) return err;
  const e = err as { message?: string; code?: string };
  return new LedgerError(`${what} failed in PostgreSQL${e?.code ? ` (${e.code})` : ''}: ${e?.message ?? String(err)}`, {
    cause: err,
  });
}
