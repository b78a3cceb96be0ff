import type { DatabaseSync } from 'node:sqlite';
import type { ListFilter } from '@retrysafe/contract';
import { PRUNABLE_STATES, RECOVERABLE_STATES } from '@retrysafe/contract/ledger';
import { OPEN_STATES_SQL } from './schema.js';

const COLUMNS = 'state = ?, fence = ?, lease_expires_at = ?, updated_at = ?, record = ?, receipts = ?';

export function prepareStatements(db: DatabaseSync) {
  return {
    select: db.prepare('SELECT record, receipts FROM retrysafe_operations WHERE id = ?'),
    /** The row a fenced write starts from, with its last receipt's seq. */
    selectForWrite: db.prepare(
      `SELECT record, receipts, json_extract(receipts, '$[#-1].seq') AS last_seq FROM retrysafe_operations WHERE id = ?`,
    ),
    /** A new operation; does nothing when the id has a row (the claim then reads it). */
    insert: db.prepare(
      `INSERT INTO retrysafe_operations (state, fence, lease_expires_at, updated_at, record, receipts, id, provider, operation, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
    ),
    update: db.prepare(`UPDATE retrysafe_operations SET ${COLUMNS} WHERE id = ?`),
    /** The write on a row this connection stored: only while the row still holds what it stored. */
    updateKnown: db.prepare(`UPDATE retrysafe_operations SET ${COLUMNS} WHERE id = ? AND record = ? AND receipts IS ?`),
  };
}

const marks = (n: number) => Array.from({ length: n }, () => '?').join(', ');

/** The listing of `filter`: its arguments in order, all but the last `?` (the limit, -1 for none); null when nothing can match. */
export function listSql(filter: ListFilter): { sql: string; args: Array<string | number> } | null {
  const where: string[] = [];
  const args: Array<string | number> = [];
  if (filter.states) {
    if (filter.states.length === 0) return null;
    if (filter.states.every((s) => !PRUNABLE_STATES.includes(s))) where.push(OPEN_STATES_SQL);
    where.push(`state IN (${marks(filter.states.length)})`);
    args.push(...filter.states);
  }
  for (const column of ['provider', 'operation'] as const) {
    const value = filter[column];
    if (!value) continue;
    where.push(`${column} = ?`);
    args.push(value);
  }
  const dir = filter.newestFirst ? 'DESC' : 'ASC';
  return {
    sql: `SELECT id, record FROM retrysafe_operations ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY created_at ${dir}, id ${dir} LIMIT ?`,
    args,
  };
}

/** Open operations whose lease is absent or expired at the first parameter, oldest change first (LIMIT -1: all). */
export const RECOVER_SQL = `SELECT id, record FROM retrysafe_operations WHERE ${OPEN_STATES_SQL} AND state IN (${RECOVERABLE_STATES.map((s) => `'${s}'`).join(', ')})
    AND (lease_expires_at IS NULL OR lease_expires_at <= ?) ORDER BY updated_at LIMIT ?`;

/** A page of closed old rows after a rowid (one pass over the table), and the delete that re-checks each. */
export function pruneSql(states: number): { page: string; remove: string } {
  const closed = `updated_at < ? AND state IN (${marks(states)})`;
  return {
    page: `SELECT rowid AS n, id, record, receipts FROM retrysafe_operations
      WHERE rowid > ? AND created_at < ? AND ${closed} ORDER BY rowid LIMIT ?`,
    remove: `DELETE FROM retrysafe_operations WHERE id = ? AND ${closed}`,
  };
}
