import { describe, expect, it } from 'vitest';
import { sampleCard } from './__fixtures__/sample-card.js';
import {
  absenceProvenFrom,
  agentIdempotentHint,
  cardMargin,
  changedParamsRevise,
  keyFoldsResends,
  lateApplyAllowanceMs,
  lookupAvailable,
  lookupSettleMs,
  marginInForce,
  marginProblem,
  notFoundIsAuthoritative,
  resendSafety,
  retentionFloor,
  retentionPassed,
} from './entry-rules.js';
import { type Duration, fact, type RetrySafetyCard } from './index.js';

const T0 = Date.UTC(2026, 11, 1, 10);
const S = 1000;
const MIN = 60 * S;
const H = 60 * MIN;

type Edit = {
  late?: Duration | 'unknown' | 'absent';
  delay?: Duration | null | 'unknown';
  retention?: Duration | null | 'unknown';
  travels?: RetrySafetyCard['providerKey']['travels']['value'];
  semantics?: RetrySafetyCard['storedResult']['semantics']['value'];
  matching?: RetrySafetyCard['parameterMatching']['value'];
  concurrency?: RetrySafetyCard['concurrency']['value'];
  byNature?: boolean | 'unknown';
  rejectionMayCreate?: boolean | 'unknown';
  errors?: boolean | 'unknown';
  method?: RetrySafetyCard['lookup']['method']['value'];
  margin?: Duration;
};

/** The sample card (header key, replays, 24 h, rejects-in-progress, get-by-key with no delay) with one fact changed. */
function card(e: Edit = {}): RetrySafetyCard {
  const base = sampleCard as unknown as RetrySafetyCard;
  const lookup: RetrySafetyCard['lookup'] = {
    method: fact(e.method ?? base.lookup.method.value, 't'),
    consistencyDelay: fact(e.delay !== undefined ? e.delay : base.lookup.consistencyDelay.value, 't'),
    ...(e.late === 'absent' || e.late === undefined ? {} : { lateApplyBound: fact<Duration>(e.late, 't') }),
  };
  return {
    ...base,
    sideEffect: {
      ...base.sideEffect,
      idempotentByNature: fact(e.byNature ?? false, 't'),
      rejectionMayCreate: fact(e.rejectionMayCreate ?? false, 't'),
    },
    providerKey: { ...base.providerKey, travels: fact(e.travels ?? base.providerKey.travels.value, 't') },
    parameterMatching: fact(e.matching ?? base.parameterMatching.value, 't'),
    storedResult: {
      ...base.storedResult,
      semantics: fact(e.semantics ?? base.storedResult.semantics.value, 't'),
      includesErrors: fact(e.errors ?? true, 't'),
    },
    retention: { minimum: fact(e.retention !== undefined ? e.retention : base.retention.minimum.value, 't') },
    concurrency: fact(e.concurrency ?? base.concurrency.value, 't'),
    lookup,
    limits: { ...base.limits, ...(e.margin ? { clockSkewMargin: e.margin } : {}) },
  };
}

describe('cardMargin, lookupAvailable, keyFoldsResends, lateApplyAllowanceMs, lookupSettleMs', () => {
  it("cardMargin: the card's limits.clockSkewMargin, default 1m", () => {
    expect(cardMargin(card())).toBe(MIN);
    expect(cardMargin(card({ margin: '10m' }))).toBe(10 * MIN);
  });

  it.each<[Edit['method'], boolean]>([
    ['get-by-key', true],
    ['status-url', true],
    ['search', true],
    ['resend-same-key', true],
    ['none', false],
    ['unknown', false],
  ])('lookupAvailable: method %s → %s', (method, want) => expect(lookupAvailable(card({ method }))).toBe(want));

  it.each<[Edit, boolean]>([
    [{}, true],
    [{ semantics: 'rejects-duplicate' }, true],
    [{ travels: 'body' }, true],
    [{ travels: 'query' }, true],
    [{ travels: 'none' }, false],
    [{ travels: 'unknown' }, false],
    [{ semantics: 'none' }, false],
    [{ semantics: 'unknown' }, false],
  ])('keyFoldsResends %j → %s', (e, want) => expect(keyFoldsResends(card(e))).toBe(want));

  it.each<[Edit['late'], number, number]>([
    ['30s', MIN, 30 * S],
    ['0s', MIN, 0],
    ['unknown', MIN, MIN], // nobody states it: one more margin, not zero
    ['absent', 10 * MIN, 10 * MIN],
  ])('lateApplyAllowanceMs: lateApplyBound %s, margin %d → %d', (late, margin, want) =>
    expect(lateApplyAllowanceMs(card({ late }), margin)).toBe(want),
  );

  it.each<[Edit, number | null]>([
    [{ late: '30s', delay: null }, 30 * S],
    [{ late: '30s', delay: '2s' }, 32 * S],
    [{ late: '0s', delay: null }, 0],
    [{ late: 'unknown', delay: null }, null],
    [{ late: 'absent', delay: null }, null],
    [{ late: '30s', delay: 'unknown' }, null],
  ])('lookupSettleMs %j → %s', (e, want) => expect(lookupSettleMs(card(e))).toBe(want));
});

describe("resendSafety and retentionPassed: the key's age from the FIRST dispatch, with the margin and the late-apply allowance", () => {
  // 24 h retention, late-apply bound 30 s: with margin M the last safe age is below 24 h − M − 30 s.
  const c = card({ late: '30s' });
  const R = 24 * H;
  it.each<[string, number | null, number, number, boolean]>([
    ['never dispatched', null, T0, MIN, true],
    ['fresh key', T0, T0, MIN, true],
    ['1 ms before retention − margin − late', T0, T0 + R - MIN - 30 * S - 1, MIN, true],
    ['at retention − margin − late', T0, T0 + R - MIN - 30 * S, MIN, false],
    ['inside retention without the margin, past it with the margin', T0, T0 + R - 45 * S, MIN, false],
    ['the same age with margin 0', T0, T0 + R - 45 * S, 0, true],
    ['at retention − late, margin 0', T0, T0 + R - 30 * S, 0, false],
    ['at retention', T0, T0 + R, 0, false],
    ['after retention', T0, T0 + 2 * R, MIN, false],
    ['10 min margin: 24 h − 5 min is past', T0, T0 + R - 5 * MIN, 10 * MIN, false],
  ])('%s', (_name, first, now, margin, safe) => {
    const s = resendSafety(c, first, now, margin);
    expect(s.safe).toBe(safe);
    expect(s.pastRetention).toBe(!safe);
    expect(retentionPassed(c, first, now, margin)).toBe(!safe);
    if (!safe) expect(s.why).toMatch(/past the provider's 24h retention/);
  });

  it('past retention, says the key age and its allowances in rounded units, never raw ms (a person reads it)', () => {
    const { why } = resendSafety(c, T0, T0 + 25 * H, 10 * MIN);
    expect(why).toMatch(/key is 25 h old.*10 min clock-skew margin.*30 s for a late apply/);
    expect(why).not.toMatch(/\d{4,} ?ms/);
  });

  it('an unknown late-apply bound counts as one more margin', () => {
    const u = card({ late: 'unknown' });
    expect(resendSafety(u, T0, T0 + R - 2 * MIN - 1, MIN).safe).toBe(true);
    expect(resendSafety(u, T0, T0 + R - 2 * MIN, MIN)).toMatchObject({ safe: false, pastRetention: true });
  });

  it("the margin defaults to the card's limits.clockSkewMargin", () => {
    const ten = card({ late: '0s', margin: '10m' });
    expect(resendSafety(ten, T0, T0 + R - 9 * MIN).safe).toBe(false);
    expect(resendSafety(card({ late: '0s' }), T0, T0 + R - 9 * MIN).safe).toBe(true);
  });

  it.each<[string, Edit, RegExp]>([
    ['no key travels', { travels: 'none' }, /providerKey\.travels = none/],
    ['key travel unknown', { travels: 'unknown' }, /providerKey\.travels = unknown/],
    ['nothing stored', { semantics: 'none' }, /storedResult\.semantics = none/],
    ['retention unknown', { retention: 'unknown' }, /retention\.minimum = unknown/],
    ['retention none', { retention: null }, /retention\.minimum = null/],
    ['parameter matching unknown', { matching: 'unknown' }, /parameterMatching/],
    ['concurrent duplicates processed', { concurrency: 'duplicates' }, /concurrency = duplicates/],
    ['concurrency unknown', { concurrency: 'unknown' }, /concurrency = unknown/],
    ['a rejection may create, errors not stored', { rejectionMayCreate: true, errors: false }, /second one/],
    ['a rejection may create, errors maybe stored', { rejectionMayCreate: 'unknown', errors: 'unknown' }, /second/],
  ])('not safe, whatever the age: %s', (_name, e, why) => {
    const s = resendSafety(card(e), null, T0, MIN);
    expect(s).toMatchObject({ safe: false, pastRetention: false });
    expect(s.why).toMatch(why);
  });

  it('idempotent by nature: safe at any age, even with nothing stored', () => {
    expect(
      resendSafety(card({ byNature: true, semantics: 'none', retention: null, travels: 'none' }), T0, T0 + 100 * R, MIN)
        .safe,
    ).toBe(true);
  });

  it('retentionPassed: unknown or no retention is always passed (nothing to rely on); a known one, not before the first dispatch', () => {
    expect(retentionPassed(card({ retention: 'unknown' }), T0, T0, MIN)).toBe(true);
    expect(retentionPassed(card({ retention: null }), null, T0, MIN)).toBe(true);
    expect(retentionPassed(card({ retention: '1s' }), null, T0 + R, MIN)).toBe(false);
  });
});

describe('notFoundIsAuthoritative / absenceProvenFrom: measured from the LAST dispatch', () => {
  const c = card({ late: '30s', delay: '2s' }); // settles 32 s after the last dispatch
  it.each<[string, { first: number | null; last?: number | null; askedAt: number }, boolean]>([
    ['never dispatched: any not-found counts', { first: null, askedAt: T0 }, true],
    ['before last + settle', { first: T0, last: T0, askedAt: T0 + 32 * S - 1 }, false],
    ['at last + settle', { first: T0, last: T0, askedAt: T0 + 32 * S }, true],
    [
      'the first dispatch long settled, the last (a re-send) not yet',
      { first: T0 - H, last: T0, askedAt: T0 + 10 * S },
      false,
    ],
    ['no last dispatch given: the first', { first: T0, askedAt: T0 + 32 * S }, true],
  ])('%s', (_name, t, want) => {
    const timing = {
      firstDispatchedAt: t.first,
      ...(t.last !== undefined ? { lastDispatchedAt: t.last } : {}),
      now: t.askedAt + 5 * MIN,
      observedAt: t.askedAt,
    };
    expect(notFoundIsAuthoritative(c, timing)).toBe(want);
  });

  it('judged when the lookup was asked (observedAt), not when it is judged (now); now when no observedAt', () => {
    expect(
      notFoundIsAuthoritative(c, { firstDispatchedAt: T0, lastDispatchedAt: T0, now: T0 + H, observedAt: T0 + S }),
    ).toBe(false);
    expect(notFoundIsAuthoritative(c, { firstDispatchedAt: T0, lastDispatchedAt: T0, now: T0 + H })).toBe(true);
  });

  it.each<[string, Edit, RegExp]>([
    ['late-apply bound unknown', { late: 'unknown', delay: null }, /lateApplyBound unknown/],
    ['late-apply bound absent', { late: 'absent', delay: null }, /lateApplyBound unknown/],
    ['consistency delay unknown', { late: '0s', delay: 'unknown' }, /consistencyDelay/],
  ])('never proven: %s', (_name, e, why) => {
    const proof = absenceProvenFrom(card(e), { firstDispatchedAt: T0, lastDispatchedAt: T0 });
    expect('never' in proof && proof.never).toMatch(why);
    expect(notFoundIsAuthoritative(card(e), { firstDispatchedAt: T0, lastDispatchedAt: T0, now: T0 + 1000 * H })).toBe(
      false,
    );
  });

  it('a LookupContext is read as it is: its lastDispatchedAt counts', () => {
    const ctx = {
      businessOperationId: 'x',
      providerKey: null,
      params: {},
      runId: 'r',
      attemptId: 'a',
      statusRef: null,
      firstDispatchedAt: T0 - H,
      lastDispatchedAt: T0,
      now: T0 + 10 * S,
    };
    expect(notFoundIsAuthoritative(c, ctx)).toBe(false);
    expect(notFoundIsAuthoritative(c, { ...ctx, now: T0 + 32 * S })).toBe(true);
  });
});

describe('agentIdempotentHint: the provider folds a same-key re-send of a key sent a moment ago', () => {
  it.each<[string, Edit, boolean]>([
    ['24 h retention, replays, refuses in-progress duplicates', {}, true],
    ['idempotent by nature, nothing stored', { byNature: true, semantics: 'none', retention: null }, true],
    ['retention shorter than the margin', { retention: '30s' }, false],
    // Was true before the card rules (retention 90 s > 1 min margin): the late apply (unknown = one more margin) leaves no time.
    ['retention 90 s, margin 1 min, late-apply unknown', { retention: '90s', late: 'unknown' }, false],
    ['retention 90 s, margin 1 min, late-apply 10 s', { retention: '90s', late: '10s' }, true],
    // Was true before: concurrent duplicates are processed twice.
    ['24 h retention, but concurrent duplicates are processed', { concurrency: 'duplicates' }, false],
    ['concurrency unknown', { concurrency: 'unknown' }, false],
    ['parameter matching unknown', { matching: 'unknown' }, false],
    ['retention unknown', { retention: 'unknown' }, false],
    ['nothing stored', { semantics: 'none' }, false],
  ])('%s → %s', (_name, e, want) => {
    expect(agentIdempotentHint(card(e))).toBe(want);
  });

  it("the margin is the card's unless given", () => {
    const c = card({ retention: '5m', late: '0s' });
    expect(agentIdempotentHint(c)).toBe(true);
    expect(agentIdempotentHint(card({ retention: '5m', late: '0s', margin: '5m' }))).toBe(false);
    expect(agentIdempotentHint(c, 5 * MIN)).toBe(false);
  });
});

describe('marginProblem: the one check of a policy clock-skew margin, in every rule that takes one', () => {
  const BAD = [Number.NaN, Number.POSITIVE_INFINITY, -1, '60000', null];

  it('unset or a finite number of ms ≥ 0 works; anything else is refused with the same words', () => {
    for (const ok of [undefined, 0, 5 * MIN]) expect(marginProblem(ok)).toBeNull();
    for (const bad of BAD) expect(marginProblem(bad)).toBe(`expected a finite number ≥ 0, got ${String(bad)}`);
  });

  it('marginInForce and retentionFloor refuse a margin that does not work, even with no card to floor', () => {
    for (const bad of BAD) {
      const policy = { clockSkewMarginMs: bad as number };
      const words = `policy.clockSkewMarginMs: ${marginProblem(bad)}`;
      expect(() => marginInForce(card(), policy)).toThrow(words);
      expect(() => retentionFloor([card()], policy)).toThrow(words);
      expect(() => retentionFloor([], policy)).toThrow(words);
    }
    expect(marginInForce(card(), { clockSkewMarginMs: 0 })).toBe(0);
  });

  it('every rule given a margin refuses one that does not work, rather than judging with it', () => {
    // NaN would make a key 25 h into a 24 h retention look young enough to re-send; -1 h, likewise.
    for (const bad of [Number.NaN, -H, null as unknown as number]) {
      const words = `policy.clockSkewMarginMs: ${marginProblem(bad)}`;
      expect(() => resendSafety(card(), T0, T0 + 25 * H, bad)).toThrow(words);
      expect(() => retentionPassed(card(), T0, T0 + 25 * H, bad)).toThrow(words);
      expect(() => lateApplyAllowanceMs(card({ late: 'unknown' }), bad)).toThrow(words);
      expect(() => agentIdempotentHint(card(), bad)).toThrow(words);
    }
    expect(retentionFloor([card()], { clockSkewMarginMs: 0 }).ms).toBe(24 * H);
  });
});

describe('changedParamsRevise', () => {
  it.each<[RetrySafetyCard['sideEffect']['kind']['value'], boolean | 'unknown', boolean]>([
    ['set', true, true],
    ['upsert', true, true],
    ['set', false, false],
    ['upsert', 'unknown', false],
    ['create', true, false],
    ['send', true, false],
  ])('kind %s, idempotent by nature %s → %s', (kind, byNature, want) => {
    const c = card({ byNature });
    expect(changedParamsRevise({ ...c, sideEffect: { ...c.sideEffect, kind: fact(kind, 't') } })).toBe(want);
  });
});
