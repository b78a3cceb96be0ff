// pruneLedger's floor is the one the runner works with: the policy's clock-skew margin when it sets one.
import { type Duration, fact, type RetrySafetyCard } from '@retrysafe/contract';
import { createMemoryLedger, pruneLedger, RunnerConfigurationError } from '@retrysafe/core';
import { REPLAYING_BEHAVIOUR, sandboxCreateCard } from '@retrysafe/sandbox';
import { describe, expect, it } from 'vitest';

const H = 3_600_000;
const NOW = Date.UTC(2026, 0, 60);

const card = (retention: Duration | 'unknown', operation: string): RetrySafetyCard => {
  const base = sandboxCreateCard(REPLAYING_BEHAVIOUR);
  return { ...base, operation, retention: { minimum: fact(retention as Duration, 'test') } };
};

describe('pruneLedger: the margin in force is the policy’s, as the runner’s', () => {
  it('a policy that widens the clock-skew margin widens the floor (refused below it, accepted at it)', async () => {
    const ledger = createMemoryLedger();
    const cards = [card('24h', 'a.day')];
    const policy = { clockSkewMarginMs: 2 * H };
    await expect(pruneLedger(ledger, { olderThan: 25 * H, cards, policy, now: NOW })).rejects.toThrow(
      RunnerConfigurationError,
    );
    expect(await pruneLedger(ledger, { olderThan: 26 * H, cards, policy, now: NOW })).toMatchObject({
      floor: { ms: 26 * H, card: 'a.day', forced: false },
    });
  });

  it('a policy margin that is not a duration ≥ 0 is refused, as the runner refuses it', async () => {
    const ledger = createMemoryLedger();
    const cards = [card('24h', 'a.day')];
    await expect(
      pruneLedger(ledger, { olderThan: '30d', cards, policy: { clockSkewMarginMs: -1 }, now: NOW }),
    ).rejects.toThrow(/clockSkewMarginMs/);
  });
});
