import type { Duration, RetrySafetyCard } from '@retrysafe/contract';
import {
  cardMargin,
  durationMs,
  lateApplyAllowanceMs,
  lookupAvailable,
  notFoundIsAuthoritative,
  resendSafety,
} from '@retrysafe/contract/rules';
import { oracleAbsenceProvenAfterMs, oracleResendSafe, readCard } from '@retrysafe/testkit';
import { describe, expect, it } from 'vitest';
import { expectWalked, shippedCards } from './shipped-cards.js';

// The drill criteria (testkit criteria.ts) are an independent oracle on purpose; the card rules (contract
// card-rules.ts) are what decide and the runner use. They must agree on every card the project ships.

/** No shipped card states a late-apply bound yet (all unknown): each is walked as shipped and with one stated, so both branches of the timing rules are compared. */
const withLate = (card: RetrySafetyCard, late: Duration): RetrySafetyCard => ({
  ...card,
  lookup: { ...card.lookup, lateApplyBound: { value: late, source: 'test variant' } },
});
const shipped = await shippedCards();
const cards: [string, RetrySafetyCard][] = shipped.flatMap(
  ([name, card]) =>
    [
      [name, card],
      [`${name} + lateApplyBound 30s`, withLate(card, '30s')],
    ] as [string, RetrySafetyCard][],
);
const T0 = Date.UTC(2026, 11, 1, 10);

describe('oracle (testkit criteria) and rule (contract card-rules) agree on every shipped card', () => {
  it('walks the shipped cards: every adapter, the drill variants, the docs examples', () => {
    expectWalked(shipped, ['packages/config/examples/http-api/orders.card.yaml']);
    expect(shipped.length).toBeGreaterThanOrEqual(16);
    // Some cards fold re-sends and some do not, some prove absence and some never: the comparison sees both sides.
    expect(new Set(cards.map(([, c]) => oracleResendSafe(c, 0, 0))).size).toBe(2);
    expect(new Set(cards.map(([, c]) => oracleAbsenceProvenAfterMs(c) === null))).toEqual(new Set([true, false]));
  });

  it.each(cards)('%s: re-send safe at every key age, with and without the margin', (_name, card) => {
    const retention = card.retention.minimum.value;
    const R = retention === 'unknown' || retention === null ? 24 * 3_600_000 : durationMs(retention);
    for (const margin of [0, cardMargin(card), 10 * 60_000]) {
      const late = lateApplyAllowanceMs(card, margin);
      // before / at / after retention, with and without the margin and the late-apply allowance
      const ages = [
        0,
        1,
        R - margin - late - 1,
        R - margin - late,
        R - margin - late + 1,
        R - late - 1,
        R - late,
        R - 1,
        R,
        R + 1,
        2 * R,
      ].filter((a) => a >= 0);
      for (const age of ages)
        expect(resendSafety(card, T0, T0 + age, margin).safe, `age ${age} ms, margin ${margin} ms`).toBe(
          oracleResendSafe(card, age, margin),
        );
      expect(resendSafety(card, null, T0, margin).safe, `never dispatched, margin ${margin}`).toBe(
        oracleResendSafe(card, null, margin),
      );
    }
    expect(readCard(card).safeResend).toBe(resendSafety(card, null, 0).safe);
  });

  it.each(cards)('%s: a not-found proves absence from the same moment after the last dispatch', (_name, card) => {
    const settle = oracleAbsenceProvenAfterMs(card);
    const S = settle ?? 60_000;
    for (const after of [0, S - 1, S, S + 1, 10 * S + 3_600_000].filter((a) => a >= 0)) {
      // The first dispatch an hour before the last: only the last counts.
      const timing = {
        firstDispatchedAt: T0 - 3_600_000,
        lastDispatchedAt: T0,
        now: T0 + after + 1000,
        observedAt: T0 + after,
      };
      expect(notFoundIsAuthoritative(card, timing), `${after} ms after the last dispatch`).toBe(
        settle !== null && after >= settle,
      );
    }
    const a = readCard(card);
    expect(a.authoritativeLookup).toBe(a.lookup && settle !== null && settle < a.lookupWindowMs);
    // The oracle's lookup leaves out a same-key re-send (a drill counts that as a re-send); the rule counts it.
    expect(a.lookup || card.lookup.method.value === 'resend-same-key').toBe(lookupAvailable(card));
  });
});
