import { LedgerError } from '@retrysafe/contract';
import type pg from 'pg';
import { Connections, transaction } from './connections.js';

/** Each runs once per schema, in order, recorded in `retrysafe_schema_migrations`; `{{schema}}` is the quoted
 * schema. Never edit a released migration: add the next version. */
const MIGRATIONS: ReadonlyArray<{ version: number; name: string; sql: string }> = [
  {
    version: 1,
    name: 'operations',
    sql: `
-- The state and fence rules are domains: PostgreSQL caches a domain's check with the statement's plan,
-- while a table's CHECK is re-read for every row written.
CREATE DOMAIN {{schema}}.retrysafe_state AS text CONSTRAINT retrysafe_state_check
  CHECK (VALUE IN ('claimed', 'dispatched', 'unknown', 'in-progress', 'reconciling', 'succeeded', 'rejected', 'handed-off', 'abandoned', 'not-sent'));
CREATE DOMAIN {{schema}}.retrysafe_fence AS bigint CONSTRAINT retrysafe_fence_check CHECK (VALUE >= 1);
-- One row per operation: the searchable fields as columns, the record's values and its receipts as JSON.
-- The receipts are one JSON array kept as text, appended in the same UPDATE as the state it records;
-- receipt_head and receipt_count anchor the chain, so a deleted or re-sealed tail is seen.
CREATE TABLE {{schema}}.retrysafe_operations (
  business_operation_id text PRIMARY KEY,
  provider text NOT NULL,
  account text,
  operation text NOT NULL,
  intent_from text,
  intent_fingerprint text NOT NULL,
  params_fingerprint text NOT NULL,
  params json,
  provider_key text,
  state {{schema}}.retrysafe_state NOT NULL,
  fence {{schema}}.retrysafe_fence NOT NULL,
  lease_owner text,
  lease_expires_at bigint,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL,
  first_dispatched_at bigint,
  attempt_count integer NOT NULL DEFAULT 0,
  last_outcome text,
  result json,
  provider_ref text,
  status_ref text,
  handoff json,
  resolution json,
  receipt_head text,
  receipt_count integer NOT NULL DEFAULT 0,
  receipts text,
  CHECK ((lease_owner IS NULL) = (lease_expires_at IS NULL))
);
-- Listings (newest first) and retention walk created_at; the id only breaks ties.
CREATE INDEX retrysafe_operations_created_idx ON {{schema}}.retrysafe_operations (created_at);
-- Open operations only (the handoff queue, recovery, stuck operations): small however long the history grows.
CREATE INDEX retrysafe_operations_open_idx ON {{schema}}.retrysafe_operations (state, created_at)
  WHERE state NOT IN ('succeeded', 'rejected', 'abandoned', 'not-sent');`,
  },
];

const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]!.version;
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** A lowercase identifier of at most 63 characters, quoted for SQL. */
export function quoteSchema(schema: string): string {
  if (typeof schema !== 'string' || !SCHEMA_NAME.test(schema))
    throw new LedgerError(
      `invalid PostgreSQL schema name ${JSON.stringify(String(schema))}: expected a lowercase identifier of 1–63 chars (a-z 0-9 _, not starting with a digit)`,
    );
  return `"${schema}"`;
}

export interface MigrateReport {
  readonly schema: string;
  /** Versions applied by this call (empty when the schema was already current). */
  readonly applied: readonly number[];
  readonly current: number;
}

/**
 * Brings `schema` up to date under an advisory lock, so many workers may run it at once; refuses a newer one.
 * A client you pass stays yours; on a pool (yours or the ledger's own), a connection that failed is closed.
 */
export async function migrate(pool: pg.Pool | pg.Client | Connections, schema = 'public'): Promise<MigrateReport> {
  const quoted = quoteSchema(schema);
  const pooled = 'totalCount' in pool || pool instanceof Connections;
  const client: Pick<Connections, 'query'> & {
    release?(err?: Error): void;
    on?: pg.Client['on'];
    off?: pg.Client['off'];
  } = pooled ? await pool.connect() : pool;
  let failed: Error | undefined;
  try {
    // The session without `release`: the transaction must not hand back a client it did not take.
    const session = {
      query: (q: pg.QueryConfig) => client.query(q),
      on: (e: 'error', f: () => void) => client.on?.(e, f),
      off: (e: 'error', f: () => void) => client.off?.(e, f),
    };
    return await transaction(session, () => applyMigrations(client, schema, quoted));
  } catch (err) {
    failed = err as Error;
    if (LedgerError.isInstance(err)) throw err;
    throw new LedgerError(`migrating schema ${schema} failed: ${(err as Error).message}`, { cause: err });
  } finally {
    if (pooled) client.release!(failed);
  }
}

/** With `migrate: false`: the schema must already be at this package's version (a mistyped one is not created). */
export async function checkMigrated(pool: Pick<Connections, 'query'>, schema: string): Promise<null> {
  const seen = await pool
    .query<{ v: number | null }>({
      text: `SELECT max(version) AS v FROM ${quoteSchema(schema)}.retrysafe_schema_migrations`,
    })
    .then(
      (r) => r.rows[0]?.v ?? 0,
      (err: { code?: unknown }) => {
        if (err?.code === '42P01') return 0; // undefined table (or schema)
        throw err;
      },
    );
  if (seen === 0)
    throw new LedgerError(
      `schema ${schema} holds no retrysafe ledger (no migration recorded); with migrate: false nothing is created`,
      { reason: 'not-a-ledger' },
    );
  if (seen === SCHEMA_VERSION) return null;
  throw new LedgerError(
    `schema ${schema} is at migration ${seen}, this @retrysafe/ledger-postgres needs ${SCHEMA_VERSION}: ${seen > SCHEMA_VERSION ? 'upgrade the package' : 'run migrate()'}`,
  );
}

async function applyMigrations(client: Pick<Connections, 'query'>, schema: string, quoted: string) {
  const run = <R extends pg.QueryResultRow>(text: string, values?: unknown[]) => client.query<R>({ text, values });
  await run('SELECT pg_advisory_xact_lock(hashtext($1))', [`retrysafe.migrate:${schema}`]);
  await run(`CREATE SCHEMA IF NOT EXISTS ${quoted}`);
  await run(`CREATE TABLE IF NOT EXISTS ${quoted}.retrysafe_schema_migrations (
    version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
  const { rows } = await run<{ version: number }>(
    `SELECT version FROM ${quoted}.retrysafe_schema_migrations ORDER BY version`,
  );
  const done = new Set(rows.map((r) => r.version));
  const seen = rows[rows.length - 1]?.version ?? 0;
  if (seen > SCHEMA_VERSION)
    throw new LedgerError(
      `schema ${schema} has migration ${seen}, newer than this @retrysafe/ledger-postgres knows (${SCHEMA_VERSION}): upgrade the package`,
    );
  const applied: number[] = [];
  for (const m of MIGRATIONS) {
    if (done.has(m.version)) continue;
    await run(m.sql.replaceAll('{{schema}}', quoted));
    await run(`INSERT INTO ${quoted}.retrysafe_schema_migrations (version, name) VALUES ($1, $2)`, [m.version, m.name]);
    applied.push(m.version);
  }
  return { schema, applied, current: SCHEMA_VERSION };
}
