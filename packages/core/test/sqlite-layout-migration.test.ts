// Issue 23: the SQLite ledger's compact layout (3; 5 = rowids in creation order, no created_at index;
// 6 = new bodies in format 3) and the migrations from the layouts older builds wrote (2; 0 for the first release; 3; 4; 5). The fixture was written by main's code before this change
// (fixtures/legacy/make-legacy-ledgers.mjs), with what that code read back from it.
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LedgerError, type OperationRecord, type Receipt } from '@retrysafe/contract';
import { createSandboxAdapter, createSandboxProvider, REPLAYING_BEHAVIOUR } from '@retrysafe/sandbox';
import { createRunner, createSqliteLedger, verifyOperation } from '../src/index.js';
import { resolveDriver } from '../src/ledger/sqlite-driver.js';

const FIXTURE = new URL('./fixtures/legacy/ledger-layout2.db', import.meta.url);
const EXPECTED = JSON.parse(readFileSync(new URL('./fixtures/legacy/ledger-layout2.json', import.meta.url), 'utf8')) as Record<string, { record: OperationRecord; receipts: Receipt[] }>;
// Layout 3 with bodies in formats 0 and 1, as the build before body format 2 wrote it (b897e44).
const FIXTURE_3 = new URL('./fixtures/legacy/ledger-layout3.db', import.meta.url);
const EXPECTED_3 = JSON.parse(readFileSync(new URL('./fixtures/legacy/ledger-layout3.json', import.meta.url), 'utf8')) as Record<string, { record: OperationRecord; receipts: Receipt[] }>;
// Layout 4 (the created_at index, rowids in insertion order), as 3583d5c wrote it: claims 1 s apart going back in time.
const FIXTURE_4 = new URL('./fixtures/legacy/ledger-layout4.db', import.meta.url);
const EXPECTED_4 = JSON.parse(readFileSync(new URL('./fixtures/legacy/ledger-layout4.json', import.meta.url), 'utf8')) as Record<string, { record: OperationRecord; receipts: Receipt[] }>;
// Layout 5 (bodies in format 2), as 0456045 wrote it, the last build before body format 3.
const FIXTURE_5 = new URL('./fixtures/legacy/ledger-layout5.db', import.meta.url);
const EXPECTED_5 = JSON.parse(readFileSync(new URL('./fixtures/legacy/ledger-layout5.json', import.meta.url), 'utf8')) as Record<string, { record: OperationRecord; receipts: Receipt[] }>;
const dir = mkdtempSync(join(tmpdir(), 'retrysafe-layout-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function raw(path: string) {
  const found = resolveDriver('auto');
  if ('reasons' in found) throw new Error(`no SQLite driver: ${found.reasons.join('; ')}`);
  return found.open(path);
}
let n = 0;
function copyOfFixture(): string {
  const path = join(dir, `legacy-${n++}.db`);
  copyFileSync(FIXTURE, path);
  return path;
}
const indexes = (path: string) => {
  const db = raw(path);
  try {
    return (db.prepare(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'retrysafe_operations' ORDER BY name`).all() as Array<{ name: string }>).map((t) => t.name);
  } finally {
    db.close();
  }
};
/** Per row: its id, its rowid's bucket and its created_at; a row's bucket must be its created_at's whole ms, and the rowids in (created_at, insertion) order. */
const rowOrder = (path: string) => {
  const db = raw(path);
  try {
    return db.prepare(`SELECT id, rowid >> 20 AS b, created_at AS c FROM retrysafe_operations ORDER BY rowid`).all() as Array<{ id: string; b: number; c: number }>;
  } finally {
    db.close();
  }
};
/** Each row's body as hex, by id. */
const bodiesOf = (path: string) => {
  const db = raw(path);
  try {
    return Object.fromEntries((db.prepare('SELECT id, hex(body) AS body FROM retrysafe_operations ORDER BY id').all() as Array<{ id: string; body: string }>).map((r) => [r.id, r.body]));
  } finally {
    db.close();
  }
};
const tables = (path: string) => {
  const db = raw(path);
  try {
    return {
      version: (db.prepare('PRAGMA user_version').get() as { user_version: number }).user_version,
      names: (db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`).all() as Array<{ name: string }>).map((t) => t.name),
    };
  } finally {
    db.close();
  }
};

describe('SQLite ledger layout 6 and the migrations from layouts 2, 3, 4 and 5', () => {
  it('a layout-3 file written by the build before body format 2 (formats 0/1) opens as layout 6 without a body rewritten, reads back what that build read, and its next write is format 2', async () => {
    const path = join(dir, `legacy3-${n++}.db`);
    copyFileSync(FIXTURE_3, path);
    const bodies = () => bodiesOf(path);
    const before = bodies();
    expect(tables(path)).toEqual({ version: 3, names: ['retrysafe_migrations', 'retrysafe_operations'] });
    expect(new Set(Object.values(before).map((b) => b.slice(0, 2)))).toEqual(new Set(['00', '01']));
    const ledger = createSqliteLedger({ path });
    expect(tables(path).version).toBe(6);
    expect(bodies()).toEqual(before);
    for (const [id, want] of Object.entries(EXPECTED_3)) {
      expect(await ledger.get(id as never)).toEqual(want.record);
      expect(JSON.stringify(await ledger.receipts(id as never))).toBe(JSON.stringify(want.receipts));
      if (want.receipts.length) expect(await verifyOperation(ledger, id as never)).toEqual({ ok: true });
    }
    const resolved = await ledger.resolve('legacy-two' as never, { action: 'abandon', by: 'test' }, Date.now());
    expect(resolved.state).toBe('abandoned');
    expect(bodies()['legacy-two']!.slice(0, 2)).toBe('02');
    expect(JSON.stringify(await ledger.receipts('legacy-two' as never))).toBe(JSON.stringify(EXPECTED_3['legacy-two']!.receipts));
    expect(await verifyOperation(ledger, 'legacy-two' as never)).toEqual({ ok: true });
    await ledger.close();
  });

  it('a layout-2 file written by an older build opens as layout 6 and reads back exactly what that build read', async () => {
    const path = copyOfFixture();
    expect(tables(path)).toMatchObject({ version: 2, names: expect.arrayContaining(['retrysafe_receipts']) });
    const ledger = createSqliteLedger({ path });
    expect(tables(path)).toEqual({ version: 6, names: ['retrysafe_migrations', 'retrysafe_operations'] });
    for (const [id, want] of Object.entries(EXPECTED)) {
      expect(await ledger.get(id as never)).toEqual(want.record);
      // The receipts' JSON is kept as stored: the same bytes, so the same hashes.
      expect(JSON.stringify(await ledger.receipts(id as never))).toBe(JSON.stringify(want.receipts));
      if (want.receipts.length) expect(await verifyOperation(ledger, id as never)).toEqual({ ok: true });
    }
    expect((await ledger.list()).map((r) => r.businessOperationId)).toEqual(Object.values(EXPECTED).map((e) => e.record.businessOperationId).sort((a, b) => (EXPECTED[a]!.record.createdAt - EXPECTED[b]!.record.createdAt) || a.localeCompare(b)));
    expect((await ledger.list({ states: ['handed-off'] })).map((r) => r.businessOperationId)).toEqual(['legacy-two']);
    await ledger.close();
  });

  it('the migrated file keeps working: the runner runs on it, a handoff resolves with a verified chain, a reopen migrates nothing', async () => {
    const path = copyOfFixture();
    let ledger = createSqliteLedger({ path });
    const provider = createSandboxProvider({ ...REPLAYING_BEHAVIOUR });
    const run = await createRunner({ ledger }).run(createSandboxAdapter({ provider }), 'records.create', { params: { ref: 'after-migration', amount: 1 } });
    expect(run.status).toBe('done');
    expect(await verifyOperation(ledger, run.businessOperationId)).toEqual({ ok: true });
    // The stale claim is still held (its lease runs for years): not a recovery candidate, busy for a new claim.
    expect((await ledger.recoverCandidates(Date.now())).map((r) => r.businessOperationId)).not.toContain('legacy-open');
    const resolved = await ledger.resolve('legacy-two' as never, { action: 'abandon', by: 'test' }, Date.now());
    expect(resolved.state).toBe('abandoned');
    await ledger.close();
    ledger = createSqliteLedger({ path });
    expect((await ledger.get('legacy-two' as never))!.state).toBe('abandoned');
    expect(await verifyOperation(ledger, 'legacy-two' as never)).toEqual({ ok: true });
    expect(tables(path).version).toBe(6);
    await ledger.close();
  });

  it('a layout-0 file (first release: no anchors, no migrations table) is anchored, then converted', async () => {
    const path = copyOfFixture();
    const db = raw(path);
    db.prepare(`UPDATE retrysafe_operations SET record = json_remove(record, '$.receiptChain')`).run();
    db.prepare('DROP TABLE retrysafe_migrations').run();
    db.exec('PRAGMA user_version = 0');
    db.close();
    const ledger = createSqliteLedger({ path });
    for (const [id, want] of Object.entries(EXPECTED)) {
      expect((await ledger.get(id as never))!.receiptChain).toEqual(want.record.receiptChain);
      if (want.receipts.length) expect(await verifyOperation(ledger, id as never)).toEqual({ ok: true });
    }
    await ledger.close();
  });

  it('a layout-2 file whose receipt tail was deleted before the migration still shows the break after it', async () => {
    const path = copyOfFixture();
    const db = raw(path);
    db.prepare(`DELETE FROM retrysafe_receipts WHERE id = 'legacy-two' AND seq = 2`).run();
    db.close();
    const ledger = createSqliteLedger({ path });
    expect(await verifyOperation(ledger, 'legacy-two' as never)).toMatchObject({ ok: false, reason: 'the row anchors 2 receipt(s), the ledger holds 1' });
    await ledger.close();
  });

  it('a file from a newer layout is refused, typed, and left as it was', () => {
    const path = copyOfFixture();
    createSqliteLedger({ path }).close();
    const db = raw(path);
    db.exec('PRAGMA user_version = 7');
    db.close();
    expect(() => createSqliteLedger({ path })).toThrow(LedgerError);
    expect(() => createSqliteLedger({ path })).toThrow(/layout 7 is newer/);
    expect(tables(path).version).toBe(7);
  });

  it('a new file is layout 6 from the start; a clean operation costs well under the 2 kB of layout 2', async () => {
    const path = join(dir, 'fresh.db');
    const ledger = createSqliteLedger({ path });
    expect(tables(path)).toEqual({ version: 6, names: ['retrysafe_migrations', 'retrysafe_operations'] });
    expect(indexes(path)).toEqual(['retrysafe_operations_open', 'sqlite_autoindex_retrysafe_operations_1']);
    const provider = createSandboxProvider({ ...REPLAYING_BEHAVIOUR });
    const runner = createRunner({ ledger });
    const adapter = createSandboxAdapter({ provider });
    for (let i = 0; i < 20; i++) expect((await runner.run(adapter, 'records.create', { params: { ref: `fresh-${i}`, amount: 1 } })).status).toBe('done');
    const db = raw(path);
    const { bytes } = db.prepare('SELECT avg(length(body)) AS bytes FROM retrysafe_operations').get() as { bytes: number };
    db.close();
    expect(bytes).toBeLessThan(600);
    await ledger.close();
  });

  it('an open-rows index with the IN-list term (every file written before 2026-12) is replaced at open by the comparisons\' one, once; rows and answers are unchanged', async () => {
    const path = join(dir, `open-index-${n++}.db`);
    copyFileSync(FIXTURE_3, path);
    const indexSql = () => {
      const db = raw(path);
      try {
        return (db.prepare(`SELECT sql FROM sqlite_master WHERE name = 'retrysafe_operations_open'`).get() as { sql: string }).sql;
      } finally {
        db.close();
      }
    };
    expect(indexSql()).toMatch(/state NOT IN \('succeeded', 'rejected', 'abandoned'\)/);
    const db0 = raw(path);
    const openRows = (db: ReturnType<typeof raw>, term: string) => (db.prepare(`SELECT id FROM retrysafe_operations WHERE ${term} ORDER BY id`).all() as Array<{ id: string }>).map((r) => r.id);
    const before = openRows(db0, `state NOT IN ('succeeded', 'rejected', 'abandoned')`);
    db0.close();
    const ledger = createSqliteLedger({ path });
    expect(indexSql()).toMatch(/WHERE state <> 'succeeded' AND state <> 'rejected' AND state <> 'abandoned'$/);
    const db = raw(path);
    try {
      // The same rows by either term; the integrity check covers the rebuilt index.
      expect(openRows(db, `state <> 'succeeded' AND state <> 'rejected' AND state <> 'abandoned'`)).toEqual(before);
      expect(before.length).toBeGreaterThan(0);
      expect(db.prepare('PRAGMA integrity_check').get()).toEqual({ integrity_check: 'ok' });
    } finally {
      db.close();
    }
    expect((await ledger.list({ states: ['claimed', 'dispatched', 'unknown', 'in-progress', 'reconciling', 'handed-off'] })).map((r) => r.businessOperationId).sort()).toEqual(before);
    await ledger.close();
    const sql = indexSql();
    createSqliteLedger({ path }).close();
    expect(indexSql()).toBe(sql);
  });

  it('a layout-4 file (3583d5c: a created_at index, rowids in insertion order) opens as layout 6: rows renumbered into creation order, bodies and answers unchanged, the index gone', async () => {
    const path = join(dir, `legacy4-${n++}.db`);
    copyFileSync(FIXTURE_4, path);
    const bodies = () => bodiesOf(path);
    const before = bodies();
    expect(tables(path).version).toBe(4);
    expect(indexes(path)).toContain('retrysafe_operations_created');
    // Written going back in time: insertion order is the reverse of creation order.
    expect(rowOrder(path).map((r) => r.id)).toEqual(['legacy-ok', 'legacy-two', 'legacy-rejected', 'legacy-open']);
    let ledger = createSqliteLedger({ path });
    expect(tables(path).version).toBe(6);
    expect(indexes(path)).not.toContain('retrysafe_operations_created');
    expect(indexes(path)).toContain('retrysafe_operations_open');
    expect(bodies()).toEqual(before);
    const order = rowOrder(path);
    expect(order.map((r) => r.id)).toEqual(['legacy-open', 'legacy-rejected', 'legacy-two', 'legacy-ok']);
    for (const r of order) expect(r.b).toBe(Math.trunc(r.c));
    const db = raw(path);
    expect(db.prepare('PRAGMA integrity_check').get()).toEqual({ integrity_check: 'ok' });
    db.close();
    for (const [id, want] of Object.entries(EXPECTED_4)) {
      expect(await ledger.get(id as never)).toEqual(want.record);
      expect(JSON.stringify(await ledger.receipts(id as never))).toBe(JSON.stringify(want.receipts));
      if (want.receipts.length) expect(await verifyOperation(ledger, id as never)).toEqual({ ok: true });
    }
    expect((await ledger.list()).map((r) => r.businessOperationId)).toEqual(['legacy-open', 'legacy-rejected', 'legacy-two', 'legacy-ok']);
    expect((await ledger.list({ newestFirst: true, limit: 2 })).map((r) => r.businessOperationId)).toEqual(['legacy-ok', 'legacy-two']);
    expect((await ledger.list({ states: ['handed-off'] })).map((r) => r.businessOperationId)).toEqual(['legacy-two']);
    const cutoff = Math.max(EXPECTED_4['legacy-ok']!.record.updatedAt, EXPECTED_4['legacy-rejected']!.record.updatedAt) + 1;
    expect(await ledger.prune!({ before: cutoff, dryRun: true })).toEqual({ pruned: 2, byState: { succeeded: 1, rejected: 1 }, dryRun: true });
    // A new operation goes after them, in its own millisecond's bucket; a reopen changes nothing.
    const run = await createRunner({ ledger }).run(createSandboxAdapter({ provider: createSandboxProvider({ ...REPLAYING_BEHAVIOUR }) }), 'records.create', { params: { ref: 'after-layout-5', amount: 1 } });
    expect(run.status).toBe('done');
    await ledger.close();
    const after = rowOrder(path);
    expect(after.slice(0, 4)).toEqual(order);
    expect(after[4]!.b).toBe(Math.trunc(after[4]!.c));
    ledger = createSqliteLedger({ path });
    expect(rowOrder(path)).toEqual(after);
    expect(await ledger.prune!({ before: cutoff })).toEqual({ pruned: 2, byState: { succeeded: 1, rejected: 1 }, dryRun: false });
    expect((await ledger.list()).map((r) => r.businessOperationId)).toEqual(['legacy-open', 'legacy-two', run.businessOperationId]);
    await ledger.close();
  });

  it('a layout-5 file (0456045: bodies in format 2) opens as layout 6 with no row touched; its rows read back as that build read them and stay format 2 when written; new rows are format 3', async () => {
    const path = join(dir, `legacy5-${n++}.db`);
    copyFileSync(FIXTURE_5, path);
    const bodies = () => bodiesOf(path);
    const before = bodies();
    const order = rowOrder(path);
    expect(tables(path).version).toBe(5);
    expect(new Set(Object.values(before).map((b) => b.slice(0, 2)))).toEqual(new Set(['02']));
    let ledger = createSqliteLedger({ path });
    expect(tables(path)).toEqual({ version: 6, names: ['retrysafe_migrations', 'retrysafe_operations'] });
    // Not renumbered, not re-encoded.
    expect(bodies()).toEqual(before);
    expect(rowOrder(path)).toEqual(order);
    for (const [id, want] of Object.entries(EXPECTED_5)) {
      expect(await ledger.get(id as never)).toEqual(want.record);
      expect(JSON.stringify(await ledger.get(id as never))).toBe(JSON.stringify(want.record));
      expect(JSON.stringify(await ledger.receipts(id as never))).toBe(JSON.stringify(want.receipts));
      if (want.receipts.length) expect(await verifyOperation(ledger, id as never)).toEqual({ ok: true });
    }
    // A format 2 row with receipts, written: still format 2, its receipts' bytes kept (the same text, a verified chain).
    const resolved = await ledger.resolve('legacy-two' as never, { action: 'abandon', by: 'test' }, Date.now());
    expect(resolved.state).toBe('abandoned');
    expect(bodies()['legacy-two']!.slice(0, 2)).toBe('02');
    expect(JSON.stringify(await ledger.receipts('legacy-two' as never))).toBe(JSON.stringify(EXPECTED_5['legacy-two']!.receipts));
    expect(await verifyOperation(ledger, 'legacy-two' as never)).toEqual({ ok: true });
    // The open format 2 row: written twice (the second through the row this connection knows), then completed with a receipt.
    const open = EXPECTED_5['legacy-open']!.record;
    const ref = { businessOperationId: open.businessOperationId, fence: open.fence };
    await ledger.markDispatched(ref, open.createdAt + 1);
    await ledger.renewLease(ref, 60_000, open.createdAt + 2);
    const done = await ledger.setState(ref, { state: 'succeeded', lastOutcome: 'succeeded', result: { id: 'rec_open' }, providerRef: 'rec_open', now: open.createdAt + 3 });
    expect(bodies()['legacy-open']!.slice(0, 2)).toBe('02');
    expect(await ledger.get(open.businessOperationId)).toEqual(done);
    // A new operation is format 3, and a reopen changes nothing.
    const run = await createRunner({ ledger }).run(createSandboxAdapter({ provider: createSandboxProvider({ ...REPLAYING_BEHAVIOUR }) }), 'records.create', { params: { ref: 'after-layout-6', amount: 1 } });
    expect(run.status).toBe('done');
    expect(bodies()[run.businessOperationId]!.slice(0, 2)).toBe('03');
    expect(await verifyOperation(ledger, run.businessOperationId)).toEqual({ ok: true });
    await ledger.close();
    const after = bodies();
    ledger = createSqliteLedger({ path });
    expect(bodies()).toEqual(after);
    expect(tables(path).version).toBe(6);
    // The fixture's claims share one millisecond: listed by id within it.
    expect((await ledger.list()).map((r) => r.businessOperationId)).toEqual(['legacy-ok', 'legacy-open', 'legacy-rejected', 'legacy-two', run.businessOperationId]);
    await ledger.close();
  });

  it('lookups, listings, recovery and prune are served by indexes or the rowid, not table scans or sorts', async () => {
    const path = join(dir, 'plans.db');
    createSqliteLedger({ path }).close();
    const db = raw(path);
    try {
      const plan = (sql: string) => (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all() as Array<{ detail: string }>).map((r) => r.detail).join('\n');
      const open = `state <> 'succeeded' AND state <> 'rejected' AND state <> 'abandoned'`;
      expect(plan(`SELECT body FROM retrysafe_operations WHERE id = 'x'`)).toMatch(/USING INDEX sqlite_autoindex_retrysafe_operations_1/);
      // A listing reads the table in rowid order (its creation order): no sort, and a limit stops the scan.
      expect(plan(`SELECT rowid >> 20 AS b, body FROM retrysafe_operations ORDER BY rowid DESC LIMIT 100`)).toBe('SCAN retrysafe_operations');
      // Its last millisecond, read whole: a rowid range.
      expect(plan(`SELECT body FROM retrysafe_operations WHERE rowid >= CAST(5 AS INTEGER) * 1048576 AND rowid < (CAST(5 AS INTEGER) + 1) * 1048576`)).toMatch(/^SEARCH retrysafe_operations USING INTEGER PRIMARY KEY \(rowid>\? AND rowid<\?\)$/);
      expect(plan(`SELECT rowid >> 20 AS b, body FROM retrysafe_operations WHERE ${open} AND state IN ('handed-off') ORDER BY rowid DESC LIMIT 100`)).toMatch(/USING INDEX retrysafe_operations_open/);
      expect(plan(`SELECT body FROM retrysafe_operations WHERE ${open} AND state IN ('claimed', 'dispatched') AND (lease_expires_at IS NULL OR lease_expires_at <= 5) ORDER BY updated_at`)).toMatch(/USING INDEX retrysafe_operations_open/);
      // Retention walks the rowids below the cutoff's next millisecond, in order.
      expect(plan(`SELECT CAST(rowid AS TEXT) AS n, body FROM retrysafe_operations WHERE rowid < (CAST(5 AS INTEGER) + 1) * 1048576 AND rowid > CAST('-1' AS INTEGER) AND created_at < 5 AND updated_at < 5 AND state IN ('succeeded') ORDER BY rowid LIMIT 500`)).toMatch(/^SEARCH retrysafe_operations USING INTEGER PRIMARY KEY \(rowid>\? AND rowid<\?\)$/);
      // A claim finds its rowid by a search at the end of the table, not a scan.
      expect(plan(`SELECT max(rowid) + 1 FROM retrysafe_operations WHERE rowid >= 5 * 1048576 AND rowid < (5 + 1) * 1048576`)).toMatch(/^SEARCH retrysafe_operations USING INTEGER PRIMARY KEY \(rowid>\? AND rowid<\?\)$/);
    } finally {
      db.close();
    }
  });
});
