// Edits a SQLite ledger file from outside retrysafe, as an attacker, an operator with sqlite3 or a torn
// write would: the stored record's JSON text and its receipts' JSON texts, columns untouched. Tests of
// what the ledger and `ledger verify` make of such edits use it (here, in core and in the CLI).
interface RawDb {
  prepare(sql: string): { get(...p: never[]): unknown; run(...p: never[]): unknown };
}
export interface StoredLines {
  record: string;
  receipts: string[];
}

/** Reads operation `id`'s stored record JSON and each receipt's JSON. */
export function readStored(raw: RawDb, id: string): StoredLines {
  const row = (
    raw.prepare('SELECT record, receipts FROM retrysafe_operations WHERE id = ?').get as (...p: unknown[]) => unknown
  )(id) as { record: string; receipts: string | null } | undefined;
  if (!row) throw new Error(`no row ${id}`);
  const receipts = row.receipts === null ? [] : (JSON.parse(row.receipts) as unknown[]).map((r) => JSON.stringify(r));
  return { record: row.record, receipts };
}

/** Rewrites operation `id`'s stored record and receipts with `edit` (columns untouched). */
export function editStored(raw: RawDb, id: string, edit: (lines: StoredLines) => StoredLines): void {
  const next = edit(readStored(raw, id));
  const receipts = next.receipts.length === 0 ? null : `[${next.receipts.join(',')}]`;
  (
    raw.prepare('UPDATE retrysafe_operations SET record = ?, receipts = ? WHERE id = ?').run as (
      ...p: unknown[]
    ) => unknown
  )(next.record, receipts, id);
}
