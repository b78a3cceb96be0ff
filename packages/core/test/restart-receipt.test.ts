// The runbook promises every resolution appends a resolve receipt, and the ledger never holds a half-written
// operation: a person's resume and a new revision (resend-with, or run()'s corrected request) are claimed together
// with their resolve receipt, or not at all. Before, the claim and the receipt were two writes: a crash or a failing
// write between them left a row resumed, or revised, with no receipt saying who did it or why; and since a revision's
// number is read from the receipts, the next resend-with would reuse that revision's number and provider key.

import type { Ledger, Receipt } from '@retrysafe/contract';
import { createRunner } from '@retrysafe/core';
import { describe, expect, it } from 'vitest';
import { failingOnce, receiptWriteFails, setup } from './helpers.js';

const OP = 'records.create';
const FORGETFUL = { replays: false, retentionMs: null, lookup: 'none' } as const;

/** The row as left: untouched (same fence, same receipts), or claimed again with its resolve receipt `action`. */
async function expectWhole(ledger: Ledger, id: string, before: { fence: number; receipts: Receipt[] }, action: string) {
  const row = (await ledger.get(id as never))!;
  const receipts = await ledger.receipts(id as never);
  expect(row.receiptChain).toEqual({ head: receipts.at(-1)?.hash ?? null, length: receipts.length });
  if (row.fence === before.fence) {
    expect(receipts).toEqual(before.receipts); // nothing written
    return;
  }
  const restart = receipts[before.receipts.length];
  expect(restart).toMatchObject({ kind: 'resolve', decision: { action } });
}

describe('a resume or a new revision is claimed with its resolve receipt, or not at all', () => {
  it("a person's resume: a failing receipt write leaves no row resumed without its receipt", async () => {
    const { ledger, failing } = receiptWriteFails();
    const { provider, adapter, clock } = setup(FORGETFUL, { ledger, policy: { maxAttempts: 2 } });
    provider.failNext({ kind: 'not-applied', retryAfterMs: 10 }, 2);
    const runner = createRunner({ ledger, clock, random: () => 0.5, policy: { maxAttempts: 2 } });
    const r = await runner.run(adapter, OP, { params: { ref: 'rs-resume' } });
    expect(r.status).toBe('handed-off');
    const id = r.businessOperationId;
    const before = { fence: (await ledger.get(id))!.fence, receipts: await ledger.receipts(id) };
    failing.on = true;
    await runner.resolve(id, { action: 'resume' }, { adapters: [adapter], by: 'alice' }).catch(() => undefined);
    await expectWhole(ledger, id, before, 'resume');
  });

  it("a person's resend-with: a failing receipt write leaves no new revision without its receipt", async () => {
    const { ledger, failing } = receiptWriteFails();
    const { provider, adapter, clock } = setup({}, { ledger });
    provider.failNext({ kind: 'not-applied', retryAfterMs: 10 });
    const runner = createRunner({ ledger, clock, random: () => 0.5, policy: { maxAttempts: 1 } });
    const r = await runner.run(adapter, OP, { params: { ref: 'rs-resend', note: 'bad' } });
    expect(r.status).toBe('handed-off');
    const id = r.businessOperationId;
    const before = { fence: (await ledger.get(id))!.fence, receipts: await ledger.receipts(id) };
    failing.on = true;
    const params = { ref: 'rs-resend', note: 'good' };
    await runner.resolve(id, { action: 'resend-with', params }, { adapters: [adapter] }).catch(() => undefined);
    await expectWhole(ledger, id, before, 'supersede');
  });

  it("run()'s corrected request: a failing receipt write leaves no new revision without its receipt", async () => {
    const { ledger, failing } = receiptWriteFails();
    const { provider, adapter, runner } = setup({}, { ledger, policy: { maxAttempts: 1 } });
    provider.failNext({ kind: 'not-applied', retryAfterMs: 10 });
    const r = await runner.run(adapter, OP, { params: { ref: 'rs-corrected', note: 'bad' } });
    const id = r.businessOperationId;
    expect(r.status).toBe('handed-off');
    const before = { fence: (await ledger.get(id))!.fence, receipts: await ledger.receipts(id) };
    failing.on = true;
    await runner.run(adapter, OP, { params: { ref: 'rs-corrected', note: 'good' } }).catch(() => undefined);
    await expectWhole(ledger, id, before, 'supersede');
  });
});

describe('a resume safe only by the key, stopped between its claim and its first step', () => {
  it('is taken over as maybe applied: past the key retention it is not sent as a new request', async () => {
    const { provider, adapter, clock, ledger, runner } = setup({ lookup: 'none' }, { policy: { maxAttempts: 2 } });
    provider.failNext({ kind: 'unknown-after-commit' }, 2);
    const r = await runner.run(adapter, OP, { params: { ref: 'rs-by-key' } });
    expect(r.status === 'handed-off' && r.packet.safeNextActions.find((a) => a.action === 'resume')?.why).toMatch(
      /folds it into the first/,
    );
    expect(provider.count()).toBe(1);
    // The resume's claim is written; the process stops before the write that starts it from `unknown`.
    const stopping = createRunner({ ledger: failingOnce(ledger, 'setState'), clock, random: () => 0.5 });
    await expect(
      stopping.resolve(r.businessOperationId, { action: 'resume' }, { adapters: [adapter] }),
    ).rejects.toThrow(/disk full/);
    clock.advance(3 * 86_400_000); // past the key's retention (24 h) and the lease
    const [report] = await runner.recover({ adapters: [adapter] });
    expect(report).toMatchObject({ from: 'claimed', to: 'handed-off' });
    expect(provider.count()).toBe(1);
  });
});
