import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { asBusinessOperationId, type Receipt } from '@retrysafe/contract';
import {
  createRunner,
  createVirtualClock,
  exportReceiptsJsonl,
  parseReceiptKeys,
  RunnerConfigurationError,
  verifyOperation,
  verifyReceiptChain,
  verifyReceiptsJsonl,
} from '@retrysafe/core';
import { receiptHash, sealReceipt } from '@retrysafe/core/internal';
import { createSqliteLedger } from '@retrysafe/ledger-sqlite';
import { createSandboxAdapter, createSandboxProvider, REPLAYING_BEHAVIOUR } from '@retrysafe/sandbox';
import { afterAll, describe, expect, it } from 'vitest';
import { afterCall, setup, stoppedBeforeSend } from './helpers.js';

/** A connection of its own to the ledger file, to edit it from outside. */
const rawSqlite = (path: string) => new DatabaseSync(path);

const OP = 'records.create';
const dir = mkdtempSync(join(tmpdir(), 'retrysafe-chain-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Re-seals a chain from `from` on, as someone who can write the ledger but has no key would. */
function reseal(receipts: readonly Receipt[], from: number, edit: (r: Receipt) => Receipt): Receipt[] {
  const out: Receipt[] = [];
  for (let i = 0; i < receipts.length; i++) {
    if (i < from) {
      out.push(receipts[i]!);
      continue;
    }
    const body = { ...(i === from ? edit(receipts[i]!) : receipts[i]!), prevHash: i === 0 ? null : out[i - 1]!.hash };
    out.push(sealReceipt(body));
  }
  return out;
}

/** The sandbox on a virtual clock, and a SQLite ledger at `path`. */
function sqliteRig(path: string) {
  const clock = createVirtualClock();
  const provider = createSandboxProvider({ ...REPLAYING_BEHAVIOUR, clock: clock.now, sleep: clock.sleep });
  return { clock, provider, adapter: createSandboxAdapter({ provider }), ledger: createSqliteLedger({ path }) };
}

describe('receipt chain: anchored on the row, keyed with an HMAC, verifiable offline', () => {
  it('without a key a re-sealed chain verifies (the limit), with one it does not; rotation keeps old chains verifiable', async () => {
    const keys = parseReceiptKeys('k2026:0123456789abcdef-secret,k2025:older-secret-0123456789');
    const { provider, adapter, runner, ledger } = setup(
      { replays: false, retentionMs: null },
      { receiptKey: keys.current },
    );
    provider.failNext({ kind: 'unknown-before-commit' });
    const r = await runner.run(adapter, OP, { params: { ref: 'hmac-1' } });
    const receipts = await ledger.receipts(r.businessOperationId);
    expect(receipts.every((x) => /^hmac-sha256:k2026:[0-9a-f]{64}$/.test(x.hash))).toBe(true);
    const anchor = (await ledger.get(r.businessOperationId))!.receiptChain!;
    expect(verifyReceiptChain(receipts, { keys: keys.keyring, anchor })).toEqual({ ok: true });
    // Without the key: order and linkage only, said as a warning.
    expect(verifyReceiptChain(receipts)).toMatchObject({ ok: true, warnings: [expect.stringMatching(/pass the key/)] });

    // Someone edits receipt 2's outcome and re-seals from there on (unkeyed, as they have no key).
    const forged = reseal(receipts, 1, (x) => ({ ...x, code: 'forged' }));
    expect(verifyReceiptChain(forged, { keys: keys.keyring })).toMatchObject({ ok: false, index: 1 });
    // A forger who knows the format but not the secret cannot make a keyed hash that checks.
    const fake = forged.map((x, i) =>
      i >= 1 ? { ...x, hash: x.hash.replace(/^/, 'hmac-sha256:k2026:').slice(0, 'hmac-sha256:k2026:'.length + 64) } : x,
    );
    expect(verifyReceiptChain(fake, { keys: keys.keyring })).toMatchObject({ ok: false, index: 1 });

    // An unkeyed ledger: the same forgery passes verifyReceiptChain; only the anchor or a key catches it.
    const plain = setup({ replays: false, retentionMs: null });
    plain.provider.failNext({ kind: 'unknown-before-commit' });
    const p = await plain.runner.run(plain.adapter, OP, { params: { ref: 'plain-1' } });
    const pr = await plain.ledger.receipts(p.businessOperationId);
    const pForged = reseal(pr, 1, (x) => ({ ...x, code: 'forged' }));
    expect(verifyReceiptChain(pForged)).toEqual({ ok: true });
    expect(
      verifyReceiptChain(pForged, { anchor: (await plain.ledger.get(p.businessOperationId))!.receiptChain! }),
    ).toMatchObject({ ok: false });
    expect(verifyReceiptChain(pr, { keys: keys.keyring })).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/not keyed/),
    });
    expect(verifyReceiptChain(pr, { keys: keys.keyring, allowUnkeyed: true })).toEqual({ ok: true });

    // Rotation: receipts sealed with the old key still verify with the old key in the keyring.
    const old = sealReceipt({ ...receipts[0]!, prevHash: null }, { id: 'k2025', secret: 'older-secret-0123456789' });
    expect(verifyReceiptChain([old], { keys: keys.keyring })).toEqual({ ok: true });
    expect(verifyReceiptChain([old], { keys: { k2026: '0123456789abcdef-secret' } })).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/k2025.*not in the keyring/),
    });
  });

  it('with a key, every receipt of the chain is keyed: also the supersede receipt of a corrected request (it was sealed without the key, and the chain failed verification)', async () => {
    const keys = parseReceiptKeys('k2026:0123456789abcdef-secret');
    const { provider, adapter, runner, ledger } = setup({}, { receiptKey: keys.current });
    provider.failNext({ kind: 'rejected' });
    const first = await runner.run(adapter, OP, { params: { ref: 'keyed-rev', note: 'x' } });
    expect(first.status).toBe('handed-off');
    const corrected = await runner.run(adapter, OP, { params: { ref: 'keyed-rev', note: 'y' } });
    expect(corrected.status).toBe('done');
    const receipts = await ledger.receipts(corrected.businessOperationId);
    expect(receipts.map((x) => x.kind)).toContain('resolve');
    expect(
      receipts.filter((x) => !/^hmac-sha256:k2026:/.test(x.hash)).map((x) => `${x.seq} ${x.kind} ${x.decision.action}`),
    ).toEqual([]);
    const anchor = (await ledger.get(corrected.businessOperationId))!.receiptChain!;
    expect(verifyReceiptChain(receipts, { keys: keys.keyring, anchor })).toEqual({ ok: true });
  });

  it('a bad key is refused when the runner is built, never mid-run, and its secret is never echoed', () => {
    const ledger = setup().ledger;
    expect(() => createRunner({ ledger, receiptKey: { id: 'k', secret: 'short-s3cret' } })).toThrow(
      RunnerConfigurationError,
    );
    expect(() => createRunner({ ledger, receiptKey: { id: 'bad id!', secret: '0123456789abcdef0' } })).toThrow(
      /receipt key id/,
    );
    expect(() => parseReceiptKeys('nocolon')).toThrow(TypeError);
    try {
      parseReceiptKeys('k:tiny-s3cret');
    } catch (e) {
      expect((e as Error).message).not.toContain('tiny-s3cret');
    }
    expect(receiptHash({ seq: 1, prevHash: null } as never)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('SQLite: a deleted tail, or every receipt deleted, is a break', async () => {
    const path = join(dir, 'tampered.db');
    const { clock, provider, adapter, ...rig } = sqliteRig(path);
    let ledger = rig.ledger;
    const r = await createRunner({ ledger, clock }).run(adapter, OP, { params: { ref: 'tail-1' } });
    expect(r.status).toBe('done');
    const id = r.businessOperationId;
    const receipts = await ledger.receipts(id);
    expect((await ledger.get(id))!.receiptChain).toEqual({
      head: receipts[receipts.length - 1]!.hash,
      length: receipts.length,
    });
    expect(await verifyOperation(ledger, id)).toEqual({ ok: true });
    await ledger.close();

    const cut = rawSqlite(path);
    cut.prepare(`UPDATE retrysafe_operations SET receipts = json_remove(receipts, '$[#-1]') WHERE id = ?`).run(id);
    cut.close();
    ledger = createSqliteLedger({ path });
    expect(verifyReceiptChain(await ledger.receipts(id))).toEqual({ ok: true }); // what main could tell
    expect(await verifyOperation(ledger, id)).toMatchObject({
      ok: false,
      reason: `the row anchors ${receipts.length} receipt(s), the ledger holds ${receipts.length - 1}`,
    });
    await ledger.close();
    const all = rawSqlite(path);
    all.prepare('UPDATE retrysafe_operations SET receipts = NULL WHERE id = ?').run(id);
    all.close();
    ledger = createSqliteLedger({ path });
    expect(await verifyOperation(ledger, id)).toMatchObject({ ok: false });
    await ledger.close();
  });

  it('an export with heads verifies offline; a dropped last line or a missing head fails', async () => {
    const { provider, adapter, runner, ledger } = setup({ replays: false, retentionMs: null });
    provider.failNext({ kind: 'unknown-before-commit' });
    const a = await runner.run(adapter, OP, { params: { ref: 'ex-1' } });
    const b = await runner.run(adapter, OP, { params: { ref: 'ex-2' } });
    const text = await exportReceiptsJsonl(ledger, { heads: true });
    expect(text.split('\n').filter((l) => l.includes('"chainHead"'))).toHaveLength(2);
    expect(verifyReceiptsJsonl(text).map((x) => [x.businessOperationId, x.check.ok])).toEqual([
      [a.businessOperationId, true],
      [b.businessOperationId, true],
    ]);
    const lines = text.trimEnd().split('\n');
    const aLast = lines.findLastIndex((l) => l.includes(a.businessOperationId) && !l.includes('chainHead'));
    const dropped = lines.filter((_, i) => i !== aLast).join('\n');
    expect(verifyReceiptsJsonl(dropped).find((x) => x.businessOperationId === a.businessOperationId)!.check.ok).toBe(
      false,
    );
    const headless = lines.filter((l) => !(l.includes('chainHead') && l.includes(b.businessOperationId))).join('\n');
    expect(
      verifyReceiptsJsonl(headless).find((x) => x.businessOperationId === b.businessOperationId)!.check,
    ).toMatchObject({ ok: false, reason: expect.stringMatching(/no chain head/) });
    expect(() => verifyReceiptsJsonl('{"chainHead":{"businessOperationId":"x","head":null}}\n')).toThrow(
      /line 1: a chain head without its length/,
    );
    // A line of JSON that is no object (an edit, a file of another kind) says which line, never a TypeError of its own.
    for (const line of ['null', '7', '"x"', '[]'])
      expect(() => verifyReceiptsJsonl(`${line}\n`)).toThrow(/^line 1: neither a receipt nor a chain head$/);
    // The default export is unchanged: receipts only.
    expect(await exportReceiptsJsonl(ledger)).not.toContain('chainHead');
    expect(asBusinessOperationId(a.businessOperationId)).toBe(a.businessOperationId);
  });
});

describe('receipt chain: the receipts belong to the operation they are checked for', () => {
  it("SQLite: another operation's whole keyed chain, copied with its anchor onto an operation's row, is a break", async () => {
    const keys = parseReceiptKeys('k2026:0123456789abcdef-secret');
    const path = join(dir, 'spliced.db');
    const { clock, provider, adapter, ...rig } = sqliteRig(path);
    let ledger = rig.ledger;
    const runner = createRunner({ ledger, clock, receiptKey: keys.current });
    const a = await runner.run(adapter, OP, { params: { ref: 'splice-a' } });
    provider.failNext({ kind: 'unknown-before-commit' });
    const b = await runner.run(adapter, OP, { params: { ref: 'splice-b' } });
    expect(await verifyOperation(ledger, a.businessOperationId, { keys: keys.keyring })).toEqual({ ok: true });
    await ledger.close();

    // Someone without the key gives A the receipts of B (an operation that went another way), anchor included.
    const db = rawSqlite(path);
    db.prepare(
      `UPDATE retrysafe_operations SET
         receipts = (SELECT receipts FROM retrysafe_operations WHERE id = ?),
         record = json_set(record, '$.receiptChain', (SELECT json_extract(record, '$.receiptChain') FROM retrysafe_operations WHERE id = ?))
       WHERE id = ?`,
    ).run(b.businessOperationId, b.businessOperationId, a.businessOperationId);
    db.close();
    ledger = createSqliteLedger({ path });
    const receipts = await ledger.receipts(a.businessOperationId);
    expect(receipts[0]!.businessOperationId).toBe(b.businessOperationId);
    expect(await verifyOperation(ledger, a.businessOperationId, { keys: keys.keyring })).toMatchObject({
      ok: false,
      index: 0,
    });
    await ledger.close();
  });
  it('an export taken while a receipt is written reads the row again, so an intact ledger exports a chain that verifies', async () => {
    const { provider, adapter, runner, ledger } = setup({ replays: false, retentionMs: null });
    provider.failNext({ kind: 'unknown-before-commit' });
    const r = await runner.run(adapter, OP, { params: { ref: 'race-1' } });
    const id = r.businessOperationId;
    const receipts = await ledger.receipts(id);
    expect(receipts.length).toBeGreaterThan(1);
    // The row is read, then the last receipt is written (with its anchor), then the receipts are read.
    let gets = 0;
    const racing = {
      ...ledger,
      get: async (x: typeof id) => {
        const record = await ledger.get(x);
        if (gets++ > 0 || !record) return record;
        const prev = receipts[receipts.length - 2]!;
        return { ...record, receiptChain: { head: prev.hash, length: prev.seq } };
      },
    };
    const text = await exportReceiptsJsonl(racing, { ids: [id], heads: true });
    expect(verifyReceiptsJsonl(text).map((x) => x.check)).toEqual([{ ok: true }]);
  });
  it('a stored receipt that is not an object is a break at its index, never a TypeError', () => {
    for (const bad of [null, 7, 'x'])
      expect(verifyReceiptChain([bad as unknown as Receipt])).toEqual({
        ok: false,
        index: 0,
        reason: expect.stringMatching(/not a receipt/),
      });
  });
  it('a key id given twice in a keyring is refused: the first secret sealed and the last one verified, so every new receipt read as a break', () => {
    const text = 'k1:new-secret-0123456789,k1:old-secret-0123456789';
    expect(() => parseReceiptKeys(text)).toThrow(TypeError);
    expect(() => parseReceiptKeys(text)).toThrow(/k1/);
    try {
      parseReceiptKeys(text);
    } catch (e) {
      expect((e as Error).message).not.toMatch(/secret-0123456789/);
    }
  });
  it('SQLite: a row whose anchor was removed is a break, not a chain checked without one (its tail could be cut)', async () => {
    const path = join(dir, 'unanchored.db');
    const { clock, provider, adapter, ...rig } = sqliteRig(path);
    let ledger = rig.ledger;
    provider.failNext({ kind: 'unknown-before-commit' });
    const id = (await createRunner({ ledger, clock }).run(adapter, OP, { params: { ref: 'unanchored-1' } }))
      .businessOperationId;
    await ledger.close();
    const db = rawSqlite(path);
    db.prepare(
      `UPDATE retrysafe_operations SET receipts = json_remove(receipts, '$[#-1]'), record = json_remove(record, '$.receiptChain') WHERE id = ?`,
    ).run(id);
    db.close();
    ledger = createSqliteLedger({ path });
    expect(await verifyOperation(ledger, id)).toMatchObject({ ok: false, reason: expect.stringMatching(/anchor/) });
    await ledger.close();
  });
  it('resolve by a runner without the receipt key on a keyed chain is a RunnerConfigurationError that writes nothing (an unkeyed receipt would break the chain for good)', async () => {
    const keys = parseReceiptKeys('k2026:0123456789abcdef-secret');
    const { provider, adapter, runner, ledger, clock } = setup({}, { receiptKey: keys.current });
    provider.failNext({ kind: 'rejected' });
    const r = await runner.run(adapter, OP, { params: { ref: 'keyless-resolve' } });
    expect(r.status).toBe('handed-off');
    const before = await ledger.receipts(r.businessOperationId);
    const keyless = createRunner({ ledger, clock });
    const err = await keyless.resolve(r.businessOperationId, { action: 'abandon' }).catch((e: unknown) => e);
    expect(RunnerConfigurationError.isInstance(err)).toBe(true);
    expect((err as Error).message).toMatch(/sealed with key k2026/);
    expect(await ledger.receipts(r.businessOperationId)).toEqual(before);
    expect((await ledger.get(r.businessOperationId))!.state).toBe('handed-off');
    await runner.resolve(r.businessOperationId, { action: 'abandon' });
    expect(await verifyOperation(ledger, r.businessOperationId, { keys: keys.keyring })).toEqual({ ok: true });
  });
  it('recover() or a takeover by a runner without the receipt key leaves a keyed open chain as it is: no unkeyed receipt after keyed ones', async () => {
    const keys = parseReceiptKeys('k2026:0123456789abcdef-secret');
    const { provider, adapter, ledger, clock } = setup();
    // A keyed runner's caller gives up in a Retry-After wait: the row stays open (dispatched) with keyed receipts.
    const controller = new AbortController();
    const aborting = { now: clock.now, sleep: async (ms: number) => (controller.abort(), clock.sleep(ms)) };
    const keyed = createRunner({ ledger, clock: aborting, receiptKey: keys.current });
    provider.failNext({ kind: 'not-applied', retryAfterMs: 10 });
    const params = { ref: 'keyless-recover' };
    await expect(keyed.run(adapter, OP, { params, signal: controller.signal })).rejects.toThrow();
    const [open] = await ledger.list();
    const before = await ledger.receipts(open!.businessOperationId);
    expect(before.at(-1)!.hash).toMatch(/^hmac-sha256:k2026:/);
    const keyless = createRunner({ ledger, clock });
    const [report] = await keyless.recover({ adapters: [adapter] });
    expect(report).toMatchObject({
      action: 'failed',
      error: { message: expect.stringMatching(/sealed with key k2026/) },
    });
    const err = await keyless.run(adapter, OP, { params }).catch((e: unknown) => e);
    expect(RunnerConfigurationError.isInstance(err)).toBe(true);
    expect(await ledger.receipts(open!.businessOperationId)).toEqual(before);
    expect(await ledger.get(open!.businessOperationId)).toMatchObject({ state: open!.state, leaseOwner: null });
    expect(provider.calls()).toBe(1);
    // With the key, the same operation is driven on, and its chain still verifies.
    expect((await createRunner({ ledger, clock, receiptKey: keys.current }).run(adapter, OP, { params })).status).toBe(
      'done',
    );
    expect(await verifyOperation(ledger, open!.businessOperationId, { keys: keys.keyring })).toEqual({ ok: true });
  });
  it('recover() without the key, whose listed row a keyed runner drove before its claim, leaves the keyed chain as it is', async () => {
    const keys = parseReceiptKeys('k2026:0123456789abcdef-secret');
    const { provider, adapter, ledger, clock } = setup();
    const params = { ref: 'keyless-listed' };
    // A keyless worker claims it and stops before sending: `claimed`, no receipt yet.
    const signal = stoppedBeforeSend();
    await expect(createRunner({ ledger, clock }).run(adapter, OP, { params, signal })).rejects.toThrow();
    clock.advance(120_000);
    // The keyless recover() lists it; before its claim, a keyed runner drives it and its caller gives up in a
    // Retry-After wait: the row stays open with keyed receipts.
    let id = '';
    let before: Receipt[] = [];
    const listing = afterCall(ledger, 'recoverCandidates', async (out) => {
      const controller = new AbortController();
      const aborting = { now: clock.now, sleep: async (ms: number) => (controller.abort(), clock.sleep(ms)) };
      const keyed = createRunner({ ledger, clock: aborting, receiptKey: keys.current });
      provider.failNext({ kind: 'not-applied', retryAfterMs: 10 });
      await expect(keyed.run(adapter, OP, { params, signal: controller.signal })).rejects.toThrow();
      id = (out as { businessOperationId: string }[])[0]!.businessOperationId;
      before = await ledger.receipts(asBusinessOperationId(id));
      expect(before.at(-1)!.hash).toMatch(/^hmac-sha256:k2026:/);
      clock.advance(120_000);
    });
    const [report] = await createRunner({ ledger: listing, clock }).recover({ adapters: [adapter] });
    expect(await verifyOperation(ledger, asBusinessOperationId(id), { keys: keys.keyring })).toEqual({ ok: true });
    expect(report).toMatchObject({
      action: 'failed',
      error: { message: expect.stringMatching(/sealed with key k2026/) },
    });
    expect(await ledger.receipts(asBusinessOperationId(id))).toEqual(before);
    expect(await ledger.get(asBusinessOperationId(id))).toMatchObject({ state: 'claimed', leaseOwner: null });
    expect(provider.calls()).toBe(1);
    expect(await verifyOperation(ledger, asBusinessOperationId(id), { keys: keys.keyring })).toEqual({ ok: true });
  });
});
