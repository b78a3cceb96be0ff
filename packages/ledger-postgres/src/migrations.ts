import { LedgerError } from '@retrysafe/contract';
import type pg from 'pg';

/**
 * Schema migrations shipped with the package. Each runs once per schema, in order, inside one
 * transaction that holds an advisory lock, and is recorded in `retrysafe_schema_migrations`; running
 * `migrate` again (from any number of workers at once) is a no-op. Never edit a released migration:
 * add the next version.
 */
export interface Migration {
  readonly version: number;
  readonly name: string;
  /** SQL with `{{schema}}` standing for the quoted schema name. */
  readonly sql: string;
}

const RECOVERABLE = `('claimed', 'dispatched', 'unknown', 'in-progress', 'reconciling')`;

export const MIGRATIONS: readonly Migration[] = Object.freeze([
  {
    version: 1,
    name: 'operations and receipts',
    sql: `
CREATE TABLE {{schema}}.retrysafe_operations (
  business_operation_id text PRIMARY KEY,
  provider text NOT NULL,
  operation text NOT NULL,
  intent_fingerprint text NOT NULL,
  params_fingerprint text NOT NULL,
  params json,
  provider_key text,
  state text NOT NULL CHECK (state IN ('claimed', 'dispatched', 'unknown', 'in-progress', 'reconciling',
                                        'succeeded', 'rejected', 'handed-off', 'abandoned')),
  fence bigint NOT NULL CHECK (fence >= 1),
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
  CHECK ((lease_owner IS NULL) = (lease_expires_at IS NULL))
);
CREATE TABLE {{schema}}.retrysafe_receipts (
  business_operation_id text NOT NULL REFERENCES {{schema}}.retrysafe_operations (business_operation_id),
  seq integer NOT NULL,
  receipt json NOT NULL,
  PRIMARY KEY (business_operation_id, seq)
);`,
  },
  {
    version: 2,
    name: 'indexes for recovery and listing',
    sql: `
-- recoverCandidates(now): non-terminal operations (few: in flight or stuck) in updated_at order;
-- the partial index holds only those rows, so it stays small however long the history grows.
CREATE INDEX retrysafe_operations_recover_idx ON {{schema}}.retrysafe_operations
  (updated_at, business_operation_id) WHERE state IN ${RECOVERABLE};
-- list({ states }) from the runner and the CLI (handed-off queue, stuck operations).
CREATE INDEX retrysafe_operations_state_idx ON {{schema}}.retrysafe_operations (state, created_at);
-- list({ provider, operation }) from the CLI.
CREATE INDEX retrysafe_operations_operation_idx ON {{schema}}.retrysafe_operations (provider, operation, created_at);`,
  },
  {
    version: 3,
    name: 'receipt chain anchor',
    sql: `
-- The head hash and length of each operation's receipt chain, moved in the same statement as every
-- receipt write, so a deleted or re-sealed tail is seen. Existing rows are anchored to what they hold now.
ALTER TABLE {{schema}}.retrysafe_operations ADD COLUMN receipt_head text, ADD COLUMN receipt_count integer NOT NULL DEFAULT 0;
UPDATE {{schema}}.retrysafe_operations o SET
  receipt_count = (SELECT count(*) FROM {{schema}}.retrysafe_receipts r WHERE r.business_operation_id = o.business_operation_id),
  receipt_head = (SELECT r.receipt->>'hash' FROM {{schema}}.retrysafe_receipts r WHERE r.business_operation_id = o.business_operation_id ORDER BY r.seq DESC LIMIT 1);`,
  },
  {
    version: 4,
    name: 'index layout for long histories',
    sql: `
-- Listings (newest first, with a limit) and retention walk created_at: one index in that order.
CREATE INDEX retrysafe_operations_created_idx ON {{schema}}.retrysafe_operations (created_at, business_operation_id);
-- list({ states }) of operations that are not closed (the handoff queue, stuck operations): a partial
-- index of those rows only, small however long the history grows. Listing closed states walks
-- created_at. The full (state, created_at) and (provider, operation, created_at) indexes cost two
-- index entries per row version on every write and grow with the history: dropped.
CREATE INDEX retrysafe_operations_open_idx ON {{schema}}.retrysafe_operations (state, created_at)
  WHERE state NOT IN ('succeeded', 'rejected', 'abandoned');
DROP INDEX {{schema}}.retrysafe_operations_state_idx;
DROP INDEX {{schema}}.retrysafe_operations_operation_idx;`,
  },
  {
    version: 5,
    name: 'receipts in the operation row',
    sql: `
-- Each operation's receipts move into its own row: one JSON array, as text (the ledger writes it and
-- parses it; the server neither validates nor reparses it on every append), each receipt exactly the
-- text that was stored. A receipt is then one UPDATE of the row it belongs to: no second heap tuple, no
-- receipts primary-key entry, no foreign-key check locking the operation row. The chain anchor
-- (receipt_head, receipt_count) is NOT recomputed: a chain that was cut before this migration stays
-- reported as cut.
ALTER TABLE {{schema}}.retrysafe_operations ADD COLUMN receipts text;
UPDATE {{schema}}.retrysafe_operations o SET receipts = r.receipts
  FROM (SELECT business_operation_id, '[' || string_agg(receipt::text, ',' ORDER BY seq) || ']' AS receipts
        FROM {{schema}}.retrysafe_receipts GROUP BY business_operation_id) r
  WHERE r.business_operation_id = o.business_operation_id;
DROP TABLE {{schema}}.retrysafe_receipts;
-- recoverCandidates is served by the partial index of open rows (recoverable states are open states),
-- so the (updated_at, id) index of recoverable rows goes: it cost one entry on every claim and made
-- every lease renewal (which moves updated_at) a non-HOT update with an entry in every index.
DROP INDEX {{schema}}.retrysafe_operations_recover_idx;
-- Listings and retention walk created_at; the id only breaks ties (rows of the same millisecond), which
-- an incremental sort does after the index. An entry of created_at alone is a quarter of one that
-- carries the id too, and a clean operation writes two (its claim, its completion).
DROP INDEX {{schema}}.retrysafe_operations_created_idx;
CREATE INDEX retrysafe_operations_created_idx ON {{schema}}.retrysafe_operations (created_at);
-- The fill factor stays 100: at 60 a clean op's completion always stayed on its page, but that saved
-- 3% of the WAL and cost 66% more table (measured, scripts/per-op.mjs --fillfactor).`,
  },
  {
    version: 6,
    name: 'state and fence checks in domains',
    sql: `
-- PostgreSQL (15) reads, plans and compiles every CHECK constraint of a table again for each INSERT and
-- UPDATE it executes (ExecConstraints: stringToNode of the stored expression); the state check (nine
-- values) was most of the server's work beyond the row itself on a clean operation's two statements. A
-- domain's check is kept in the type cache and compiled into the statement's plan, so the same rules
-- cost a fraction. The columns' values and their order of checks stay the same: a state no rule knows
-- or a fence below 1 is refused with the same SQLSTATE (23514, check_violation), whoever writes it. The
-- lease check compares two columns, which a domain cannot: it stays on the table.
-- The domains are made without their checks, the columns change type (text and bigint underneath: no
-- rewrite of the table or of the indexes on other columns; the partial index of open rows, whose
-- predicate reads state, is rebuilt), then the checks are added, which validates every row once.
CREATE DOMAIN {{schema}}.retrysafe_state AS text;
CREATE DOMAIN {{schema}}.retrysafe_fence AS bigint;
ALTER TABLE {{schema}}.retrysafe_operations
  DROP CONSTRAINT retrysafe_operations_state_check,
  DROP CONSTRAINT retrysafe_operations_fence_check,
  ALTER COLUMN state TYPE {{schema}}.retrysafe_state,
  ALTER COLUMN fence TYPE {{schema}}.retrysafe_fence;
ALTER DOMAIN {{schema}}.retrysafe_state ADD CONSTRAINT retrysafe_state_check
  CHECK (VALUE IN ('claimed', 'dispatched', 'unknown', 'in-progress', 'reconciling', 'succeeded', 'rejected', 'handed-off', 'abandoned'));
ALTER DOMAIN {{schema}}.retrysafe_fence ADD CONSTRAINT retrysafe_fence_check CHECK (VALUE >= 1);`,
  },
]);

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** Validates a schema name (lowercase identifier, ≤63 chars) and returns it quoted for SQL. */
export function quoteSchema(schema: string): string {
  if (typeof schema !== 'string' || !SCHEMA_NAME.test(schema)) {
    throw new LedgerError(`invalid PostgreSQL schema name ${JSON.stringify(String(schema))}: expected a lowercase identifier of 1–63 chars (a-z 0-9 _, not starting with a digit)`);
  }
  return `"${schema}"`;
}

export interface MigrateReport {
  readonly schema: string;
  /** Versions applied by this call (empty when the schema was already current). */
  readonly applied: readonly number[];
  readonly current: number;
}

/**
 * Brings `schema` up to the newest migration. Safe to run concurrently from many workers (advisory
 * lock) and repeatedly (recorded versions are skipped). Refuses a schema written by a newer version
 * of this package.
 */
export async function migrate(pool: pg.Pool | pg.Client, schema = 'public', migrations: readonly Migration[] = MIGRATIONS): Promise<MigrateReport> {
  const quoted = quoteSchema(schema);
  const isPool = typeof (pool as pg.Pool).connect === 'function' && 'totalCount' in pool;
  const client = isPool ? await (pool as pg.Pool).connect() : (pool as pg.Client);
  const applied: number[] = [];
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    try {
      await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`retrysafe.migrate:${schema}`]);
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoted}`);
      await client.query(`CREATE TABLE IF NOT EXISTS ${quoted}.retrysafe_schema_migrations (
        version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
      const { rows } = await client.query<{ version: number }>(`SELECT version FROM ${quoted}.retrysafe_schema_migrations ORDER BY version`);
      const done = new Set(rows.map((r) => r.version));
      const newest = migrations.reduce((m, x) => Math.max(m, x.version), 0);
      const beyond = rows.filter((r) => r.version > newest);
      if (beyond.length > 0) {
        throw new LedgerError(`schema ${schema} has migration ${beyond[beyond.length - 1]!.version}, newer than this @retrysafe/ledger-postgres knows (${newest}): upgrade the package`);
      }
      for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
        if (done.has(m.version)) continue;
        await client.query(m.sql.replaceAll('{{schema}}', quoted));
        await client.query(`INSERT INTO ${quoted}.retrysafe_schema_migrations (version, name) VALUES ($1, $2)`, [m.version, m.name]);
        applied.push(m.version);
      }
      await client.query('COMMIT');
      return { schema, applied, current: newest };
    } catch (err) {
      await client.query('ROLLBACK').catch((e: Error) => {
        broken = e;
      });
      throw err;
    }
  } catch (err) {
    if (LedgerError.isInstance(err)) throw err;
    throw new LedgerError(`migrating schema ${schema} failed: ${(err as Error).message}`, { cause: err });
  } finally {
    if (isPool) (client as pg.PoolClient).release(broken);
  }
}
