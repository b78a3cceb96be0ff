// Issue 15 item 6: `retrysafe ledger ls --json` on a record that cannot be read prints a typed code, no stack.
import { join } from 'node:path';
import { createRunner } from '@retrysafe/core';
import { createSqliteLedger } from '@retrysafe/ledger-sqlite';
import { createDrillClock } from '@retrysafe/testkit';
import { describe, expect, it } from 'vitest';
import { editStored } from '../../ledger-sqlite/test/sqlite-tamper.js';
import { startFaultySandbox } from './faulty-sandbox.js';
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

  it('ls with one cut row among others: lists the others, warns by id on stderr (no row content), exits 1', async () => {
    const db = join(tempDir('unreadable-one'), 'retrysafe.db');
    for (const id of ['kept-1', 'cut-2', 'kept-3']) await ledgerWithOneClaim(db, id);
    const raw = openRawSqlite(db);
    editStored(raw, 'cut-2', (l) => ({ ...l, record: l.record.slice(0, 25) }));
    raw.close();

    const text = await cli(['ledger', 'ls', '--db', db]);
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(/kept-1/);
    expect(text.stdout).toMatch(/kept-3/);
    expect(text.stdout).not.toMatch(/cut-2/);
    expect(text.stderr.trim().split('\n')).toEqual([expect.stringMatching(/warning: operation cut-2 cannot be read/)]);
    expect(text.stderr).not.toMatch(/sandbox|businessOperationId|\n\s+at /); // nothing of the row's content

    const json = await cli(['ledger', 'ls', '--db', db, '--json']);
    expect(json.code).toBe(1);
    const out = JSON.parse(json.stdout) as {
      ok: boolean;
      operations: { businessOperationId: string }[];
      unreadable: string[];
    };
    expect(out.ok).toBe(false);
    expect(out.operations.map((r) => r.businessOperationId).sort()).toEqual(['kept-1', 'kept-3']);
    expect(out.unreadable).toEqual(['cut-2']);

    // verify --all checks the others and names the cut one as broken.
    const verify = await cli(['ledger', 'verify', '--all', '--db', db, '--json']);
    expect(verify.code).toBe(1);
    const rows = (JSON.parse(verify.stdout) as { operations: { businessOperationId: string; ok: boolean }[] })
      .operations;
    expect(Object.fromEntries(rows.map((r) => [r.businessOperationId, r.ok]))).toEqual({
      'kept-1': true,
      'cut-2': false,
      'kept-3': true,
    });
    expect((await cli(['ledger', 'verify', '--all', '--db', db])).stdout).toMatch(
      /cut-2 {2}its stored record cannot be read/,
    );
  });

  it('ls and show with a record missing its fields and one in a state this version does not know: others listed, each named, no stack', async () => {
    const db = join(tempDir('unreadable-fields'), 'retrysafe.db');
    for (const id of ['kept-1', 'bare-2', 'newer-3']) await ledgerWithOneClaim(db, id);
    const raw = openRawSqlite(db);
    editStored(raw, 'bare-2', (l) => ({ ...l, record: '{"businessOperationId":"bare-2"}' }));
    editStored(raw, 'newer-3', (l) => ({ ...l, record: l.record.replace('"state":"claimed"', '"state":"paused"') }));
    raw.close();

    const ls = await cli(['ledger', 'ls', '--db', db, '--json']);
    expect(ls.code).toBe(1);
    const out = JSON.parse(ls.stdout) as { operations: { businessOperationId: string }[]; unreadable: string[] };
    expect(out.operations.map((r) => r.businessOperationId)).toEqual(['kept-1']);
    expect(out.unreadable.sort()).toEqual(['bare-2', 'newer-3']);
    expect(ls.stderr).not.toMatch(/RangeError|\n\s+at /);
    for (const id of ['bare-2', 'newer-3']) {
      const shown = await cli(['ledger', 'show', id, '--db', db]);
      expect(shown.code).not.toBe(0);
      expect(shown.stderr).toMatch(/stored record has no valid (provider|state)/);
      expect(shown.stderr).not.toMatch(/RangeError|\n\s+at /);
    }
  });

  it('handoffs, resolve-all and export with one cut handed-off row: act on the others, warn by id, exit 1', async () => {
    const { db, ids } = await handedOff('unreadable-handoffs', 'h', ['cut', 'kept']);
    const [cut, kept] = ids as [string, string];
    const raw = openRawSqlite(db);
    editStored(raw, cut, (l) => ({ ...l, record: l.record.slice(0, 25) }));
    raw.close();
    const warned = warnedOf(cut);

    const h = await cli(['ledger', 'handoffs', '--db', db, '--json']);
    expect(h.code).toBe(1);
    expect(h.stderr).toMatch(warned);
    const listed = JSON.parse(h.stdout) as { operations: { businessOperationId: string }[]; unreadable: string[] };
    expect(listed.operations.map((r) => r.businessOperationId)).toEqual([kept]);
    expect(listed.unreadable).toEqual([cut]);

    await exportAndAbandon(db, cut, kept);
  });

  it('receipts whose stored JSON is cut: verify --all, handoffs, export and resolve-all name that operation and serve the others', async () => {
    const { db, ids } = await handedOff('unreadable-receipts-cut', 'c', ['cut', 'kept']);
    const [cut, kept] = ids as [string, string];
    const raw = openRawSqlite(db);
    raw.prepare('UPDATE retrysafe_operations SET receipts = substr(receipts, 1, 30) WHERE id = ?').run(cut);
    raw.close();

    const verify = await cli(['ledger', 'verify', '--all', '--db', db, '--json']);
    expect(verify.code).toBe(1);
    const rows = (JSON.parse(verify.stdout) as { operations: { businessOperationId: string; ok: boolean }[] })
      .operations;
    expect(Object.fromEntries(rows.map((r) => [r.businessOperationId, r.ok]))).toEqual({ [cut]: false, [kept]: true });
    const h = await cli(['ledger', 'handoffs', '--db', db, '--json']);
    expect(h.code).toBe(1);
    const listed = JSON.parse(h.stdout) as { businessOperationId: string; chainBroken?: string }[];
    expect(Object.fromEntries(listed.map((r) => [r.businessOperationId, r.chainBroken !== undefined]))).toEqual({
      [cut]: true,
      [kept]: false,
    });
    expect((await exportAndAbandon(db, cut, kept)).stdout).not.toContain(cut);
  });

  it('a hand-off packet without its lists: handoffs and resolve-all name it and act on the others', async () => {
    const { db, ids } = await handedOff('unreadable-packet', 'p', ['bare', 'kept']);
    const [bare, kept] = ids as [string, string];
    const raw = openRawSqlite(db);
    editStored(raw, bare, (l) => ({ ...l, record: JSON.stringify({ ...JSON.parse(l.record), handoff: {} }) }));
    raw.close();
    const h = await cli(['ledger', 'handoffs', '--db', db, '--json']);
    expect(h.code).toBe(1);
    expect(JSON.parse(h.stdout)).toMatchObject({ operations: [{ businessOperationId: kept }], unreadable: [bare] });
    const all = await cli(['ledger', 'resolve-all', '--abandon', '--dry-run', '--db', db, '--json']);
    expect(all.code).toBe(1);
    expect(all.stderr).toMatch(warnedOf(bare));
    expect(JSON.parse(all.stdout)).toMatchObject({ matched: 1, unreadable: [bare], ok: false });
  });

  it('a stored receipt that is not an object (null, a number) is a break of its operation: verify --all, handoffs and show name it and go on', async () => {
    const { db, ids } = await handedOff('unreadable-receipt', 'r', ['null', 'number', 'intact']);
    const raw = openRawSqlite(db);
    editStored(raw, ids[0]!, (l) => ({ ...l, receipts: ['null', ...l.receipts.slice(1)] }));
    editStored(raw, ids[1]!, (l) => ({ ...l, receipts: [...l.receipts.slice(0, -1), '7'] }));
    raw.close();

    const all = await cli(['ledger', 'verify', '--all', '--db', db, '--json']);
    expect(all.stderr).toBe('');
    expect(all.code).toBe(1);
    const rows = (
      JSON.parse(all.stdout) as { operations: { businessOperationId: string; ok: boolean; reason?: string }[] }
    ).operations;
    expect(Object.fromEntries(rows.map((o) => [o.businessOperationId, o.ok]))).toEqual({
      [ids[0]!]: false,
      [ids[1]!]: false,
      [ids[2]!]: true,
    });
    expect(rows.find((o) => o.businessOperationId === ids[0])!.reason).toMatch(/not a receipt/);
    const h = await cli(['ledger', 'handoffs', '--db', db, '--json']);
    expect(h.code).toBe(1);
    expect(
      Object.fromEntries(
        (JSON.parse(h.stdout) as { businessOperationId: string; chainBroken?: string }[]).map((r) => [
          r.businessOperationId,
          r.chainBroken !== undefined,
        ]),
      ),
    ).toEqual({ [ids[0]!]: true, [ids[1]!]: true, [ids[2]!]: false });
    const shown = await cli(['ledger', 'show', ids[1]!, '--db', db]);
    expect(shown.code).toBe(1);
    expect(shown.stdout).toMatch(/receipt chain broken at #\d+: not a receipt/);
    expect(shown.stderr).not.toMatch(/TypeError|\n\s+at /);
  });
});

/** The CLI's warning line naming operation `id`. */
/** `ledger export` and `resolve-all --abandon` with the row `cut` unreadable: each warns of it by id and exits 1, and
 * acts on `kept` (exported; abandoned). The export's run. */
async function exportAndAbandon(db: string, cut: string, kept: string) {
  const e = await cli(['ledger', 'export', '--db', db]);
  expect(e.code).toBe(1);
  expect(e.stderr).toMatch(warnedOf(cut));
  expect(e.stdout).toContain(kept);
  const all = await cli(['ledger', 'resolve-all', '--abandon', '--db', db, '--json']);
  expect(all.code).toBe(1);
  expect(all.stderr).toMatch(warnedOf(cut));
  expect(JSON.parse(all.stdout)).toMatchObject({ matched: 1, unreadable: [cut], ok: false });
  const after = createSqliteLedger({ path: db });
  expect((await after.get(kept as never))?.state).toBe('abandoned');
  await after.close();
  return e;
}

const warnedOf = (id: string) =>
  new RegExp(`warning: operation ${id.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} cannot be read`);

/** A SQLite ledger holding one handed-off operation (a rejected call) per name, closed; their ids in order. */
async function handedOff(dir: string, prefix: string, names: string[]) {
  const sandbox = await startFaultySandbox('reject');
  const db = join(tempDir(dir), 'retrysafe.db');
  const ledger = createSqliteLedger({ path: db });
  const runner = createRunner({ ledger, clock: createDrillClock() });
  const ids: string[] = [];
  for (const k of names) {
    const params = { ref: `${prefix}-${k}`, amount: -1 };
    ids.push((await runner.run(sandbox.adapter, 'records.create', { params })).businessOperationId);
  }
  await ledger.close();
  return { db, ids };
}
