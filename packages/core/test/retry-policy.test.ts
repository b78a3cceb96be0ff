import { type RetryPolicy, RunnerConfigurationError, systemClock } from '@retrysafe/core';
import { resolvePolicy } from '@retrysafe/core/internal';
import { REPLAYING_BEHAVIOUR, sandboxCreateCard } from '@retrysafe/sandbox';
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { backoffMs, planPoll, planRetry } from '../src/retry-policy.js';

const card = sandboxCreateCard(REPLAYING_BEHAVIOUR);

const policyArb = fc
  .record({
    maxAttempts: fc.integer({ min: 1, max: 12 }),
    maxElapsedMs: fc.integer({ min: 1, max: 600_000 }),
    baseMs: fc.integer({ min: 0, max: 5_000 }),
    capExtra: fc.integer({ min: 0, max: 60_000 }),
    retryAfterCapMs: fc.integer({ min: 0, max: 120_000 }),
  })
  .map(
    ({ capExtra, ...p }): RetryPolicy => ({
      ...p,
      capMs: p.baseMs + capExtra,
      lookupWindowMs: 30_000,
      leaseMs: 30_000,
      waitForOtherMs: 30_000,
      clockSkewMarginMs: 60_000,
    }),
  );

/** Runs the retry loop against a provider that fails every time, on a virtual clock. */
function simulate(policy: RetryPolicy, retryAfters: (number | undefined)[], randoms: number[]) {
  const start = 1_000_000;
  let now = start;
  const calls: number[] = [now];
  const waits: { waited: number; asked: number | undefined }[] = [];
  for (let i = 0; ; i++) {
    const asked = retryAfters[i % retryAfters.length];
    const plan = planRetry({ runAttempts: calls.length, runStartedAt: start, now }, asked, {
      policy,
      random: () => randoms[i % randoms.length]!,
    });
    if (!plan.retry) return { calls, waits, start, stop: plan.detail };
    waits.push({ waited: plan.delayMs, asked });
    now += plan.delayMs;
    calls.push(now);
  }
}

const retryAfterArb = fc.array(fc.option(fc.integer({ min: 0, max: 150_000 }), { nil: undefined }), {
  minLength: 1,
  maxLength: 6,
});
const randomsArb = fc.array(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), {
  minLength: 1,
  maxLength: 6,
});

describe('retry policy properties (fast-check)', () => {
  it('never exceeds max attempts', () => {
    fc.assert(
      fc.property(
        policyArb,
        retryAfterArb,
        randomsArb,
        (p, ra, rnd) => simulate(p, ra, rnd).calls.length <= p.maxAttempts,
      ),
    );
  });

  it('never makes a call after max elapsed', () => {
    fc.assert(
      fc.property(policyArb, retryAfterArb, randomsArb, (p, ra, rnd) => {
        const s = simulate(p, ra, rnd);
        return s.calls.every((t) => t - s.start <= p.maxElapsedMs);
      }),
    );
  });

  it('never waits less than Retry-After (and never waits for one beyond its cap: it stops instead)', () => {
    fc.assert(
      fc.property(policyArb, retryAfterArb, randomsArb, (p, ra, rnd) =>
        simulate(p, ra, rnd).waits.every(
          (w) => w.asked === undefined || (w.waited >= w.asked && w.asked <= p.retryAfterCapMs),
        ),
      ),
    );
  });

  it('full jitter stays within [0, min(cap, base·2^(n−1))]', () => {
    fc.assert(
      fc.property(
        policyArb,
        fc.integer({ min: 1, max: 40 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (p, n, r) => {
          const d = backoffMs(n, p, () => r);
          return d >= 0 && d <= Math.min(p.capMs, p.baseMs * 2 ** (n - 1));
        },
      ),
    );
  });

  it('uses every attempt when nothing else binds (the limit is reached, not undershot)', () => {
    const p = resolvePolicy(card, { maxAttempts: 5, maxElapsedMs: 10 * 60_000, baseMs: 100, capMs: 1000 });
    expect(simulate(p, [undefined], [0.99]).calls).toHaveLength(5);
  });

  it('takes its defaults from the card and rejects nonsense with a typed error', () => {
    expect(resolvePolicy(card)).toMatchObject({
      maxAttempts: 4,
      maxElapsedMs: 120_000,
      baseMs: 200,
      capMs: 10_000,
      retryAfterCapMs: 60_000,
      lookupWindowMs: 30_000,
    });
    expect(() => resolvePolicy(card, { maxAttempts: 0 })).toThrow(RunnerConfigurationError);
    expect(() => resolvePolicy(card, { maxAttempts: 1.5 })).toThrow(RunnerConfigurationError);
    expect(() => resolvePolicy(card, { baseMs: -1 })).toThrow(RunnerConfigurationError);
    expect(() => resolvePolicy(card, { baseMs: 5000, capMs: 10 })).toThrow(RunnerConfigurationError);
  });
});

describe('the system clock sleeps as long as asked', () => {
  it("a wait past setTimeout's 2^31−1 ms limit (about 24.8 days, within a card's 30d) is not cut to 1 ms", async () => {
    vi.useFakeTimers();
    try {
      let woke = false;
      const long = 2 ** 31 + 1000;
      void systemClock.sleep(long).then(() => {
        woke = true;
      });
      await vi.advanceTimersByTimeAsync(1000);
      expect(woke).toBe(false);
      await vi.advanceTimersByTimeAsync(long - 1001);
      expect(woke).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      expect(woke).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });
});

// A stop's detail lands in a hand-off packet a person reads: what ran out, in rounded units, never the arithmetic
// ("the next poll would come 60021 ms into a 60000 ms window").
describe('why a plan stops, for a person', () => {
  const policy: RetryPolicy = {
    maxAttempts: 3,
    maxElapsedMs: 600_000,
    baseMs: 1_000,
    capMs: 30_000,
    retryAfterCapMs: 60_000,
    lookupWindowMs: 60_000,
    leaseMs: 30_000,
    waitForOtherMs: 30_000,
    clockSkewMarginMs: 60_000,
  };
  const budget = { policy, random: () => 0.5 };
  const raw = /\d{4,} ?ms|\bms into\b/;

  it.each([
    [
      'lookup window',
      planPoll({ runStartedAt: 0, now: 21, polls: 1, windowStartedAt: 0 }, 60_000, budget),
      /1 min lookup window/,
    ],
    [
      'run time limit',
      planPoll({ runStartedAt: 0, now: 599_000, polls: 1, windowStartedAt: 590_000 }, 30_000, budget),
      /10 min/,
    ],
    [
      'provider wait',
      planPoll({ runStartedAt: 0, now: 0, polls: 1, windowStartedAt: 0 }, 120_000, budget),
      /2 min.*1 min/,
    ],
    ['retry time limit', planRetry({ runStartedAt: 0, now: 599_000, runAttempts: 1 }, 30_000, budget), /10 min/],
  ])('%s: says what ran out in rounded units, and no raw milliseconds', (_, plan, says) => {
    expect('detail' in plan && plan.detail).toMatch(says);
    expect('detail' in plan && plan.detail).not.toMatch(raw);
  });
});
