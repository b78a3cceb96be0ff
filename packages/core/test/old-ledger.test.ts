// A ledger written by an earlier release keeps working: fixtures/old-ledger.db was written by the
// runner before the rooms and the hot-path work (commit b283e44, see fixtures/write-old-ledger.mjs).
// Its chains verify with this code, this code writes the same receipts (every field, every hash) for the same runs
// (so the hashes mean what they meant), and it continues an old chain that still verifies.
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { asBusinessOperationId, type Receipt } from '@retrysafe/contract';
import * as core from '@retrysafe/core';
import { createMemoryLedger, createRunner, createSqliteLedger, createVirtualClock, verifyOperation } from '@retrysafe/core';
// @ts-ignore plain .mjs fixture without types
import { RECEIPT_KEY, runScenarios } from './fixtures/receipt-scenarios.mjs';

const FIXTURE = join(dirname(fileURLToPath(import.meta.url)), 'fixtures/old-ledger.db');
const dir = mkdtempSync(join(tmpdir(), 'retrysafe-old-ledger-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const keys = { [RECEIPT_KEY.id]: RECEIPT_KEY.secret };

function oldLedger() {
  const path = join(dir, `old-${Math.random().toString(36).slice(2)}.db`);
  copyFileSync(FIXTURE, path);
  return createSqliteLedger({ path });
}

describe('a ledger written before the runner rooms', () => {
  it('verifies with this code: every chain, keyed ones with the key', async () => {
    const ledger = oldLedger();
    const records = await ledger.list();
    expect(records.length).toBe(8);
    for (const r of records) {
      const receipts = await ledger.receipts(r.businessOperationId);
      const keyed = receipts.some((x) => x.hash.startsWith('hmac-sha256:'));
      expect(await verifyOperation(ledger, r.businessOperationId, keyed ? { keys } : {}), r.businessOperationId).toEqual({ ok: true });
    }
    await ledger.close();
  });

  it('this code writes the same receipts for the same runs: every field and every hash (the canonical bytes they are sealed over)', async () => {
    const old = oldLedger();
    const fresh = createMemoryLedger();
    const ids = (await runScenarios(core, fresh)) as Record<string, string>;
    expect(Object.keys(ids).length).toBe(8);
    for (const [name, id] of Object.entries(ids)) {
      const before = await old.receipts(asBusinessOperationId(id));
      const now = await fresh.receipts(asBusinessOperationId(id));
      expect(before.length, name).toBeGreaterThan(0);
      expect(now.map((r) => JSON.stringify(sorted(r))), name).toEqual(before.map((r) => JSON.stringify(sorted(r))));
      const a = await old.get(asBusinessOperationId(id));
      const b = await fresh.get(asBusinessOperationId(id));
      expect({ state: b?.state, result: b?.result, providerRef: b?.providerRef, receiptChain: b?.receiptChain }, name).toEqual({ state: a?.state, result: a?.result, providerRef: a?.providerRef, receiptChain: a?.receiptChain });
    }
    await old.close();
  });

  it('an old handed-off operation resolved by this code: its chain, old receipts and new, verifies (plain and keyed)', async () => {
    const ledger = oldLedger();
    const clock = createVirtualClock(Date.UTC(2026, 11, 1));
    const handedOff = (await ledger.list()).filter((r) => r.state === 'handed-off');
    expect(handedOff.length).toBe(2);
    for (const rec of handedOff) {
      const before = await ledger.receipts(rec.businessOperationId);
      const keyed = before.some((x) => x.hash.startsWith('hmac-sha256:'));
      const runner = createRunner({ ledger, clock, random: () => 0.5, ...(keyed ? { receiptKey: RECEIPT_KEY } : {}) });
      const done = await runner.resolve(rec.businessOperationId, { action: 'mark-done', providerRef: 'rec_later' }, { by: 'a later person' });
      expect(done).toMatchObject({ status: 'resolved', state: 'succeeded' });
      const after = await ledger.receipts(rec.businessOperationId);
      expect(after.slice(0, before.length)).toEqual(before);
      expect(after.length).toBe(before.length + 1);
      expect(await verifyOperation(ledger, rec.businessOperationId, keyed ? { keys } : {})).toEqual({ ok: true });
    }
    await ledger.close();
  });
});

function sorted(r: Receipt): Record<string, unknown> {
  return Object.fromEntries(Object.entries(r).sort(([a], [b]) => (a < b ? -1 : 1)));
}
