// Issue 15 item 6: `retrysafe ledger ls --json` on a record that cannot be read prints a typed code, no stack.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { editStored } from '../../ledger-sqlite/test/sqlite-tamper.js';
import { cli, ledgerWithOneClaim, openRawSqlite, tempDir } from './helpers.js';

describe('retrysafe ledger on a record it cannot read', () => {
  it('ls --json: ok false with a RETRYSAFE_ code, exit 1, no stack on stderr', async () => {
    const db = join(tempDir('unreadable'), 'retrysafe.db');
    await ledgerWithOneClaim(db, 'cut-1');
    // Cut the stored JSON, as a torn write or a hand edit would.
    const raw = openRawSqlite(db);
    editStored(raw, 'cut-1', (l) => ({ ...l, record: l.record.slice(0, 25) }));
    raw.close();

    const r = await cli(['ledger', 'ls', '--db', db, '--json']);
    expect(r.code).toBe(1);
    const out = JSON.parse(r.stdout) as { ok: boolean; error: { code: string; message: string } };
    expect(out.ok).toBe(false);
    expect(out.error.code).toMatch(/^RETRYSAFE_/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });
});
