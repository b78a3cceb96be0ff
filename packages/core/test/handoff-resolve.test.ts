import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type HandoffPacket, InvalidStateError, type ProviderKey } from '@retrysafe/contract';
import { callbackHandoffSink, exportReceiptsJsonl, jsonlHandoffSink, verifyReceiptChain } from '@retrysafe/core';
import { afterAll, describe, expect, it } from 'vitest';
import { expectForcedResume, setup } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'retrysafe-handoff-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const OP = 'records.create';

describe('handoff packets and sinks', () => {
  it('a packet names the operation, key, attempts, last known status, why it stopped and the safe next actions', async () => {
    const got: HandoffPacket[] = [];
    const { provider, adapter, runner } = setup(
      { replays: false, retentionMs: null, lookup: 'none' },
      { handoff: callbackHandoffSink((p) => void got.push(p)) },
    );
    provider.failNext({ kind: 'unknown-after-commit' });
    const r = await runner.run(adapter, OP, { params: { ref: 'p-1' } });
    expect(got).toHaveLength(1);
    const p = got[0]!;
    expect(p).toMatchObject({
      businessOperationId: r.businessOperationId,
      provider: 'sandbox',
      operation: 'sandbox.records.create',
      reason: 'unknown-no-safe-resend',
      lastKnown: { outcome: 'unknown', status: 500 },
    });
    expect(p.providerKey).toMatch(/^rs-/);
    expect(p.intentFingerprint).toMatch(/^sha256:/);
    expect(p.attempts).toHaveLength(1);
    expect(p.safeNextActions.map((a) => a.action)).toEqual(['resume', 'mark-done', 'abandon']);
    expect(p.explanation).toMatch(/no lookup/);
  });

  it('resume is marked safe only when nothing can have been applied', async () => {
    const exhausted = setup({ replays: false, retentionMs: null, lookup: 'none' }, { policy: { maxAttempts: 2 } });
    exhausted.provider.failNext({ kind: 'not-applied', retryAfterMs: 10 }, 2);
    const a = await exhausted.runner.run(exhausted.adapter, OP, { params: { ref: 'safe-1' } });
    expect(a.status === 'handed-off' && a.packet.safeNextActions.find((x) => x.action === 'resume')?.safe).toBe(true);
    // A lost response and then a 429: the first may have been applied, so resuming is not safe.
    const mixed = setup({ replays: false, retentionMs: null, lookup: 'none' });
    mixed.provider.failNext({ kind: 'unknown-after-commit' });
    const b = await mixed.runner.run(mixed.adapter, OP, { params: { ref: 'safe-2' } });
    expect(b.status === 'handed-off' && b.packet.safeNextActions.find((x) => x.action === 'resume')?.safe).toBe(false);
  });

  it('a 5xx the provider stored under the key (storedResult.includesErrors): resume is unsafe, saying it would only replay the error', async () => {
    const { provider, adapter, runner } = setup({ lookup: 'none' });
    const spec = adapter.operations[OP]!;
    const includesErrors = { value: true, source: 'test: the provider stores errors under the key' };
    const card = { ...spec.card, storedResult: { ...spec.card.storedResult, includesErrors } };
    const storing = { ...adapter, operations: { ...adapter.operations, [OP]: { ...spec, card } } };
    provider.failNext({ kind: 'unknown-before-commit' });
    const r = await runner.run(storing, OP, { params: { ref: 'p-5xx' } });
    expect(r.status).toBe('handed-off');
    if (r.status !== 'handed-off') return;
    expect(provider.calls()).toBe(1);
    expect(r.packet.reason).toBe('unknown-no-safe-resend');
    // The same key re-sent would get the stored 503 back until it expires: not a safe resume, and the packet says why.
    const resume = r.packet.safeNextActions.find((a) => a.action === 'resume');
    expect(resume?.safe).toBe(false);
    expect(resume?.why).toMatch(/stored 503: it would only replay that error until the key expires/);
  });

  it('the JSONL sink appends one packet per line', async () => {
    const file = join(dir, 'nested', 'packets.jsonl');
    const { provider, adapter, runner } = setup({}, { handoff: jsonlHandoffSink(file) });
    provider.failNext({ kind: 'rejected' }, 2);
    await runner.run(adapter, OP, { params: { ref: 'j-1' } });
    await runner.run(adapter, OP, { params: { ref: 'j-2' } });
    const lines = readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as HandoffPacket);
    expect(lines.map((l) => l.reason)).toEqual(['rejected', 'rejected']);
  });

  it('a failing sink does not lose the packet: it is in the ledger', async () => {
    const { provider, adapter, runner, ledger } = setup(
      {},
      {
        handoff: {
          send: () => {
            throw new Error('pager down');
          },
        },
      },
    );
    provider.failNext({ kind: 'rejected' });
    const r = await runner.run(adapter, OP, { params: { ref: 's-1' } });
    expect(r.status).toBe('handed-off');
    expect((await ledger.get(r.businessOperationId))!.handoff?.reason).toBe('rejected');
  });
});

describe('runner.resolve', () => {
  it('resume re-sends with the SAME provider key and a fresh budget: the operation ends with 1 record', async () => {
    const { provider, adapter, runner, ledger } = setup({ replays: false, retentionMs: null, lookup: 'none' });
    provider.failNext({ kind: 'unknown-before-commit' });
    const r = await runner.run(adapter, OP, { params: { ref: 'res-1' } });
    expect(r.status).toBe('handed-off');
    expect(provider.count()).toBe(0);
    // The packet marks resume unsafe (the send may have applied): a person who checked says force (resolve-force.test.ts).
    await expectForcedResume({ provider, adapter, runner }, r.businessOperationId);
    const keys = new Set(
      (await ledger.receipts(r.businessOperationId)).map((x) => x.providerKey as ProviderKey | null),
    );
    expect(keys.size).toBe(1);
    const receipts = await ledger.receipts(r.businessOperationId);
    expect(receipts.map((x) => x.kind)).toEqual(['dispatch', 'resolve', 'resend']);
    expect(verifyReceiptChain(receipts)).toEqual({ ok: true });
  });

  it('mark-done records the provider reference; later runs adopt it without sending', async () => {
    const { provider, adapter, runner } = setup({ replays: false, retentionMs: null, lookup: 'none' });
    provider.failNext({ kind: 'unknown-after-commit' });
    const r = await runner.run(adapter, OP, { params: { ref: 'md-1' } });
    const ref = provider.records()[0]!.id;
    const res = await runner.resolve(r.businessOperationId, { action: 'mark-done', providerRef: ref });
    expect(res).toMatchObject({ status: 'resolved', state: 'succeeded', providerRef: ref });
    const again = await runner.run(adapter, OP, { params: { ref: 'md-1' } });
    expect(again).toMatchObject({ status: 'done', adopted: true, providerRef: ref });
    expect(provider.calls()).toBe(1);
  });

  it('abandon stops it for good; resolving an operation that is not handed off is a typed error', async () => {
    const { provider, adapter, runner } = setup();
    provider.failNext({ kind: 'rejected' });
    const r = await runner.run(adapter, OP, { params: { ref: 'ab-1' } });
    expect(await runner.resolve(r.businessOperationId, { action: 'abandon' })).toMatchObject({
      status: 'resolved',
      state: 'abandoned',
    });
    await expect(runner.resolve(r.businessOperationId, { action: 'abandon' })).rejects.toSatisfy(
      InvalidStateError.isInstance,
    );
    const ok = await runner.run(adapter, OP, { params: { ref: 'ab-2' } });
    await expect(
      runner.resolve(ok.businessOperationId, { action: 'resume' }, { adapters: [adapter] }),
    ).rejects.toSatisfy(InvalidStateError.isInstance);
    await expect(runner.resolve('never-seen', { action: 'abandon' })).rejects.toSatisfy(InvalidStateError.isInstance);
  });
});

describe('receipts', () => {
  it('chain by hash per operation; an edited, dropped or reordered receipt is detected', async () => {
    const { provider, adapter, runner, ledger } = setup({ replays: false, retentionMs: null, lateApplyMs: 0 });
    provider.failNext({ kind: 'unknown-before-commit' });
    const r = await runner.run(adapter, OP, { params: { ref: 'rc-1' } });
    const receipts = await ledger.receipts(r.businessOperationId);
    expect(receipts.length).toBe(3);
    expect(verifyReceiptChain(receipts)).toEqual({ ok: true });
    expect(receipts[1]!.prevHash).toBe(receipts[0]!.hash);
    const edited = receipts.map((x, i) => (i === 1 ? { ...x, outcome: 'found' as const } : x));
    expect(verifyReceiptChain(edited)).toMatchObject({ ok: false, index: 1 });
    expect(verifyReceiptChain([receipts[0]!, receipts[2]!])).toMatchObject({ ok: false, index: 1 });
    expect(verifyReceiptChain([receipts[1]!, receipts[0]!, receipts[2]!])).toMatchObject({ ok: false, index: 0 });
  });

  it('carry ids, times, outcome, decision and why, provider refs and a request fingerprint; export as JSONL', async () => {
    const { adapter, runner, ledger } = setup();
    const r = await runner.run(adapter, OP, { params: { ref: 'ex-1' } });
    const file = join(dir, 'receipts.jsonl');
    const text = await exportReceiptsJsonl(ledger, { path: file });
    expect(readFileSync(file, 'utf8')).toBe(text);
    const [rec] = text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(rec).toMatchObject({
      businessOperationId: r.businessOperationId,
      seq: 1,
      kind: 'dispatch',
      outcome: 'succeeded',
      status: 201,
      provider: 'sandbox',
      decision: { action: 'complete' },
    });
    expect(rec.runId).toMatch(/^run_/);
    expect(rec.attemptId).toMatch(/^att_/);
    expect(rec.requestFingerprint).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(rec.providerRef).toMatch(/^rec_/);
    expect(Date.parse(rec.finishedAt)).toBeGreaterThanOrEqual(Date.parse(rec.startedAt));
  });
});

describe('runner.recover (in process)', () => {
  it('finds an operation a dead worker left dispatched and reconciles it through doLookup to exactly one record', async () => {
    const { provider, adapter, runner, ledger, clock } = setup({ replays: false, retentionMs: null });
    // A dead worker: claimed, wrote dispatched, the provider committed, then the worker vanished.
    const spec = adapter.operations['records.create']!;
    const { fingerprint, businessOperationId } = await import('@retrysafe/contract');
    const intent = { ref: 'rec-1' };
    const id = businessOperationId(spec.card.operation, intent);
    const key = adapter.deriveProviderKey('records.create', id);
    const c = await ledger.claim({
      businessOperationId: id,
      provider: 'sandbox',
      operation: spec.card.operation,
      intentFingerprint: fingerprint({ operation: spec.card.operation, intent }),
      paramsFingerprint: fingerprint({ ref: 'rec-1' }),
      params: { ref: 'rec-1' },
      providerKey: key,
      owner: 'dead',
      leaseMs: 1000,
      now: clock.now(),
    });
    if (c.kind !== 'claimed') throw new Error('claim');
    await ledger.markDispatched({ businessOperationId: id, fence: 1 }, clock.now());
    await provider.execute({ key, params: { ref: 'rec-1' } });
    expect(await runner.recover({ adapters: [adapter] })).toEqual([]); // lease still live
    clock.advance(1001);
    const reports = await runner.recover({ adapters: [adapter] });
    expect(reports).toMatchObject([
      { businessOperationId: id, from: 'dispatched', to: 'succeeded', action: 'adopted' },
    ]);
    expect(provider.count()).toBe(1);
    expect(provider.calls()).toBe(1);
    // The caller's own retry later adopts the recovered result.
    const r = await runner.run(adapter, 'records.create', { params: { ref: 'rec-1' } });
    expect(r).toMatchObject({ status: 'done', adopted: true, providerRef: provider.records()[0]!.id });
  });

  it("a dead worker's dispatch that cannot be reconciled (no lookup, no replay) is handed off as crash-recovery-inconclusive, never re-sent", async () => {
    const { provider, adapter, runner, ledger, clock } = setup({ replays: false, retentionMs: null, lookup: 'none' });
    const { fingerprint, businessOperationId } = await import('@retrysafe/contract');
    const spec = adapter.operations['records.create']!;
    const intent = { ref: 'dead-2' };
    const id = businessOperationId(spec.card.operation, intent);
    const key = adapter.deriveProviderKey('records.create', id);
    await ledger.claim({
      businessOperationId: id,
      provider: 'sandbox',
      operation: spec.card.operation,
      intentFingerprint: fingerprint({ operation: spec.card.operation, intent }),
      paramsFingerprint: fingerprint(intent),
      params: intent,
      providerKey: key,
      owner: 'dead',
      leaseMs: 1000,
      now: clock.now(),
    });
    await ledger.markDispatched({ businessOperationId: id, fence: 1 }, clock.now());
    await provider.execute({ key, params: intent });
    clock.advance(1001);
    const [report] = await runner.recover({ adapters: [adapter] });
    expect(report).toMatchObject({ from: 'dispatched', to: 'handed-off', action: 'handed-off' });
    expect(report!.result?.status === 'handed-off' && report!.result.packet.reason).toBe('crash-recovery-inconclusive');
    expect(provider.calls()).toBe(1);
    expect(provider.count()).toBe(1);
  });

  it('skips operations whose adapter was not given', async () => {
    const { adapter, runner, ledger, clock } = setup();
    const c = await ledger.claim({
      businessOperationId: 'other-1' as never,
      provider: 'elsewhere',
      operation: 'elsewhere.x',
      intentFingerprint: 'i',
      paramsFingerprint: 'p',
      params: {},
      providerKey: null,
      owner: 'dead',
      leaseMs: 10,
      now: clock.now(),
    });
    expect(c.kind).toBe('claimed');
    clock.advance(11);
    expect(await runner.recover({ adapters: [adapter] })).toMatchObject([
      { action: 'skipped-no-adapter', from: 'claimed' },
    ]);
  });
});
