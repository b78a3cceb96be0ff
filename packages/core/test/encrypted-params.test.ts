import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { asBusinessOperationId, fingerprint, LedgerError, type ProviderKey } from '@retrysafe/contract';
import {
  createMemoryLedger,
  createRunner,
  createVirtualClock,
  encryptParams,
  pruneLedger,
  RunnerConfigurationError,
} from '@retrysafe/core';
import { createSqliteLedger } from '@retrysafe/ledger-sqlite';
import { createSandboxAdapter, createSandboxProvider, REPLAYING_BEHAVIOUR } from '@retrysafe/sandbox';
import { afterAll, describe, expect, it } from 'vitest';
import { sandboxOn } from './helpers.js';

// Issue 18: params are kept for resume and recovery; with encryptParams they are stored as
// AES-256-GCM ciphertext under a user-supplied key. The shared suite runs through the wrapper
// (packages/testkit/test/ledger-memory.test.ts).
const KEY = { id: 'p1', secret: 'a-32-byte-secret-for-the-params!' };

const dir = mkdtempSync(join(tmpdir(), 'retrysafe-enc-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const fileText = (d: string) =>
  readdirSync(d)
    .map((f) => readFileSync(join(d, f)).toString('latin1'))
    .join('');
/** What the file holds, as someone with sqlite3 would read it: its bytes and every row's record and receipts. */
function storedText(d: string, path: string): string {
  const db = new DatabaseSync(path);
  try {
    const rows = (
      db.prepare('SELECT record, receipts FROM retrysafe_operations').all() as Array<{
        record: string;
        receipts: string | null;
      }>
    ).map((r) => `${r.record}\n${r.receipts ?? ''}`);
    return fileText(d) + rows.join('\n');
  } finally {
    db.close();
  }
}

describe('params encrypted at rest', () => {
  it('the SQLite file never holds the params in clear; resume after a handoff re-sends them (one record); the wrong key cannot read them', async () => {
    const SECRET_PARAM = 'IBAN-DE89370400440532013000-canary';
    const path = join(dir, 'enc.db');
    const clock = createVirtualClock();
    const provider = createSandboxProvider({
      ...REPLAYING_BEHAVIOUR,
      lookup: 'none',
      clock: clock.now,
      sleep: clock.sleep,
    });
    const adapter = createSandboxAdapter({ provider });
    const ledger = encryptParams(createSqliteLedger({ path }), { key: KEY });
    const runner = createRunner({ ledger, clock, policy: { maxAttempts: 2 } });
    // Every answer lost, no lookup: handed off with the record at the provider.
    provider.failNext({ kind: 'unknown-after-commit' }, 2);
    const params = { ref: 'enc-1', note: SECRET_PARAM };
    const r = await runner.run(adapter, 'records.create', { params });
    expect(r.status).toBe('handed-off');
    expect((await ledger.get(r.businessOperationId))!.params).toEqual(params);
    await ledger.close();
    expect(storedText(dir, path)).not.toContain(SECRET_PARAM);
    expect(storedText(dir, path)).toContain('aes-256-gcm/v1');

    const wrong = encryptParams(createSqliteLedger({ path }), {
      key: { id: 'p1', secret: 'another-secret-of-enough-bytes!!' },
    });
    await expect(wrong.get(r.businessOperationId)).rejects.toSatisfy(
      (e: unknown) => LedgerError.isInstance(e) && /do not decrypt/.test((e as Error).message),
    );
    await wrong.close();
    const rotatedAway = encryptParams(createSqliteLedger({ path }), {
      key: { id: 'p2', secret: 'the-next-key-after-rotation-0000' },
    });
    await expect(rotatedAway.get(r.businessOperationId)).rejects.toThrow(/key 'p1', which this process does not hold/);
    await rotatedAway.close();

    // After a rotation, with the old key kept as previous: the row reads, and resume re-sends the same params.
    const rotated = encryptParams(createSqliteLedger({ path }), {
      key: { id: 'p2', secret: 'the-next-key-after-rotation-0000' },
      previous: [KEY],
    });
    const stored = await rotated.get(r.businessOperationId);
    expect(stored!.params).toEqual(params);
    expect(stored!.state).toBe('handed-off');
    const resumed = await createRunner({ ledger: rotated, clock }).resolve(
      r.businessOperationId,
      { action: 'resume' },
      { adapters: [adapter] },
    );
    expect(resumed).toMatchObject({ status: 'done', adopted: true });
    expect(provider.count()).toBe(1);
    await rotated.close();
  });

  it('refuses a short secret or a bad key id without showing the secret', () => {
    expect(() => encryptParams(createMemoryLedger(), { key: { id: 'k', secret: 'short' } })).toThrow(
      RunnerConfigurationError,
    );
    try {
      encryptParams(createMemoryLedger(), { key: { id: 'k', secret: 'short' } });
    } catch (e) {
      expect((e as Error).message).not.toContain('short');
    }
    expect(() => encryptParams(createMemoryLedger(), { key: { id: 'bad id', secret: '0123456789abcdef' } })).toThrow(
      RunnerConfigurationError,
    );
  });

  it('refuses a key without an id, a secret that is no text or bytes, and no key at all, as the receipt key is refused', () => {
    const bad = [
      { key: { secret: '0123456789abcdef' } },
      { key: { id: 'k', secret: 1234567890123456 } },
      { key: { id: 'k', secret: '0123456789abcdef' }, previous: [{ id: 'old' }] },
      {},
    ];
    for (const options of bad)
      expect(() => encryptParams(createMemoryLedger(), options as never), JSON.stringify(options)).toThrow(
        RunnerConfigurationError,
      );
  });

  it('retention works through the wrapper: pruneLedger prunes an encrypted SQLite ledger, without needing a key that was rotated away', async () => {
    const path = join(dir, 'enc-prune.db');
    const old = encryptParams(createSqliteLedger({ path }), {
      key: { id: 'p0', secret: 'an-old-secret-rotated-away-long' },
    });
    const c = await old.claim({
      businessOperationId: 'enc-prune-1' as never,
      provider: 'p',
      operation: 'p.op',
      intentFingerprint: 'i',
      paramsFingerprint: 'f',
      params: { secret: 'x' },
      providerKey: null,
      owner: 'w',
      leaseMs: 1000,
      now: 1,
      dispatch: true,
    });
    if (c.kind !== 'claimed') throw new Error(c.kind);
    await old.setState(c.record, { state: 'succeeded', lastOutcome: 'succeeded', now: 2 });
    await old.close();
    // Only the new key: finished operations need not decrypt to be pruned.
    const ledger = encryptParams(createSqliteLedger({ path }), { key: KEY });
    try {
      expect(await pruneLedger(ledger, { olderThan: 1000, cards: [], now: 5000, dryRun: true })).toMatchObject({
        pruned: 1,
      });
      const seen: string[] = [];
      const report = await ledger.prune!({ before: 10, onPrune: (r) => void seen.push(r.businessOperationId) });
      expect(report).toEqual({ pruned: 1, byState: { succeeded: 1 }, dryRun: false });
      expect(seen).toEqual(['enc-prune-1']);
      expect(await ledger.get('enc-prune-1' as never)).toBeNull();
    } finally {
      await ledger.close();
    }
  });

  it('a finished operation whose params key was dropped after a rotation still answers a repeat with its stored result, and lists', async () => {
    const path = join(dir, 'enc-dropped.db');
    const { clock, provider, adapter } = sandboxOn();
    const params = { ref: 'enc-dropped-1', amount: 1 };
    const first = encryptParams(createSqliteLedger({ path }), { key: KEY });
    const done = await createRunner({ ledger: first, clock }).run(adapter, 'records.create', { params });
    expect(done.status).toBe('done');
    await first.close();
    // "Drop p1 only once no unfinished operation uses it": this one is finished.
    const next = encryptParams(createSqliteLedger({ path }), {
      key: { id: 'p2', secret: 'the-next-key-after-rotation-0000' },
    });
    try {
      const again = await createRunner({ ledger: next, clock }).run(adapter, 'records.create', { params });
      expect(again).toMatchObject({ status: 'done', businessOperationId: done.businessOperationId });
      expect(provider.count()).toBe(1);
      expect((await next.list()).map((r) => [r.businessOperationId, r.state])).toEqual([
        [done.businessOperationId, 'succeeded'],
      ]);
      expect(await next.get(done.businessOperationId)).toMatchObject({ state: 'succeeded' });
    } finally {
      await next.close();
    }
  });
});

describe('a process without the params key (docs/security.md: it cannot resume or recover those operations)', () => {
  async function leftOpen(
    dispatch: boolean,
    inner = createMemoryLedger(),
    key = KEY,
    ref = `keyless-${dispatch}`,
    intentFingerprint = fingerprint({ ref }),
  ) {
    const { clock, provider, adapter } = sandboxOn();
    const params = { ref };
    const id = asBusinessOperationId(`sandbox.records.create:${ref}`);
    const c = await encryptParams(inner, { key }).claim({
      businessOperationId: id,
      provider: 'sandbox',
      operation: 'sandbox.records.create',
      intentFingerprint,
      paramsFingerprint: fingerprint(params),
      params,
      providerKey: `rs-${ref}` as ProviderKey,
      owner: 'dead-worker',
      leaseMs: 1000,
      now: clock.now(),
      dispatch,
    });
    if (c.kind !== 'claimed') throw new Error('setup');
    clock.advance(5000);
    return { clock, provider, adapter, inner, id, before: await inner.get(id) };
  }

  for (const dispatch of [false, true]) {
    it(`recover() sends nothing (never the ciphertext as params) and leaves the ${dispatch ? 'dispatched' : 'claimed'} row for a process with the key`, async () => {
      const { clock, provider, adapter, inner, id, before } = await leftOpen(dispatch);
      const reports = await createRunner({ ledger: inner, clock, random: () => 0.5 }).recover({ adapters: [adapter] });
      expect(provider.calls()).toBe(0);
      expect(reports).toMatchObject([
        { businessOperationId: id, action: 'failed', error: { name: 'LedgerError', code: 'RETRYSAFE_LEDGER' } },
      ]);
      expect(await inner.get(id)).toEqual(before);
      // The process with the key recovers it: one record, with the params the caller gave.
      const keyed = createRunner({ ledger: encryptParams(inner, { key: KEY }), clock, random: () => 0.5 });
      expect((await keyed.recover({ adapters: [adapter] })).map((r) => r.action)).toEqual(['completed']);
      expect(provider.records().map((r) => r.paramsFingerprint)).toEqual([fingerprint({ ref: `keyless-${dispatch}` })]);
    });
  }

  it('a person asking for it (handOffUndrivable: ledger resolve --resume) gets it handed off, nothing sent, and can abandon it', async () => {
    // Its key lost for good (or its ciphertext edited): no process can ever drive it, so a person must be able to close it.
    const { clock, provider, adapter, inner, id } = await leftOpen(true, undefined, KEY, 'key-lost');
    const runner = createRunner({ ledger: inner, clock, random: () => 0.5 });
    const [report] = await runner.recover({ adapters: [adapter], businessOperationId: id, handOffUndrivable: true });
    expect(report).toMatchObject({ action: 'handed-off', result: { packet: { reason: 'recovery-failed' } } });
    expect(provider.calls()).toBe(0);
    expect(await runner.resolve(id, { action: 'abandon' }, { adapters: [adapter] })).toMatchObject({
      status: 'resolved',
      state: 'abandoned',
    });
  });

  it('run() of it takes it over, then refuses with a typed error: nothing sent, and the lease is given back', async () => {
    // As run() derives it (the intent under its operation), so the same intent takes the row over.
    const intent = fingerprint({ operation: 'sandbox.records.create', intent: { ref: 'keyless-run' } });
    const { clock, provider, adapter, inner, id } = await leftOpen(true, undefined, KEY, 'keyless-run', intent);
    clock.advance(10 * 60_000); // past the dead owner's lease end + the clock-skew margin: nobody may still send
    const err = await createRunner({ ledger: inner, clock, owner: 'keyless' })
      .run(adapter, 'records.create', { params: { ref: 'keyless-run' }, businessOperationId: id })
      .catch((e: unknown) => e);
    expect(LedgerError.isInstance(err) && (err as Error).message).toMatch(/encrypted with key 'p1'.*cannot open/);
    expect(provider.calls()).toBe(0);
    expect(await inner.get(id)).toMatchObject({ state: 'dispatched', leaseOwner: null });
  });

  it('resolve(resume) is refused with a typed error, nothing sent or written', async () => {
    const { clock, provider, adapter, inner, id } = await leftOpen(true);
    const keyed = createRunner({ ledger: encryptParams(inner, { key: KEY }), clock, random: () => 0.5 });
    provider.failNext({ kind: 'rejected' });
    await keyed.recover({ adapters: [adapter] });
    const handed = await inner.get(id);
    expect(handed?.state).toBe('handed-off');
    const calls = provider.calls();
    const err = await createRunner({ ledger: inner, clock })
      .resolve(id, { action: 'resume', force: true }, { adapters: [adapter] })
      .catch((e: unknown) => e);
    expect(LedgerError.isInstance(err) && (err as Error).message).toMatch(/encrypted with key 'p1'.*cannot open/);
    expect(provider.calls()).toBe(calls);
    expect(await inner.get(id)).toEqual(handed);
  });

  it('one open row under a key this process does not hold: recover() drives the others and reports it; list() lists it', async () => {
    const inner = createMemoryLedger();
    const old = await leftOpen(true, inner, { id: 'p0', secret: 'an-older-key-that-was-dropped!!!' }, 'sealed-p0');
    const { clock, provider, adapter, id } = await leftOpen(true, inner, KEY, 'sealed-p1');
    const ledger = encryptParams(inner, { key: KEY });
    const reports = await createRunner({ ledger, clock, random: () => 0.5 }).recover({ adapters: [adapter] });
    expect(reports.map((r) => [r.businessOperationId, r.action])).toEqual([
      [old.id, 'failed'],
      [id, 'completed'],
    ]);
    expect(provider.records().map((r) => r.paramsFingerprint)).toEqual([fingerprint({ ref: 'sealed-p1' })]);
    expect(await inner.get(old.id)).toEqual(old.before);
    expect((await ledger.list()).map((r) => r.businessOperationId).sort()).toEqual([old.id, id].sort());
  });
});
