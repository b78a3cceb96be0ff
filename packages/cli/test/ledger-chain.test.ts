import { join } from 'node:path';
import { createRunner } from '@retrysafe/core';
import { createSqliteLedger } from '@retrysafe/ledger-sqlite';
import { createDrillClock } from '@retrysafe/testkit';
import { beforeAll, describe, expect, it } from 'vitest';
import { editStored, readStored } from '../../ledger-sqlite/test/sqlite-tamper.js';
import { ledgerHandoffs } from '../src/commands/ledger/handoffs/index.js';
import { type FaultySandbox, startFaultySandbox } from './faulty-sandbox.js';
import { cli, openRawSqlite, tempDir } from './helpers.js';

// node:sqlite, to edit the file as an attacker would (outside retrysafe).

// Issue 18, item 4: a ledger edited outside retrysafe. On main, after an in-place edit of one
// receipt, `ledger show`, `ls`, `handoffs` and `resolve` all exit 0 and resolve appends to the broken
// chain; a deleted tail passes everything.
const dir = tempDir('ledger-chain');
const db = join(dir, 'retrysafe.db');
let sandbox: FaultySandbox;
const ids = { edited: '', cut: '', intact: '' };
const KEYS = 'k1:0123456789abcdef0123';

beforeAll(async () => {
  sandbox = await startFaultySandbox('reject');
  const ledger = createSqliteLedger({ path: db });
  const runner = createRunner({ ledger, clock: createDrillClock() });
  for (const k of ['edited', 'cut', 'intact'] as const) {
    const r = await runner.run(sandbox.adapter, 'records.create', { params: { ref: `chain-${k}`, amount: -1 } });
    expect(r.status).toBe('handed-off');
    ids[k] = r.businessOperationId;
  }
  await ledger.close();
  const raw = openRawSqlite(db);
  // An in-place edit of the first receipt of `edited` (its outcome), and the last receipt of `cut` deleted.
  // (editStored rewrites the row's receipts JSON as sqlite3 would.)
  editStored(raw, ids.edited, (l) => ({
    ...l,
    receipts: [JSON.stringify({ ...JSON.parse(l.receipts[0]!), outcome: 'succeeded' }), ...l.receipts.slice(1)],
  }));
  editStored(raw, ids.cut, (l) => ({ ...l, receipts: l.receipts.slice(0, -1) }));
  raw.close();
}, 60_000);

describe('retrysafe ledger verify / export, and show and resolve on a broken chain', () => {
  it('verify <id> and --all exit 1 on a break, naming where; --json says the same; an intact chain exits 0', async () => {
    const one = await cli(['ledger', 'verify', ids.edited, '--db', db]);
    expect(one.code).toBe(1);
    expect(one.stdout).toMatch(/✗ .* broken at receipt #1: content does not match its hash/);
    const all = await cli(['ledger', 'verify', '--all', '--db', db, '--json']);
    expect(all.code).toBe(1);
    const body = JSON.parse(all.stdout) as {
      ok: boolean;
      operations: { businessOperationId: string; ok: boolean; reason?: string }[];
    };
    expect(body.ok).toBe(false);
    const byId = Object.fromEntries(body.operations.map((o) => [o.businessOperationId, o]));
    expect(byId[ids.edited]).toMatchObject({ ok: false });
    expect(byId[ids.cut]).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/the row anchors \d+ receipt\(s\), the ledger holds \d+/),
    });
    expect(byId[ids.intact]).toMatchObject({ ok: true });
    const intact = await cli(['ledger', 'verify', ids.intact, '--db', db]);
    expect(intact.code).toBe(0);
    expect((await cli(['ledger', 'verify', '--db', db])).code).toBe(2);
  });

  it('verify of an id that is not in the ledger exits 1 as show and resolve do (not a usage error)', async () => {
    for (const command of ['verify', 'show']) {
      const r = await cli(['ledger', command, 'no-such-op', '--db', db]);
      expect(r.stderr).toMatch(/no-such-op/);
      expect(r.stderr).not.toMatch(/--help/);
      expect(r.code).toBe(1);
    }
  });

  it('show prints the break, on stdout and stderr, and exits 1', async () => {
    const shown = await cli(['ledger', 'show', ids.cut, '--db', db]);
    expect(shown.code).toBe(1);
    expect(shown.stdout).toMatch(/receipt chain broken/);
    expect(shown.stderr).toMatch(/receipt chain of .* is broken/);
    const ok = await cli(['ledger', 'show', ids.intact, '--db', db, '--json']);
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout).chain).toMatchObject({ ok: true });
  });

  it('handoffs marks the broken chains and exits 1', async () => {
    const h = await cli(['ledger', 'handoffs', '--db', db, '--json']);
    expect(h.code).toBe(1);
    const rows = JSON.parse(h.stdout) as { businessOperationId: string; chainBroken?: string }[];
    expect(Object.fromEntries(rows.map((r) => [r.businessOperationId, r.chainBroken !== undefined]))).toEqual({
      [ids.edited]: true,
      [ids.cut]: true,
      [ids.intact]: false,
    });
    expect((await cli(['ledger', 'handoffs', '--db', db])).stdout).toMatch(/receipt chain broken/);
    // In code, an intact chain's row has no chainBroken key at all (not one set to undefined).
    const intact = (await ledgerHandoffs({ db })).find((r) => r.businessOperationId === ids.intact)!;
    expect(Object.hasOwn(intact, 'chainBroken')).toBe(false);
  });

  it('resolve refuses a broken chain and appends nothing; an intact one resolves', async () => {
    const count = (id: string) => {
      const raw = openRawSqlite(db, { readonly: true });
      try {
        return readStored(raw, id).receipts.length;
      } finally {
        raw.close();
      }
    };
    const before = count(ids.edited);
    const r = await cli(['ledger', 'resolve', ids.edited, '--abandon', '--db', db]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/receipt chain is broken.*nothing was sent/);
    expect(count(ids.edited)).toBe(before);
    const fine = await cli(['ledger', 'resolve', ids.intact, '--abandon', '--db', db]);
    expect(fine.code).toBe(0);
    expect((await cli(['ledger', 'verify', ids.intact, '--db', db])).code).toBe(0);
  });

  it('export carries the heads: verify --file checks it offline and finds the same breaks; a dropped line fails', async () => {
    const out = join(dir, 'export.jsonl');
    const ex = await cli(['ledger', 'export', '--db', db, '--out', out]);
    expect(ex.code).toBe(0);
    const offline = await cli(['ledger', 'verify', '--file', out, '--json']);
    expect(offline.code).toBe(1);
    const rows = (JSON.parse(offline.stdout) as { operations: { businessOperationId: string; ok: boolean }[] })
      .operations;
    expect(Object.fromEntries(rows.map((x) => [x.businessOperationId, x.ok]))).toEqual({
      [ids.edited]: false,
      [ids.cut]: false,
      [ids.intact]: true,
    });
    const stdout = await cli(['ledger', 'export', '--db', db, '--state', 'abandoned']);
    const lines = stdout.stdout.trim().split('\n');
    expect(lines[lines.length - 1]).toContain('"chainHead"');
    const { writeFileSync } = await import('node:fs');
    const partial = join(dir, 'partial.jsonl');
    writeFileSync(partial, lines.filter((_, i) => i !== lines.length - 2).join('\n'));
    const cut = await cli(['ledger', 'verify', '--file', partial]);
    expect(cut.code).toBe(1);
    // The break may be in the file alone: it is not told as the ledger's.
    expect(cut.stdout).toContain(`broken: ${partial} or the ledger it was exported from was edited outside retrysafe`);
    writeFileSync(partial, lines.join('\n'));
    expect((await cli(['ledger', 'verify', '--file', partial])).code).toBe(0);
  });

  it('verify --file of an empty file says nothing was verified, not just "No operations."', async () => {
    // An export of an empty ledger is empty too, so an empty file is not refused; it is told as holding nothing.
    const empty = join(dir, 'empty.jsonl');
    (await import('node:fs')).writeFileSync(empty, '');
    const r = await cli(['ledger', 'verify', '--file', empty]);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe(`${empty} holds no operations: nothing verified.`);
  });

  it('with RETRYSAFE_RECEIPT_KEYS set, unkeyed chains fail unless --allow-unkeyed; a malformed key is a usage error that hides the secret', async () => {
    const keyed = await cli(['ledger', 'verify', ids.intact, '--db', db], { env: { RETRYSAFE_RECEIPT_KEYS: KEYS } });
    expect(keyed.code).toBe(1);
    expect(keyed.stdout).toMatch(/not keyed/);
    // Written before the key was set, or re-sealed without it: neither an edit shown nor a key to add.
    expect(keyed.stdout).toMatch(/✗ \S+ {2}unkeyed at receipt #1: not keyed/);
    expect(keyed.stdout).toMatch(/1 of 1 chain unkeyed: .*--allow-unkeyed/);
    expect(keyed.stdout).not.toMatch(/broken at|\d chains? broken|edited/);
    expect(
      (
        await cli(['ledger', 'verify', ids.intact, '--db', db, '--allow-unkeyed'], {
          env: { RETRYSAFE_RECEIPT_KEYS: KEYS },
        })
      ).code,
    ).toBe(0);
    // show (and resolve) accept chains from before the key; verify is the strict one.
    expect(
      (await cli(['ledger', 'show', ids.intact, '--db', db], { env: { RETRYSAFE_RECEIPT_KEYS: KEYS } })).code,
    ).toBe(0);
    const bad = await cli(['ledger', 'verify', ids.intact, '--db', db], {
      env: { RETRYSAFE_RECEIPT_KEYS: 'k1:tooShortSecret' },
    });
    expect(bad.code).toBe(2);
    expect(bad.stderr).not.toContain('tooShortSecret');
    expect(bad.stderr, 'the fix is in the variable, not on the command line').not.toContain('--help');
    // Refused before any operation is read: an empty ledger does not let a malformed key pass.
    const empty = join(dir, 'empty.db');
    createSqliteLedger({ path: empty }).close();
    const none = await cli(['ledger', 'verify', '--all', '--db', empty], {
      env: { RETRYSAFE_RECEIPT_KEYS: 'k1:tooShortSecret' },
    });
    expect(none.code).toBe(2);
  });

  it('an error message that quotes a credential or an address is scrubbed before it is printed', async () => {
    const path = join(dir, 'sk_live_51HqLeakedKey0000', 'ops-alice.private@example.test.db');
    const r = await cli(['ledger', 'ls', '--db', path]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/no SQLite ledger at/);
    expect(r.stderr).not.toContain('sk_live_51HqLeakedKey0000');
    expect(r.stderr).not.toContain('alice.private@example.test');
    const j = await cli(['ledger', 'ls', '--db', path, '--json']);
    expect(j.stdout).not.toContain('sk_live_51HqLeakedKey0000');
  });

  it('verify of a keyed chain without RETRYSAFE_RECEIPT_KEYS is not a pass: an outcome edited in place is found with the key, and without it verify exits 1 naming the key', async () => {
    const keyed = join(dir, 'keyed.db');
    const id = await keyedHandOff(keyed, 'keyed-1');
    const raw = openRawSqlite(keyed);
    editStored(raw, id, (l) => ({
      ...l,
      receipts: [JSON.stringify({ ...JSON.parse(l.receipts[0]!), outcome: 'succeeded' }), ...l.receipts.slice(1)],
    }));
    raw.close();
    const withKey = await cli(['ledger', 'verify', id, '--db', keyed], { env: { RETRYSAFE_RECEIPT_KEYS: KEYS } });
    expect(withKey.code).toBe(1);
    expect(withKey.stdout).toMatch(/does not match its keyed hash/);
    const out = join(dir, 'keyed.jsonl');
    expect((await cli(['ledger', 'export', '--db', keyed, '--out', out])).code).toBe(0);
    for (const args of [
      ['ledger', 'verify', id, '--db', keyed],
      ['ledger', 'verify', '--all', '--db', keyed],
      ['ledger', 'verify', '--file', out],
    ]) {
      const r = await cli(args, { env: { RETRYSAFE_RECEIPT_KEYS: '' } });
      expect(r.code).toBe(1);
      expect(r.stdout).toMatch(/key k1/);
      expect(r.stdout).not.toMatch(/intact/);
    }
  });

  it('resolve of a keyed chain without RETRYSAFE_RECEIPT_KEYS is refused and appends nothing: an unkeyed receipt after keyed ones would break the chain for good', async () => {
    const keyed = join(dir, 'keyed-resolve.db');
    const id = await keyedHandOff(keyed, 'keyed-r');
    const count = () => {
      const raw = openRawSqlite(keyed, { readonly: true });
      try {
        return readStored(raw, id).receipts.length;
      } finally {
        raw.close();
      }
    };
    const before = count();
    const r = await cli(['ledger', 'resolve', id, '--abandon', '--db', keyed], { env: { RETRYSAFE_RECEIPT_KEYS: '' } });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/sealed with key k1.*nothing was written/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(count()).toBe(before);
    const verified = await cli(['ledger', 'verify', id, '--db', keyed], { env: { RETRYSAFE_RECEIPT_KEYS: KEYS } });
    expect(verified.code).toBe(0);
    const fine = await cli(['ledger', 'resolve', id, '--abandon', '--db', keyed], {
      env: { RETRYSAFE_RECEIPT_KEYS: KEYS },
    });
    expect(fine.code).toBe(0);
    expect((await cli(['ledger', 'verify', id, '--db', keyed], { env: { RETRYSAFE_RECEIPT_KEYS: KEYS } })).code).toBe(
      0,
    );
  });

  it('a chain sealed with a key the keyring lacks is told as such, not as an edit, by verify, show, handoffs and resolve (exit 1 as before)', async () => {
    const keyed = join(dir, 'other-key.db');
    const id = await keyedHandOff(keyed, 'other-key');
    const env = { RETRYSAFE_RECEIPT_KEYS: 'k2:fedcba9876543210fedc' }; // k1 rotated out, or a typo
    for (const args of [
      ['verify', id],
      ['verify', '--all'],
      ['show', id],
      ['handoffs'],
      ['resolve', id, '--abandon'],
    ]) {
      const r = await cli(['ledger', ...args, '--db', keyed], { env });
      const said = r.stdout + r.stderr;
      expect(r.code, args.join(' ')).toBe(1);
      expect(said, args.join(' ')).toMatch(/key k1.*RETRYSAFE_RECEIPT_KEYS/);
      expect(said, args.join(' ')).not.toMatch(/edited|docs\/security\.md/);
      if (args[0] === 'verify') expect(said, args.join(' ')).toMatch(/✗ \S+ {2}not checked at receipt #1: /);
      if (args[0] === 'verify') expect(said, args.join(' ')).not.toMatch(/broken at|\d chains? broken/);
      expect(said, args.join(' ')).toContain('retrysafe help runbook');
    }
  });
});

/** A ledger at `path` holding one operation handed off (a rejection) with receipts sealed by key k1; its id. */
async function keyedHandOff(path: string, ref: string): Promise<string> {
  const ledger = createSqliteLedger({ path });
  const runner = createRunner({ ledger, clock: createDrillClock(), receiptKey: { id: 'k1', secret: KEYS.slice(3) } });
  const { businessOperationId } = await runner.run(sandbox.adapter, 'records.create', { params: { ref, amount: -1 } });
  await ledger.close();
  return businessOperationId;
}
