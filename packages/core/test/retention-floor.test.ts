// pruneLedger's floor is the one the runner works with: the policy's clock-skew margin when it sets one, and no
// silent prune of an operation whose card does not know how long the provider keeps its key.
import { type Duration, fact, LedgerError, type RetrySafetyCard } from '@retrysafe/contract';
import { createMemoryLedger, pruneLedger, RunnerConfigurationError } from '@retrysafe/core';
import { resolvePolicy } from '@retrysafe/core/internal';
import { REPLAYING_BEHAVIOUR, sandboxCreateCard } from '@retrysafe/sandbox';
import { describe, expect, it } from 'vitest';

const H = 3_600_000;
const DAY = 24 * H;
const NOW = Date.UTC(2026, 0, 60);

const card = (retention: Duration | 'unknown', operation: string): RetrySafetyCard => {
  const base = sandboxCreateCard(REPLAYING_BEHAVIOUR);
  return { ...base, operation, retention: { minimum: fact(retention as Duration, 'test') } };
};

/** A memory ledger holding one operation of `operation`, succeeded `age` ms before NOW. */
async function ledgerWith(operation: string, age: number) {
  const ledger = createMemoryLedger();
  const c = await ledger.claim({
    businessOperationId: 'old-one' as never,
    provider: 'p',
    operation,
    intentFingerprint: 'i',
    paramsFingerprint: 'f',
    params: {},
    providerKey: null,
    owner: 'w',
    leaseMs: 1000,
    now: NOW - age,
    dispatch: true,
  });
  if (c.kind !== 'claimed') throw new Error(c.kind);
  await ledger.setState(c.record, { state: 'succeeded', lastOutcome: 'succeeded', now: NOW - age });
  return ledger;
}

describe('pruneLedger: the margin in force is the policy’s, as the runner’s', () => {
  it('a policy that widens the clock-skew margin widens the floor (refused below it, accepted at it)', async () => {
    const ledger = createMemoryLedger();
    const cards = [card('24h', 'a.day')];
    const policy = { clockSkewMarginMs: 2 * H };
    await expect(pruneLedger(ledger, { olderThan: 25 * H, cards, policy, now: NOW })).rejects.toThrow(
      RunnerConfigurationError,
    );
    // 24 h + the 2 h margin + the late-apply allowance (unknown on this card: one more margin).
    await expect(pruneLedger(ledger, { olderThan: 26 * H, cards, policy, now: NOW })).rejects.toThrow(
      RunnerConfigurationError,
    );
    expect(await pruneLedger(ledger, { olderThan: 28 * H, cards, policy, now: NOW })).toMatchObject({
      floor: { ms: 28 * H, card: 'a.day', forced: false },
    });
  });

  it('a duration of a fraction of a ms cuts off at the whole ms before it (ledgers take whole ms): nothing younger goes', async () => {
    const ledger = await ledgerWith('a.day', 28 * H);
    const cards = [card('24h', 'a.day')];
    expect(await pruneLedger(ledger, { olderThan: 28 * H + 0.5, cards, now: NOW })).toMatchObject({ pruned: 0 });
    expect(await pruneLedger(ledger, { olderThan: 28 * H - 1.5, cards, now: NOW })).toMatchObject({ pruned: 1 });
  });

  it('a policy margin that is not a duration ≥ 0 is refused, as the runner refuses it', async () => {
    const ledger = createMemoryLedger();
    const cards = [card('24h', 'a.day')];
    await expect(
      pruneLedger(ledger, { olderThan: '30d', cards, policy: { clockSkewMarginMs: -1 }, now: NOW }),
    ).rejects.toThrow(/clockSkewMarginMs/);
  });

  it('every margin the runner refuses, prune refuses with the same typed error and words, and no other', async () => {
    const ledger = createMemoryLedger();
    const cards = [card('24h', 'a.day')];
    const runner = (m: unknown) => {
      try {
        resolvePolicy(cards[0]!, { clockSkewMarginMs: m as number });
        return 'accepted';
      } catch (err) {
        return RunnerConfigurationError.isInstance(err) ? err.message : `untyped: ${String(err)}`;
      }
    };
    const prune = (m: unknown) =>
      pruneLedger(ledger, { olderThan: '30d', cards, policy: { clockSkewMarginMs: m as number }, now: NOW }).then(
        () => 'accepted',
        (err: unknown) => (RunnerConfigurationError.isInstance(err) ? err.message : `untyped: ${String(err)}`),
      );
    for (const m of [Number.NaN, Number.POSITIVE_INFINITY, -1, '60000', null]) {
      expect(runner(m), String(m)).toMatch(/^policy\.clockSkewMarginMs: expected a finite number ≥ 0/);
      expect(await prune(m), String(m)).toBe(runner(m));
    }
    for (const m of [undefined, 0, H]) expect([runner(m), await prune(m)]).toEqual(['accepted', 'accepted']);
  });
});

describe("pruneLedger: the floor waits out the card's late apply", () => {
  // Closed right after a send (abandoned, say), the provider may still apply that send, and store its key, up to
  // lookup.lateApplyBound later: the key's retention runs from then, so the record must outlive it by that much.
  const late = (bound: Duration | 'unknown') => {
    const base = card('24h', 'a.late');
    return { ...base, lookup: { ...base.lookup, lateApplyBound: fact(bound as Duration, 'test') } };
  };

  it('a 6 h late-apply bound: 24 h + 1 m margin is refused, 24 h + 1 m + 6 h is the floor', async () => {
    const ledger = createMemoryLedger();
    const cards = [late('6h')];
    await expect(pruneLedger(ledger, { olderThan: 24 * H + 60_000, cards, now: NOW })).rejects.toThrow(/a\.late/);
    expect(await pruneLedger(ledger, { olderThan: 30 * H + 60_000, cards, now: NOW })).toMatchObject({
      floor: { ms: 30 * H + 60_000, card: 'a.late', forced: false },
    });
  });

  it('an unknown bound counts as one more margin, as in the re-send rule (lateApplyAllowanceMs)', async () => {
    const cards = [late('unknown')];
    await expect(pruneLedger(createMemoryLedger(), { olderThan: 24 * H + 60_000, cards, now: NOW })).rejects.toThrow(
      /a\.late/,
    );
    expect(await pruneLedger(createMemoryLedger(), { olderThan: 24 * H + 120_000, cards, now: NOW })).toMatchObject({
      floor: { ms: 24 * H + 120_000 },
    });
  });
});

describe('pruneLedger: a card whose key retention is unknown', () => {
  const cards = [card('24h', 'a.day'), card('unknown', 'd.unknown')];

  it('refuses (typed, naming the card) while the ledger holds old closed operations of it; nothing is deleted', async () => {
    const ledger = await ledgerWith('d.unknown', 40 * DAY);
    const err = await pruneLedger(ledger, { olderThan: '30d', cards, now: NOW }).catch((e: unknown) => e);
    expect(RunnerConfigurationError.isInstance(err)).toBe(true);
    expect((err as Error).message).toMatch(/d\.unknown/);
    expect((err as Error).message).toMatch(/unknownRetention/);
    expect(await ledger.get('old-one' as never)).not.toBeNull();
    // The same card known twice (built in and from a config) is named once.
    const twice = await pruneLedger(ledger, { olderThan: '30d', cards: [...cards, ...cards], now: NOW }).catch(
      (e: unknown) => e,
    );
    expect((twice as Error).message.match(/d\.unknown/g)).toHaveLength(1);
  });

  it('a retention the caller gives for those cards sets their floor (plus the margin); force prunes regardless', async () => {
    const ledger = await ledgerWith('d.unknown', 40 * DAY);
    await expect(pruneLedger(ledger, { olderThan: '30d', cards, unknownRetention: '30d', now: NOW })).rejects.toThrow(
      /d\.unknown/,
    );
    expect(await ledger.get('old-one' as never)).not.toBeNull();
    expect(await pruneLedger(ledger, { olderThan: '30d', cards, unknownRetention: '7d', now: NOW })).toMatchObject({
      pruned: 1,
      floor: { ms: 7 * DAY + 2 * 60_000, card: 'd.unknown', forced: false },
    });
    const again = await ledgerWith('d.unknown', 40 * DAY);
    expect(await pruneLedger(again, { olderThan: '30d', cards, force: true, now: NOW })).toMatchObject({ pruned: 1 });
  });

  it('the report says the floor was forced when force only lifts the unknown-retention refusal, and for which operations', async () => {
    const held = await ledgerWith('d.unknown', 40 * DAY);
    expect(await pruneLedger(held, { olderThan: '30d', cards, force: true, now: NOW })).toMatchObject({
      pruned: 1,
      floor: { card: 'a.day', forced: true, below: false, unknownHeld: ['d.unknown'] },
    });
    // Force given but nothing to lift (above the floor, no old operation of unknown retention): not forced.
    const young = await ledgerWith('d.unknown', 2 * DAY);
    expect(await pruneLedger(young, { olderThan: '30d', cards, force: true, now: NOW })).toMatchObject({
      floor: { forced: false, below: false, unknownHeld: [] },
    });
  });

  it('a row of it the ledger cannot read counts as held (its age is unknown), and is named in the report', async () => {
    const young = await ledgerWith('d.unknown', 2 * DAY);
    // As a SQL ledger lists past a row cut from outside: the row told by id, left out of the listing.
    const ledger = {
      ...young,
      list: async (f: Parameters<typeof young.list>[0] = {}) => {
        if (f.operation === 'd.unknown') f.onUnreadable?.('cut-one', new LedgerError('cut'));
        return young.list(f);
      },
    };
    await expect(pruneLedger(ledger, { olderThan: '30d', cards, now: NOW })).rejects.toThrow(/d\.unknown/);
    expect(await pruneLedger(ledger, { olderThan: '30d', cards, force: true, now: NOW })).toMatchObject({
      floor: { unknownHeld: ['d.unknown'] },
      unreadable: ['cut-one'],
    });
  });

  it('prunes as before when the ledger holds none of its operations old enough', async () => {
    const ledger = await ledgerWith('a.day', 40 * DAY);
    expect(await pruneLedger(ledger, { olderThan: '30d', cards, now: NOW })).toMatchObject({ pruned: 1 });
    const young = await ledgerWith('d.unknown', 2 * DAY);
    expect(await pruneLedger(young, { olderThan: '30d', cards, now: NOW })).toMatchObject({ pruned: 0 });
  });
});

describe('pruneLedger: no floor only when the caller says so', () => {
  it('refuses without cards (a forgotten list would prune at any age); `cards: []` is no floor, said', async () => {
    const ledger = await ledgerWith('a.day', 2 * H);
    const err = await pruneLedger(ledger, { olderThan: 0, now: NOW } as never).catch((e: unknown) => e);
    expect(RunnerConfigurationError.isInstance(err)).toBe(true);
    expect((err as Error).message).toMatch(/cards/);
    expect(await ledger.get('old-one' as never)).not.toBeNull();
    expect(await pruneLedger(ledger, { olderThan: 0, cards: [], now: NOW })).toMatchObject({ pruned: 1 });
  });
});
