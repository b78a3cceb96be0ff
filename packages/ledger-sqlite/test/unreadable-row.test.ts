// One row cut or edited from outside must not hide the others from a listing or from recovery: it is reported by
// id to `onUnreadable`, and without a callback the listing still rejects (no row dropped silently).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { asBusinessOperationId, type LedgerError, RetrysafeError } from '@retrysafe/contract';
import { createRunner } from '@retrysafe/core';
import { afterEach, describe, expect, it } from 'vitest';
import { createSqliteLedger } from '../src/index.js';
import { claimInput, receiptOf } from './helpers.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A ledger with three open operations (leases out by 20 000), the middle one's record edited from outside by `edit`. */
async function withCutRow(edit = 'record = substr(record, 1, 30)') {
  const dir = mkdtempSync(join(tmpdir(), 'rs-unreadable-'));
  dirs.push(dir);
  const path = join(dir, 'ledger.db');
  const ledger = createSqliteLedger({ path });
  for (const id of ['good-1', 'cut-2', 'good-3']) await ledger.claim(claimInput(id));
  const raw = new DatabaseSync(path);
  raw.prepare(`UPDATE retrysafe_operations SET ${edit} WHERE id = 'cut-2'`).run();
  raw.close();
  return { ledger, path };
}

describe('a row whose stored record does not parse', () => {
  it('list and recoverCandidates return the others and tell its id; without a callback they reject', async () => {
    const { ledger } = await withCutRow();
    try {
      const told: Array<[string, LedgerError]> = [];
      const onUnreadable = (id: string, e: LedgerError) => told.push([id, e]);
      const ids = (rs: { businessOperationId: string }[]) => rs.map((r) => r.businessOperationId);
      expect(ids(await ledger.list({ onUnreadable }))).toEqual(['good-1', 'good-3']);
      expect(ids(await ledger.recoverCandidates(20_000, undefined, onUnreadable)).sort()).toEqual(['good-1', 'good-3']);
      expect(told.map(([id]) => id)).toEqual(['cut-2', 'cut-2']);
      for (const [, e] of told) {
        expect(RetrysafeError.isInstance(e) && e.code).toBe('RETRYSAFE_LEDGER');
        expect(e.message).toMatch(/cut or corrupt/);
      }
      await expect(ledger.list()).rejects.toThrow(/cut or corrupt/);
      await expect(ledger.recoverCandidates(20_000)).rejects.toThrow(/cut or corrupt/);
    } finally {
      await ledger.close();
    }
  });
});

describe('recoverCandidates and list with a limit', () => {
  it('an unreadable row at the head of the order (never updated again) takes no place: the limit is of readable ones', async () => {
    const { ledger } = await withCutRow('record = substr(record, 1, 30), updated_at = 0');
    try {
      const told: string[] = [];
      const onUnreadable = (id: string) => told.push(id);
      expect(await ledger.recoverCandidates(20_000, 1, onUnreadable)).toHaveLength(1);
      expect(await ledger.recoverCandidates(20_000, 2, onUnreadable)).toHaveLength(2);
      expect(told).toEqual(['cut-2', 'cut-2']);
      await expect(ledger.recoverCandidates(20_000, 1)).rejects.toThrow(/cut or corrupt/);
      const reports = await createRunner({ ledger }).recover({ adapters: [], limit: 1 });
      // Neither the unreadable row nor one left for want of its adapter takes a place: both readable ones are reached.
      expect(reports.map((r) => r.action)).toEqual(['failed', 'skipped-no-adapter', 'skipped-no-adapter']);
    } finally {
      await ledger.close();
    }
  });

  it('list: an unreadable row first in the order takes no place either, so `limit` readable ones are listed', async () => {
    const { ledger } = await withCutRow();
    try {
      const told: string[] = [];
      const onUnreadable = (id: string) => told.push(id);
      const ids = (rs: { businessOperationId: string }[]) => rs.map((r) => r.businessOperationId);
      expect(ids(await ledger.list({ limit: 1, onUnreadable }))).toEqual(['good-1']);
      expect(ids(await ledger.list({ limit: 2, states: ['dispatched'], onUnreadable }))).toEqual(['good-1', 'good-3']);
      expect(told).toEqual(['cut-2', 'cut-2']);
      await expect(ledger.list({ limit: 1 })).rejects.toThrow(/cut or corrupt/);
    } finally {
      await ledger.close();
    }
  });
});

describe('a row whose stored record parses but is not a record this version can read', () => {
  // Written by hand, by a newer version, a partial restore: no field a reader relies on, or a state it does not know.
  const edits = {
    'missing fields': `record = '{"businessOperationId":"cut-2","state":"claimed"}'`,
    'an unknown state': `record = json_set(record, '$.state', 'paused')`,
    'a fence that is not a number': `record = json_set(record, '$.fence', 'x')`,
  };
  for (const [what, edit] of Object.entries(edits))
    it(`${what}: listed around and told by id, a LedgerError to get and claim, reported by recover(), never rewritten`, async () => {
      const { ledger, path } = await withCutRow(edit);
      const stored = () => {
        const raw = new DatabaseSync(path);
        const row = raw.prepare("SELECT record FROM retrysafe_operations WHERE id = 'cut-2'").get();
        raw.close();
        return row;
      };
      const before = stored();
      try {
        const told: string[] = [];
        const onUnreadable = (id: string) => told.push(id);
        const ids = (rs: { businessOperationId: string }[]) => rs.map((r) => r.businessOperationId);
        expect(ids(await ledger.list({ onUnreadable }))).toEqual(['good-1', 'good-3']);
        expect(told).toEqual(['cut-2']);
        const id = asBusinessOperationId('cut-2');
        await expect(ledger.get(id)).rejects.toMatchObject({ code: 'RETRYSAFE_LEDGER' });
        await expect(ledger.claim(claimInput('cut-2', { now: 20_000 }))).rejects.toMatchObject({
          code: 'RETRYSAFE_LEDGER',
        });
        const reports = await createRunner({ ledger }).recover({ adapters: [] });
        expect(reports.find((r) => r.businessOperationId === 'cut-2')).toMatchObject({
          action: 'failed',
          error: { code: 'RETRYSAFE_LEDGER' },
        });
        expect(ids(reports).sort()).toEqual(['cut-2', 'good-1', 'good-3']);
        expect(stored()).toEqual(before);
      } finally {
        await ledger.close();
      }
    });
});

describe('prune past a row it cannot read', () => {
  it('prunes the others, tells the id of a closed row whose record or receipts are cut and keeps it; without a callback it rejects', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rs-unreadable-'));
    dirs.push(dir);
    const path = join(dir, 'ledger.db');
    const ledger = createSqliteLedger({ path });
    const ids = ['good-1', 'cut-2', 'cut-3', 'good-4'];
    for (const id of ids) {
      const c = await ledger.claim(claimInput(id));
      if (c.kind === 'claimed')
        await ledger.setState(c.record, { state: 'succeeded', now: 2_000, receipt: receiptOf(id, 1) });
    }
    const raw = new DatabaseSync(path);
    raw.prepare("UPDATE retrysafe_operations SET record = substr(record, 1, 30) WHERE id = 'cut-2'").run();
    raw.prepare("UPDATE retrysafe_operations SET receipts = substr(receipts, 1, 30) WHERE id = 'cut-3'").run();
    raw.close();
    try {
      await expect(ledger.prune!({ before: 5_000 })).rejects.toThrow(/cut or corrupt/);
      const told: string[] = [];
      const exported: string[] = [];
      const report = await ledger.prune!({
        before: 5_000,
        onPrune: (r) => void exported.push(r.businessOperationId),
        onUnreadable: (id) => told.push(id),
      });
      expect(report).toMatchObject({ pruned: 2 });
      expect(exported).toEqual(['good-1', 'good-4']);
      expect(told).toEqual(['cut-2', 'cut-3']);
      const left = new DatabaseSync(path);
      expect(
        left
          .prepare('SELECT id FROM retrysafe_operations ORDER BY id')
          .all()
          .map((r) => r.id),
      ).toEqual(['cut-2', 'cut-3']);
      left.close();
    } finally {
      await ledger.close();
    }
  });
});
