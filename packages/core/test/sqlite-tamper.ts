// Edits a SQLite ledger file from outside retrysafe, as an attacker or a torn write would, on the
// file layout 3 (one row per operation, its record and receipts in a compressed body). Tests that
// check what the ledger and `ledger verify` make of such edits use it, in core and in the CLI.
import { decodeBody, encodeBody } from '../src/ledger/sqlite-layout.js';

interface RawDb {
  prepare(sql: string): { get(...p: unknown[]): unknown; run(...p: unknown[]): unknown };
}
export interface StoredLines {
  record: string;
  receipts: string[];
}

/** Reads the stored lines of operation `id` (its record's JSON and its receipts' JSON). */
export function readStored(raw: RawDb, id: string): StoredLines {
  const row = raw.prepare('SELECT body FROM retrysafe_operations WHERE id = ?').get(id) as { body: Uint8Array } | undefined;
  if (!row) throw new Error(`no row ${id}`);
  const l = decodeBody(row.body);
  return { record: l.record, receipts: [...l.receipts] };
}

/** Rewrites operation `id`'s stored record and receipts with `edit` (columns untouched). */
export function editStored(raw: RawDb, id: string, edit: (lines: StoredLines) => StoredLines): void {
  raw.prepare('UPDATE retrysafe_operations SET body = ? WHERE id = ?').run(encodeBody(edit(readStored(raw, id))), id);
}
