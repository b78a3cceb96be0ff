import {
  closeSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import {
  asBusinessOperationId,
  type ClaimInput,
  LeaseLostError,
  type Ledger,
  LedgerError,
  type OperationRecord,
  type ProviderKey,
  RetrysafeError,
} from '@retrysafe/contract';
import { createRunner } from '@retrysafe/core';
import { ledgerSuite } from '@retrysafe/testkit/ledger';
import { afterAll, describe, expect, it } from 'vitest';
import { createSqliteLedger } from '../src/index.js';
import { receiptOf } from './helpers.js';
import { editStored } from './sqlite-tamper.js';

type SqliteLedger = ReturnType<typeof createSqliteLedger>;

const dir = mkdtempSync(join(tmpdir(), 'retrysafe-sqlite-'));
let n = 0;
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A second, raw connection to a ledger file (what another process, or a person with sqlite3, would hold). */
const raw = (path: string) => new DatabaseSync(path);

const claim = (name: string, over: Partial<ClaimInput> = {}): ClaimInput => ({
  businessOperationId: asBusinessOperationId(name),
  provider: 'p',
  operation: 'p.op',
  intentFingerprint: 'i',
  paramsFingerprint: 'f',
  params: { x: 1, pad: 'x'.repeat(200) },
  providerKey: `k-${name}` as ProviderKey,
  owner: 'w',
  leaseMs: 1000,
  now: 1,
  ...over,
});

/** A driver error escaping the ledger (SqliteError, node:sqlite's ERR_SQLITE_ERROR, a SyntaxError) is not typed. */
const typedLedgerError = (err: unknown) => LedgerError.isInstance(err) && RetrysafeError.isInstance(err);

/** The error of a recover() report for a row the ledger could not read: a typed LedgerError, never SyntaxError. */
const unreadableError = expect.objectContaining({ name: 'LedgerError', code: 'RETRYSAFE_LEDGER' });

describe('sqlite ledger', () => {
  const file = (name: string) => join(dir, `${name}-${++n}.db`);
  /** A ledger on a new file with `id` claimed and dispatched; the ledger is closed after `test`. */
  const withClaimed = async (
    name: string,
    id: string,
    test: (ledger: Ledger, claimed: OperationRecord, path: string) => Promise<void>,
  ) => {
    const path = file(name);
    const ledger = createSqliteLedger({ path });
    try {
      const c = await ledger.claim(claim(id, { dispatch: true }));
      if (c.kind !== 'claimed') throw new Error(c.kind);
      await test(ledger, c.record, path);
    } finally {
      await ledger.close();
    }
  };

  let suitePath = '';
  ledgerSuite({
    name: 'sqlite',
    create() {
      suitePath = file('suite');
      return createSqliteLedger({ path: suitePath });
    },
    async corrupt(_, id) {
      const db = raw(suitePath);
      db.prepare('UPDATE retrysafe_operations SET record = substr(record, 1, 30) WHERE id = ?').run(id);
      db.close();
    },
  });

  it('keeps records and receipts across close and reopen (durable file, WAL)', async () => {
    const path = file('reopen');
    const a = createSqliteLedger({ path });
    const id = asBusinessOperationId('reopen-1');
    const c = await a.claim(claim('reopen-1', { params: { x: 1 } }));
    if (c.kind !== 'claimed') throw new Error('claim failed');
    await a.markDispatched({ businessOperationId: id, fence: 1 }, 2);
    await a.close();
    const b = createSqliteLedger({ path });
    expect(await b.get(id)).toMatchObject({
      state: 'dispatched',
      attemptCount: 1,
      firstDispatchedAt: 2,
      params: { x: 1 },
    });
    expect((await b.recoverCandidates(5000)).map((r) => r.businessOperationId)).toEqual([id]);
    await b.close();
  });

  it('bad options and unopenable files are typed errors', () => {
    expect(() => createSqliteLedger({ path: '' })).toThrow(LedgerError);
    expect(() => createSqliteLedger({ path: file('x'), synchronous: 'OFF' as 'FULL' })).toThrow(LedgerError);
    expect(() => createSqliteLedger({ path: join(dir, 'no', 'such', 'dir', 'x.db') })).toThrow(LedgerError);
  });

  it("migrate: false refuses a file that holds no ledger (another application's, an empty one) and writes nothing to it", async () => {
    const path = file('foreign');
    const other = raw(path);
    other.exec('CREATE TABLE notes (body TEXT)');
    other.close();
    const before = readFileSync(path);
    expect(() => createSqliteLedger({ path, migrate: false })).toThrow(/holds no retrysafe ledger of schema version 1/);
    expect(() => createSqliteLedger({ path, migrate: false })).toThrow(
      expect.objectContaining({ reason: 'not-a-ledger' }),
    );
    expect(readFileSync(path).equals(before)).toBe(true);
    expect(readdirSync(dir).filter((f) => f.startsWith(basename(path)))).toEqual([basename(path)]);
    await createSqliteLedger({ path }).close(); // the default creates it
    await createSqliteLedger({ path, migrate: false }).close();
  });

  it("a path in a folder that does not exist says so (SQLite's own words are 'unable to open database file')", () => {
    expect(() => createSqliteLedger({ path: 'no-such-folder/retrysafe.db' })).toThrow(
      'cannot open SQLite ledger at no-such-folder/retrysafe.db: the folder no-such-folder does not exist (the ledger creates its file, not its folder)',
    );
  });

  it.skipIf(!existsProcFd())('a failed open closes its file: 50 failed opens leave no descriptor behind', () => {
    const path = file('not-a-db');
    writeFileSync(path, 'this is not an SQLite database, only text. '.repeat(200));
    const before = openFds(path);
    for (let i = 0; i < 50; i++) expect(() => createSqliteLedger({ path })).toThrow(LedgerError);
    expect(openFds(path)).toBe(before);
  });

  it("waits for another connection's write lock asynchronously: the event loop runs, the claim then succeeds", async () => {
    const path = file('busy');
    const ledger = createSqliteLedger({ path, busyTimeoutMs: 30_000 });
    const other = raw(path);
    other.exec('BEGIN IMMEDIATE');
    let released = false;
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 1);
    // Released from a timer: it can only fire if the waiting claim leaves the event loop free.
    setTimeout(() => {
      other.exec('COMMIT');
      released = true;
    }, 30);
    try {
      const r = await ledger.claim(claim('busy-1'));
      expect(r.kind).toBe('claimed');
      expect(released).toBe(true);
      expect(ticks).toBeGreaterThan(0);
    } finally {
      clearInterval(ticker);
      other.close();
      await ledger.close();
    }
  });

  it('prune with an export on a ledger another connection holds locked past busyTimeoutMs: a LedgerError before anything is exported, nothing deleted', async () => {
    const path = file('prune-locked');
    const ledger = createSqliteLedger({ path, busyTimeoutMs: 40 });
    const other = raw(path);
    try {
      const c = await ledger.claim(claim('prune-l1', { dispatch: true }));
      if (c.kind !== 'claimed') throw new Error(c.kind);
      await ledger.setState(c.record, { state: 'succeeded', lastOutcome: 'succeeded', now: 2 });
      const exported: string[] = [];
      other.exec('BEGIN IMMEDIATE');
      try {
        const err = await ledger.prune!({
          before: 100,
          onPrune: (r) => void exported.push(r.businessOperationId),
        }).catch((e: unknown) => e);
        expect(typedLedgerError(err), String(err)).toBe(true);
        expect(err).toMatchObject({ reason: 'busy' });
        // An export of what was then not deleted would be written again by the next prune, to another file.
        expect(exported).toEqual([]);
      } finally {
        other.exec('ROLLBACK');
      }
      expect(await ledger.get(c.record.businessOperationId)).toMatchObject({ state: 'succeeded' });
      expect(
        (await ledger.prune!({ before: 100, onPrune: (r) => void exported.push(r.businessOperationId) })).pruned,
      ).toBe(1);
      expect(exported).toEqual(['prune-l1']);
    } finally {
      other.close();
      await ledger.close();
    }
  });

  it("a known row's write waits for another connection's lock asynchronously, then stores; past busyTimeoutMs it is a LedgerError with nothing written", async () => {
    const path = file('busy-known');
    const ledger = createSqliteLedger({ path, busyTimeoutMs: 30_000 });
    const other = raw(path);
    try {
      const c = await ledger.claim(claim('busy-k1', { dispatch: true }));
      if (c.kind !== 'claimed') throw new Error(c.kind);
      other.exec('BEGIN IMMEDIATE');
      let ticks = 0;
      const ticker = setInterval(() => ticks++, 1);
      setTimeout(() => other.exec('COMMIT'), 30);
      try {
        const s = await ledger.setState(c.record, {
          state: 'succeeded',
          lastOutcome: 'succeeded',
          now: 2,
          durability: 'deferrable',
        });
        expect(s).toMatchObject({ state: 'succeeded' });
        expect(ticks).toBeGreaterThan(0);
      } finally {
        clearInterval(ticker);
      }
      // Past a short busyTimeoutMs: the ledger that knows the row (its lone UPDATE) and one that reads it first.
      const quick = createSqliteLedger({ path, busyTimeoutMs: 40 });
      const reader = createSqliteLedger({ path, busyTimeoutMs: 40 });
      const c2 = await quick.claim(claim('busy-k2', { dispatch: true }));
      if (c2.kind !== 'claimed') throw new Error(c2.kind);
      other.exec('BEGIN IMMEDIATE');
      try {
        for (const l of [quick, reader]) {
          const err = await l
            .setState(c2.record, { state: 'succeeded', lastOutcome: 'succeeded', now: 3 })
            .catch((e: unknown) => e);
          expect(typedLedgerError(err)).toBe(true);
          expect((err as Error).message).toMatch(/locked|busy/i);
        }
      } finally {
        other.exec('ROLLBACK');
        await quick.close();
        await reader.close();
      }
      expect(await ledger.get(c2.record.businessOperationId)).toMatchObject({ state: 'dispatched' });
    } finally {
      other.close();
      await ledger.close();
    }
  });

  it('a clean operation runs two write statements, each its own transaction (no BEGIN, COMMIT or read), and its deferred completion two pragmas around the second', async () => {
    type Proto = {
      exec(this: unknown, sql: string): unknown;
      prepare(this: unknown, sql: string): Record<string, (...a: unknown[]) => unknown>;
    };
    const proto = DatabaseSync.prototype as unknown as Proto;
    const { exec, prepare } = proto;
    const ran: string[] = [];
    proto.exec = function (sql) {
      ran.push(sql);
      return exec.call(this, sql);
    };
    proto.prepare = function (sql) {
      const st = prepare.call(this, sql);
      const wrapped: Record<string, (...a: unknown[]) => unknown> = {};
      for (const m of ['run', 'get', 'all'])
        wrapped[m] = (...a: unknown[]) => (
          ran.push(`${m}: ${sql.trim().split(/\s+/).slice(0, 3).join(' ')}`), st[m]!(...a)
        );
      return wrapped;
    };
    let ledger: SqliteLedger | undefined;
    try {
      ledger = createSqliteLedger({ path: file('statements') });
      ran.length = 0;
      const c = await ledger.claim(claim('st-1', { dispatch: true }));
      if (c.kind !== 'claimed') throw new Error(c.kind);
      await ledger.setState(c.record, {
        state: 'succeeded',
        lastOutcome: 'succeeded',
        now: 2,
        durability: 'deferrable',
      });
    } finally {
      proto.exec = exec;
      proto.prepare = prepare;
      await ledger?.close();
    }
    expect(ran).toEqual([
      'run: INSERT INTO retrysafe_operations',
      'PRAGMA synchronous = NORMAL',
      'run: UPDATE retrysafe_operations SET',
      'PRAGMA synchronous = FULL',
    ]);
  });

  it('stores the record and its receipts as JSON text: what get and receipts answer, and the searchable columns beside them', async () => {
    const path = file('json');
    const ledger = createSqliteLedger({ path });
    const stored = (id: string) => {
      const other = raw(path);
      try {
        return other
          .prepare('SELECT state, fence, lease_expires_at, record, receipts FROM retrysafe_operations WHERE id = ?')
          .get(id) as {
          state: string;
          fence: number;
          lease_expires_at: number | null;
          record: string;
          receipts: string | null;
        };
      } finally {
        other.close();
      }
    };
    const receipt = (r: { businessOperationId: string }, seq: number, prevHash: string | null) =>
      receiptOf(r.businessOperationId, seq, prevHash, 'é \ud800 1e21');
    try {
      const c = await ledger.claim(claim('json-1', { dispatch: true }));
      if (c.kind !== 'claimed') throw new Error(c.kind);
      expect(stored('json-1')).toMatchObject({
        state: 'dispatched',
        fence: 1,
        lease_expires_at: c.record.leaseExpiresAt,
        receipts: null,
      });
      expect(JSON.parse(stored('json-1').record)).toEqual(await ledger.get(asBusinessOperationId('json-1')));
      await ledger.appendReceipt(c.record, receipt(c.record, 1, null));
      const done = await ledger.setState(c.record, {
        state: 'succeeded',
        lastOutcome: 'succeeded',
        result: { id: 'r1', pad: 'y'.repeat(200) },
        providerRef: 'r1',
        now: 2,
        receipt: receipt(c.record, 2, '1'.repeat(64)),
      });
      const row = stored('json-1');
      expect(row).toMatchObject({ state: 'succeeded', lease_expires_at: null });
      expect(JSON.parse(row.record)).toEqual(done);
      expect(row.receipts).toBe(JSON.stringify([receipt(c.record, 1, null), receipt(c.record, 2, '1'.repeat(64))]));
      expect(await ledger.receipts(asBusinessOperationId('json-1'))).toEqual(JSON.parse(row.receipts!));
    } finally {
      await ledger.close();
    }
  });

  it('fenced writes answer promises, never throw: a patch that cannot be read is a rejection; a completion answers the record it stored', async () => {
    await withClaimed('promises', 'prom-1', async (ledger, claimed) => {
      const bad = ledger.setState(claimed, null as never);
      expect(bad).toBeInstanceOf(Promise);
      await expect(bad).rejects.toThrow(TypeError);
      const odd = ledger.markDispatched(null as never, 1);
      expect(odd).toBeInstanceOf(Promise);
      await expect(odd).rejects.toThrow();
      const done = ledger.setState(claimed, {
        state: 'succeeded',
        lastOutcome: 'succeeded',
        result: { id: 'r1' },
        providerRef: 'r1',
        now: 2,
        durability: 'deferrable',
      });
      expect(done).toBeInstanceOf(Promise);
      expect(await done).toEqual(await ledger.get(asBusinessOperationId('prom-1')));
    });
  });

  it('a stored record with a byte changed: get, list and writes give LedgerError, not a wrong record', async () => {
    await withClaimed('flip', 'flip-1', async (ledger, claimed, path) => {
      const other = raw(path);
      const { record } = other.prepare('SELECT record FROM retrysafe_operations WHERE id = ?').get('flip-1') as {
        record: string;
      };
      // The quote that opens the first key becomes another character.
      other.prepare('UPDATE retrysafe_operations SET record = ? WHERE id = ?').run(`{'${record.slice(2)}`, 'flip-1');
      other.close();
      const errors = await Promise.all([
        ledger.get(asBusinessOperationId('flip-1')).catch((e: unknown) => e),
        ledger.list().catch((e: unknown) => e),
        ledger.markDispatched(claimed, 3).catch((e: unknown) => e),
      ]);
      for (const e of errors) {
        expect(typedLedgerError(e)).toBe(true);
        expect((e as Error).message).toMatch(/cut or corrupt/);
      }
    });
  });

  it('a lock held past busyTimeoutMs is a LedgerError, and nothing was written', async () => {
    const path = file('busy-timeout');
    const ledger = createSqliteLedger({ path, busyTimeoutMs: 40 });
    const other = raw(path);
    other.exec('BEGIN IMMEDIATE');
    try {
      let turns = 0;
      let t: NodeJS.Immediate;
      const spin = () => {
        turns++;
        t = setImmediate(spin);
      };
      t = setImmediate(spin);
      const err = await ledger.claim(claim('busy-2')).catch((e: unknown) => e);
      clearImmediate(t);
      expect(typedLedgerError(err)).toBe(true);
      expect((err as Error).message).toMatch(/locked|busy/i);
      // What a person at the CLI needs: it was a lock held elsewhere, for how long it waited, and that nothing was written.
      expect((err as Error).message).toMatch(
        /held the write lock longer than busyTimeoutMs \(40 ms\): nothing was written/,
      );
      expect(turns).toBeGreaterThan(0);
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
    expect(await ledger.get(asBusinessOperationId('busy-2'))).toBeNull();
    await ledger.close();
  });

  it('a file another connection holds locked past busyTimeoutMs at open: a LedgerError saying so, nothing written', async () => {
    const path = file('busy-open');
    await createSqliteLedger({ path }).close();
    const other = raw(path);
    other.exec('PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE; UPDATE retrysafe_operations SET state = state');
    try {
      for (const migrate of [true, false]) {
        const err = (() => {
          try {
            createSqliteLedger({ path, busyTimeoutMs: 40, migrate });
          } catch (e) {
            return e;
          }
        })();
        expect(typedLedgerError(err)).toBe(true);
        expect((err as Error).message).toMatch(
          /another connection held its lock longer than busyTimeoutMs \(40 ms\): nothing was written/,
        );
        expect(err).toMatchObject({ reason: 'busy' });
      }
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
  });

  it("a corrupt file: recover() and every read give LedgerError, not the driver's error", async () => {
    const path = file('corrupt');
    const a = createSqliteLedger({ path });
    for (let i = 0; i < 60; i++) await a.claim(claim(`corrupt-${i}`, { dispatch: true }));
    await a.close();
    // Keep page 1 (header and schema), overwrite the table and index pages with garbage.
    const size = statSync(path).size;
    expect(size).toBeGreaterThan(3 * 4096);
    const fd = openSync(path, 'r+');
    writeSync(fd, Buffer.alloc(size - 4096, 0xa5), 0, size - 4096, 4096);
    closeSync(fd);
    const b = createSqliteLedger({ path });
    const errors = await Promise.all([
      b.recoverCandidates(10_000).catch((e: unknown) => e),
      b.get(asBusinessOperationId('corrupt-1')).catch((e: unknown) => e),
      b.list().catch((e: unknown) => e),
      b.claim(claim('corrupt-new')).catch((e: unknown) => e),
      createRunner({ ledger: b })
        .recover({ adapters: [] })
        .catch((e: unknown) => e),
    ]);
    for (const e of errors) expect(typedLedgerError(e), String(e)).toBe(true);
    await b.close();
  });

  it('a record whose JSON is cut: get, list, recover and writes give LedgerError, not SyntaxError', async () => {
    const path = file('cut');
    const a = createSqliteLedger({ path });
    const id = asBusinessOperationId('cut-1');
    await a.claim(claim('cut-1'));
    const other = raw(path);
    // The stored record's JSON cut at 40 characters.
    editStored(other, 'cut-1', (l) => ({ ...l, record: l.record.slice(0, 40) }));
    other.exec(`UPDATE retrysafe_operations SET lease_expires_at = NULL WHERE id = 'cut-1'`);
    other.close();
    const errors = await Promise.all([
      a.get(id).catch((e: unknown) => e),
      a.list().catch((e: unknown) => e),
      a.recoverCandidates(10_000).catch((e: unknown) => e),
      a.markDispatched({ businessOperationId: id, fence: 1 }, 5).catch((e: unknown) => e),
      a.claim(claim('cut-1', { now: 10_000 })).catch((e: unknown) => e),
    ]);
    for (const e of errors) expect(typedLedgerError(e), String(e)).toBe(true);
    expect((errors[0] as Error).message).toMatch(/not valid JSON/);
    // recover() reports the row it cannot read (the same LedgerError) instead of failing every other row with it.
    expect(await createRunner({ ledger: a }).recover({ adapters: [] })).toEqual([
      expect.objectContaining({ businessOperationId: id, action: 'failed', error: unreadableError }),
    ]);
    await a.close();
  });

  it('a stored record that is JSON null is a LedgerError for get, claim and recover, never an absent row a new claim writes over', async () => {
    const path = file('null-record');
    const a = createSqliteLedger({ path });
    try {
      const c = await a.claim(claim('null-1', { dispatch: true }));
      if (c.kind !== 'claimed') throw new Error(c.kind);
      const other = raw(path);
      editStored(other, 'null-1', (l) => ({ ...l, record: 'null' }));
      other.exec(`UPDATE retrysafe_operations SET lease_expires_at = NULL WHERE id = 'null-1'`);
      other.close();
      const errors = await Promise.all([
        a.get(asBusinessOperationId('null-1')).catch((e: unknown) => e),
        a.claim(claim('null-1', { now: 10_000 })).catch((e: unknown) => e),
        a.list().catch((e: unknown) => e),
      ]);
      for (const e of errors) expect(typedLedgerError(e), String(e)).toBe(true);
      // recover() reports the row it cannot read (the same LedgerError) instead of failing every other row with it.
      expect(await createRunner({ ledger: a }).recover({ adapters: [] })).toEqual([
        expect.objectContaining({ businessOperationId: 'null-1', action: 'failed', error: unreadableError }),
      ]);
      const left = raw(path);
      const row = left.prepare('SELECT record FROM retrysafe_operations WHERE id = ?').get('null-1') as {
        record: string;
      };
      left.close();
      expect(row.record).toBe('null');
    } finally {
      await a.close();
    }
  });

  it('receipts stored as JSON that is not an array (an edit from outside) are a LedgerError for reads and appends, and no append is written onto them', async () => {
    const path = file('receipts-not-array');
    const a = createSqliteLedger({ path });
    try {
      for (const text of ['null', '{}', '"x"']) {
        const name = `rna-${text.length}`;
        const c = await a.claim(claim(name, { dispatch: true }));
        if (c.kind !== 'claimed') throw new Error(c.kind);
        await a.appendReceipt(c.record, receiptOf(name, 1));
        const other = raw(path);
        other.prepare('UPDATE retrysafe_operations SET receipts = ? WHERE id = ?').run(text, name);
        const errors = await Promise.all([
          a.receipts(asBusinessOperationId(name)).catch((e: unknown) => e),
          a.appendReceipt(c.record, receiptOf(name, 2, '1'.repeat(64))).catch((e: unknown) => e),
          a
            .setState(c.record, { state: 'unknown', now: 2, receipt: receiptOf(name, 2, '1'.repeat(64)) })
            .catch((e: unknown) => e),
        ]);
        for (const e of errors) expect(typedLedgerError(e), `${text}: ${String(e)}`).toBe(true);
        const row = other.prepare('SELECT receipts FROM retrysafe_operations WHERE id = ?').get(name) as {
          receipts: string;
        };
        other.close();
        expect(row.receipts).toBe(text);
      }
    } finally {
      await a.close();
    }
  });

  // A claim tries the INSERT first, and a fenced write computes on the row this connection last stored,
  // written only while the row holds that text (else the row is read first).
  const id = asBusinessOperationId;
  const done = (now: number) => ({
    state: 'succeeded' as const,
    lastOutcome: 'succeeded' as const,
    result: { id: 'r' },
    providerRef: 'r',
    now,
  });

  it('a claim of an id that has a row answers what that row says, even when the new claim could not be stored (its params throw)', async () => {
    const ledger = createSqliteLedger({ path: file('claim-first') });
    try {
      expect((await ledger.claim(claim('cf-1'))).kind).toBe('claimed');
      const unstorable = { n: 10n } as unknown as ClaimInput['params'];
      expect((await ledger.claim(claim('cf-1', { params: unstorable, now: 2 }))).kind).toBe('busy');
      expect(
        await ledger.claim(claim('cf-1', { intentFingerprint: 'other', params: unstorable, now: 2 })),
      ).toMatchObject({ kind: 'conflict', field: 'intent' });
      // A new id with those params: the encoder's refusal, typed, and no row.
      const err = await ledger.claim(claim('cf-2', { params: unstorable })).catch((e: unknown) => e);
      expect(typedLedgerError(err)).toBe(true);
      expect((err as Error).message).toMatch(/BigInt/);
      expect(await ledger.get(id('cf-2'))).toBeNull();
      // An invalid claim input is refused as before, row or no row.
      await expect(ledger.claim(claim('cf-1', { leaseMs: 0 }))).rejects.toThrow(/leaseMs/);
      await expect(ledger.claim(claim('cf-3', { leaseMs: 0 }))).rejects.toThrow(/leaseMs/);
    } finally {
      await ledger.close();
    }
  });

  /** Two ledgers (two connections) on one new file, closed after `body`. */
  const twoLedgers = async (name: string, body: (a: SqliteLedger, b: SqliteLedger, path: string) => Promise<void>) => {
    const path = file(name);
    const a = createSqliteLedger({ path });
    const b = createSqliteLedger({ path });
    try {
      await body(a, b, path);
    } finally {
      await a.close();
      await b.close();
    }
  };

  it('a row taken over through another connection since this one wrote it: the old fence is refused, exactly as before', () =>
    twoLedgers('known-takeover', async (a, b) => {
      const c = await a.claim(claim('kt-1', { dispatch: true, leaseMs: 10 }));
      if (c.kind !== 'claimed') throw new Error(c.kind);
      const t = await b.claim(claim('kt-1', { now: 100 }));
      expect(t).toMatchObject({ kind: 'claimed', takenOver: true, record: { fence: 2 } });
      await expect(a.setState(c.record, done(101))).rejects.toSatisfy(LeaseLostError.isInstance);
      await expect(a.markDispatched(c.record, 102)).rejects.toSatisfy(LeaseLostError.isInstance);
      await expect(a.appendReceipt(c.record, receiptOf('kt-1', 1))).rejects.toSatisfy(LeaseLostError.isInstance);
      expect(await a.get(id('kt-1'))).toEqual(t.kind === 'claimed' ? t.record : null);
      // The new holder's write through a, which never wrote fence 2, is accepted.
      expect(await a.setState({ businessOperationId: id('kt-1'), fence: 2 }, done(103))).toMatchObject({
        state: 'succeeded',
        fence: 2,
      });
    }));

  it('writes to the row by another connection or an operator since this one wrote it (same fence) are kept: the next write starts from them', () =>
    twoLedgers('known-same-fence', async (a, b, path) => {
      const ref = { businessOperationId: id('ks-1'), fence: 1 };
      await a.claim(claim('ks-1', { dispatch: true }));
      await b.markDispatched(ref, 5);
      expect(await a.markDispatched(ref, 6)).toMatchObject({ attemptCount: 3, updatedAt: 6 });
      await b.appendReceipt(ref, receiptOf('ks-1', 1));
      // a last stored no receipt: seq 1 is not the next one any more, and b's receipt stays.
      await expect(a.appendReceipt(ref, receiptOf('ks-1', 1))).rejects.toSatisfy(LedgerError.isInstance);
      expect((await a.receipts(id('ks-1'))).map((r) => r.seq)).toEqual([1]);
      await a.markDispatched(ref, 7);
      // An operator's edit with sqlite3 (the record's JSON, columns untouched).
      const other = raw(path);
      editStored(other, 'ks-1', (l) => ({
        ...l,
        record: JSON.stringify({ ...JSON.parse(l.record), attemptCount: 40 }),
      }));
      other.close();
      const m = await a.markDispatched(ref, 8);
      expect(m).toMatchObject({ attemptCount: 41, receiptChain: { length: 1 } });
      expect(await b.get(id('ks-1'))).toEqual(m);
      expect((await b.receipts(id('ks-1'))).map((r) => r.seq)).toEqual([1]);
    }));

  it("records it hands out are the caller's: changing them, or the claim's params, changes nothing stored or computed next", async () => {
    const path = file('known-alias');
    const a = createSqliteLedger({ path });
    const ref = { businessOperationId: id('al-1'), fence: 1 };
    try {
      const input = claim('al-1', { dispatch: true, params: { x: 1, nested: { y: [1, 2] } } });
      const c = await a.claim(input);
      if (c.kind !== 'claimed') throw new Error(c.kind);
      (c.record as { attemptCount: number }).attemptCount = 50;
      (input.params as { nested: { y: number[] } }).nested.y.push(3);
      const m = await a.markDispatched(ref, 3);
      expect(m).toMatchObject({ attemptCount: 2, params: { x: 1, nested: { y: [1, 2] } } });
      (m as { fence: number }).fence = 9;
      (m.params as { x: unknown }).x = 'changed';
      const r = await a.renewLease(ref, 1000, 4);
      expect(r).toBeUndefined();
      const s = await a.setState(ref, done(5));
      expect(s).toMatchObject({
        state: 'succeeded',
        fence: 1,
        attemptCount: 2,
        params: { x: 1, nested: { y: [1, 2] } },
      });
      const fresh = createSqliteLedger({ path });
      expect(await fresh.get(id('al-1'))).toEqual(s);
      await fresh.close();
    } finally {
      await a.close();
    }
  });

  it('every call answers and stores exactly what a connection that keeps nothing (a fresh one per call) answers and stores', async () => {
    const keptPath = file('known-same');
    const kept = createSqliteLedger({ path: keptPath });
    const freshPath = file('known-fresh');
    const each = async <T>(call: (l: Ledger) => Promise<T>): Promise<T> => {
      const l = createSqliteLedger({ path: freshPath });
      try {
        return await call(l);
      } finally {
        await l.close();
      }
    };
    const odd = {
      at: new Date(0),
      u: undefined,
      n: Number.NaN,
      z: -0,
      list: [1, undefined],
      s: 'é \ud800',
      deep: { k: [{ a: null }] },
    } as unknown as ClaimInput['params'];
    const steps: Array<(l: Ledger) => Promise<unknown>> = [];
    for (const [name, params] of [
      ['plain', { x: 1, list: [1, 2], s: 'é' }],
      ['odd', odd],
    ] as const) {
      const ref = { businessOperationId: id(`eq-${name}`), fence: 1 };
      const ref2 = { businessOperationId: id(`eq-${name}`), fence: 2 };
      steps.push(
        (l) => l.claim(claim(`eq-${name}`, { dispatch: true, params: params as ClaimInput['params'], leaseMs: 10 })),
        (l) => l.markDispatched(ref, 3),
        (l) => l.renewLease(ref, 10, 4),
        (l) => l.appendReceipt(ref, receiptOf(`eq-${name}`, 1)),
        (l) => l.markDispatched(ref, 5),
        (l) => l.claim(claim(`eq-${name}`, { now: 6 })), // busy
        (l) => l.claim(claim(`eq-${name}`, { now: 100 })), // takeover: fence 2
        (l) => l.markDispatched(ref, 101).catch((e: unknown) => (e as Error).name),
        (l) => l.setState(ref2, { state: 'reconciling', now: 102 }),
        (l) =>
          l.handOff(
            ref2,
            {
              reason: 'r',
              question: 'q',
              safeNextActions: [{ action: 'abandon', safe: true, why: 'w' }],
              createdAt: '2026-12-01T00:00:00.000Z',
            } as never,
            103,
            receiptOf(`eq-${name}`, 2),
          ),
        (l) =>
          l
            .resolve(id(`eq-${name}`), { action: 'abandon', by: 'op', reason: 'r' } as never, 104)
            .catch((e: unknown) => (e as Error).name),
        (l) => l.get(id(`eq-${name}`)),
        (l) => l.receipts(id(`eq-${name}`)),
      );
    }
    try {
      for (const step of steps) {
        const [x, y] = [
          await step(kept).catch((e: unknown) => `error ${(e as Error).name}: ${(e as Error).message}`),
          await each(step).catch((e: unknown) => `error ${(e as Error).name}: ${(e as Error).message}`),
        ];
        expect(JSON.stringify(x)).toBe(JSON.stringify(y));
        expect(x).toEqual(y);
      }
    } finally {
      await kept.close();
    }
    const bodies = (path: string) => {
      const other = raw(path);
      try {
        return ['eq-plain', 'eq-odd'].map((k) =>
          other
            .prepare(
              'SELECT state, fence, lease_expires_at, created_at, updated_at, record, receipts FROM retrysafe_operations WHERE id = ?',
            )
            .get(k),
        );
      } finally {
        other.close();
      }
    };
    expect(bodies(keptPath)).toEqual(bodies(freshPath));
  });
});

function existsProcFd(): boolean {
  try {
    readdirSync('/proc/self/fd');
    return true;
  } catch {
    return false;
  }
}

/** Descriptors of this process open on `path` (Linux /proc). */
function openFds(path: string): number {
  let count = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`) === path) count++;
    } catch {
      /* closed meanwhile */
    }
  }
  return count;
}
