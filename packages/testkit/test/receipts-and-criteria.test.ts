import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fact, type RetrySafetyCard } from '@retrysafe/contract';
import { sandboxCreateCard } from '@retrysafe/sandbox';
import { describe, expect, it } from 'vitest';
import { criteriaFor, readCard, runDrill, SCENARIOS, skipReason } from '../src/index.js';
import { forgetful, replaying, sandboxDrill } from './fixtures/sandbox-drill.js';
import { tempDir } from './fixtures/temp-dir.js';

describe('drill receipts', () => {
  it('an unknown scenario is refused before any directory is made', async () => {
    const outDir = join(tempDir('drill-refused-'), 'out');
    const drill = sandboxDrill('refused', forgetful, {
      outDir,
      scenarios: ['lost-response', 'no-such-scenario' as never],
    });
    await expect(runDrill(drill)).rejects.toThrow(/unknown scenario 'no-such-scenario'/);
    expect(existsSync(outDir)).toBe(false);
  });

  it('an empty scenario list is refused, not a drill that passes with nothing run', async () => {
    const outDir = join(tempDir('drill-empty-'), 'out');
    const drill = sandboxDrill('empty', forgetful, { outDir, scenarios: [] });
    await expect(runDrill(drill)).rejects.toThrow(/at least one scenario/);
    expect(existsSync(outDir)).toBe(false);
  });

  it('one valid JSON receipt per scenario with criteria and observed values, and a summary listing every skip with its card field', async () => {
    const outDir = tempDir('drill-receipts-');
    const report = await runDrill(sandboxDrill('receipts', forgetful, { outDir }));
    expect(report.ok).toBe(true);
    const files = readdirSync(outDir).sort();
    expect(files).toEqual([...SCENARIOS.map((s) => `${s}--records.create.json`), 'summary.json'].sort());
    for (const scenario of SCENARIOS) {
      const r = JSON.parse(readFileSync(join(outDir, `${scenario}--records.create.json`), 'utf8'));
      expect(r).toMatchObject({ drill: 'receipts', operation: 'records.create', scenario });
      if (r.status === 'skipped') {
        expect(r.skip.cardField).toMatch(/^(retention\.minimum|concurrency|sideEffect\.rejectionMayCreate)$/);
        continue;
      }
      expect(r.status).toBe('passed');
      expect(r.criteria).toMatchObject({
        providerRecords: expect.any(Number),
        attemptsAtProxy: expect.any(Object),
        outcome: expect.any(Array),
        oneRequestPerAttempt: true,
      });
      expect(r.criteria.why.length).toBeGreaterThan(0);
      expect(r.observed).toMatchObject({
        providerRecords: expect.any(Number),
        attemptsAtProxy: expect.any(Number),
        outcomes: expect.any(Array),
      });
      expect(Array.isArray(r.proxyRequests)).toBe(true);
      // the runner's receipts (or, when recovery handed off a dead worker's dispatch, its packet) are in
      // it, and carry no request bodies. (core writes no receipt for a dispatch whose worker died, nor
      // for a handoff decided by recover(): reported to core.)
      expect(r.runnerReceipts.length + r.handoffPackets.length, scenario).toBeGreaterThan(0);
      for (const rec of r.runnerReceipts) {
        expect(rec.requestFingerprint).toMatch(/^sha256:/);
        expect(JSON.stringify(rec)).not.toContain('order-');
      }
    }
    const summary = JSON.parse(readFileSync(join(outDir, 'summary.json'), 'utf8'));
    expect(summary).toMatchObject({ drill: 'receipts', total: SCENARIOS.length, failed: 0, skipped: 3 });
    expect(summary.skips).toEqual([
      expect.objectContaining({ scenario: 'key-past-retention', cardField: 'retention.minimum' }),
      expect.objectContaining({ scenario: 'in-progress', cardField: 'concurrency' }),
      expect.objectContaining({ scenario: 'rejection-left-object', cardField: 'sideEffect.rejectionMayCreate' }),
    ]);
  });
});

describe('pass criteria come from the card', () => {
  const replayCard = sandboxCreateCard(replaying);
  const forgetCard = sandboxCreateCard(forgetful);

  it('a rejection that left an object: drilled only when the card says a rejected call can create, then one record and a handoff', () => {
    expect(skipReason('rejection-left-object', replayCard)).toMatchObject({
      cardField: 'sideEffect.rejectionMayCreate',
    });
    const creates: RetrySafetyCard = {
      ...replayCard,
      sideEffect: { ...replayCard.sideEffect, rejectionMayCreate: fact(true, 'test') },
    };
    expect(skipReason('rejection-left-object', creates)).toBeNull();
    expect(criteriaFor('rejection-left-object', readCard(creates))).toMatchObject({
      providerRecords: 1,
      attemptsAtProxy: { exact: 1 },
      outcome: ['handed-off', 'conflict'],
      handoff: true,
    });
  });

  it('a lost response: one adopted record when the provider replays, a handoff after one request when nothing can find it', () => {
    expect(criteriaFor('lost-response', readCard(replayCard))).toMatchObject({
      providerRecords: 1,
      outcome: ['done'],
      handoff: false,
    });
    expect(criteriaFor('lost-response', readCard(forgetCard))).toMatchObject({
      providerRecords: 1,
      attemptsAtProxy: { exact: 1 },
      outcome: ['handed-off'],
      handoff: true,
    });
  });

  it('no stored result and a lookup with an unknown delay: never a second request; adopt if found, else hand off', () => {
    const card: RetrySafetyCard = {
      ...forgetCard,
      lookup: { method: fact('search', 'test'), consistencyDelay: { value: 'unknown', source: 'test' } },
    };
    const c = criteriaFor('lost-response', readCard(card));
    expect(c).toMatchObject({
      providerRecords: 1,
      attemptsAtProxy: { exact: 1 },
      outcome: ['done', 'handed-off'],
      handoff: 'with-outcome',
    });
    expect(criteriaFor('lost-request', readCard(card))).toMatchObject({
      providerRecords: 0,
      outcome: ['handed-off'],
    });
  });

  it('transient beyond the limit expects exactly maxAttempts, from the policy over the card', () => {
    expect(criteriaFor('transient-beyond-limit', readCard(replayCard)).attemptsAtProxy).toEqual({
      exact: 4,
    });
    expect(criteriaFor('transient-beyond-limit', readCard(replayCard, { maxAttempts: 6 })).attemptsAtProxy).toEqual({
      exact: 6,
    });
    // a budget too small for the worst-case backoff only bounds the count
    expect(criteriaFor('transient-beyond-limit', readCard(replayCard, { maxElapsedMs: 100 })).attemptsAtProxy).toEqual({
      min: 1,
      max: 4,
    });
  });

  it("a Retry-After beyond the card's cap expects the runner to stop, not to call sooner", () => {
    expect(criteriaFor('rate-limited', readCard(replayCard), { retryAfterS: 2 })).toMatchObject({
      minWaitMs: 2000,
      attemptsAtProxy: { exact: 2 },
      outcome: ['done'],
    });
    expect(criteriaFor('rate-limited', readCard(replayCard), { retryAfterS: 120 })).toMatchObject({
      attemptsAtProxy: { exact: 1 },
      outcome: ['handed-off'],
    });
  });

  it('skips only from card fields', () => {
    expect(skipReason('key-past-retention', forgetCard)).toMatchObject({ cardField: 'retention.minimum' });
    expect(skipReason('key-past-retention', replayCard)).toBeNull();
    expect(skipReason('in-progress', forgetCard)).toMatchObject({ cardField: 'concurrency' });
    expect(skipReason('transient-beyond-limit', { ...replayCard, retryableErrors: fact([], 'test') })).toMatchObject({
      cardField: 'retryableErrors',
    });
    expect(
      skipReason('rate-limited', { ...replayCard, nonRetryableErrors: fact(['400', '429'], 'test') }),
    ).toMatchObject({ cardField: 'nonRetryableErrors' });
    for (const s of [
      'lost-response',
      'lost-request',
      'concurrent-duplicates',
      'changed-intent',
      'permanent-error',
      'crash-after-dispatch',
    ] as const) {
      expect(skipReason(s, forgetCard), s).toBeNull();
    }
  });
});
