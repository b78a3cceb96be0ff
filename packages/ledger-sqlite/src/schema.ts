import type { DatabaseSync } from 'node:sqlite';
import { LedgerError } from '@retrysafe/contract';

/** The partial index's terms: a query that wants the index repeats them exactly. */
export const OPEN_STATES_SQL = `state <> 'succeeded' AND state <> 'rejected' AND state <> 'abandoned' AND state <> 'not-sent'`;

/** Never edit a released migration: add the next version. */
const MIGRATIONS: ReadonlyArray<{ version: number; name: string; sql: string }> = [
  {
    version: 1,
    name: 'operations',
    sql: `
CREATE TABLE retrysafe_operations (
  id TEXT NOT NULL UNIQUE,
  provider TEXT NOT NULL,
  operation TEXT NOT NULL,
  state TEXT NOT NULL,
  fence INTEGER NOT NULL,
  lease_expires_at INTEGER,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  record TEXT NOT NULL,
  receipts TEXT
);
-- The only index besides the id's: a clean operation then writes three b-trees. Listings of closed rows
-- sort a scan of the table, and retention walks it in rowid pages; pruning keeps it small.
CREATE INDEX retrysafe_operations_open ON retrysafe_operations (state, updated_at) WHERE ${OPEN_STATES_SQL};`,
  },
];

const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]!.version;

const versionOf = (db: DatabaseSync): number =>
  Number((db.prepare('PRAGMA user_version').get() as { user_version?: number } | undefined)?.user_version ?? 0);

/** Under BEGIN IMMEDIATE, re-checked inside, so concurrent openers migrate once; a newer file is refused, and so is
 * any other when `create` is false (nothing written). */
export function migrate(db: DatabaseSync, path: string, create: boolean): void {
  const seen = versionOf(db);
  if (seen > SCHEMA_VERSION)
    throw new LedgerError(
      `cannot open SQLite ledger at ${path}: its schema version ${seen} is not one this @retrysafe/ledger-sqlite knows (up to ${SCHEMA_VERSION}): it was written by another version`,
    );
  if (seen === SCHEMA_VERSION) return;
  if (!create)
    throw new LedgerError(
      `cannot open SQLite ledger at ${path}: it holds no retrysafe ledger of schema version ${SCHEMA_VERSION} (its version is ${seen}); with migrate: false nothing is written to it`,
      { reason: 'not-a-ledger' },
    );
  db.exec('BEGIN IMMEDIATE');
  try {
    for (const m of MIGRATIONS) {
      if (m.version <= versionOf(db)) continue;
      db.exec(m.sql);
      db.exec(`PRAGMA user_version = ${m.version}`);
    }
    db.exec('COMMIT');
  } catch (err) {
    quietly(() => db.exec('ROLLBACK'));
    throw err;
  }
}

/** A close or rollback whose failure leaves nothing to undo. */
export function quietly(f: () => void): void {
  try {
    f();
  } catch {
    /* already unusable, or no transaction left */
  }
}
