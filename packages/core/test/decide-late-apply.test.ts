import { fact, type OperationRecord, type Outcome, type RetrySafetyCard } from '@retrysafe/contract';
import { notFoundIsAuthoritative, resendSafety } from '@retrysafe/contract/rules';
import type { DecisionState } from '@retrysafe/core';
import { decide, decisionState, resolvePolicy, startState } from '@retrysafe/core/internal';
import { FORGETFUL_BEHAVIOUR, REPLAYING_BEHAVIOUR, sandboxCreateCard } from '@retrysafe/sandbox';
import { describe, expect, it } from 'vitest';
import { decisionState as stateOf, T0 } from './helpers.js';

// Issue 15 items 1 (decision row), 2 and 8 (stored errors). Every test here fails on the parent of this change.
const MIN = 60_000;
const lookupOnly = (lateApplyMs?: number): RetrySafetyCard =>
  sandboxCreateCard({
    ...FORGETFUL_BEHAVIOUR,
    lookup: 'get-by-key',
    ...(lateApplyMs !== undefined ? { lateApplyMs } : {}),
  });
const budget = (card: RetrySafetyCard, over = {}) => ({ policy: resolvePolicy(card, over), random: () => 0.5 });
const state = (over: Partial<DecisionState> = {}) =>
  stateOf({
    ledgerState: 'reconciling',
    lastDispatchedAt: T0,
    maybeApplied: true,
    windowStartedAt: T0 + 1000,
    polls: 1,
    ...over,
  });
const notFound = { kind: 'not-found', reason: 'no record' } as const;

describe('the late-apply row: a not-found proves absence only once the last attempt can no longer land', () => {
  it('late-apply bound unknown ⇒ a not-found never proves absence: keep looking, hand off at the window end (never a re-send)', () => {
    const card = lookupOnly();
    expect(card.lookup.lateApplyBound?.value).toBe('unknown');
    // Long after the dispatch: still no proof.
    const d = decide(
      card,
      state({
        now: T0 + 10 * MIN,
        observedAt: T0 + 10 * MIN,
        runStartedAt: T0 + 10 * MIN - 1000,
        windowStartedAt: T0 + 10 * MIN - 1000,
      }),
      notFound,
      budget(card),
    );
    expect(d.action).toBe('lookup');
    expect(d.why).toMatch(/lateApplyBound unknown/);
    const end = decide(
      card,
      state({ now: T0 + 10 * MIN, runStartedAt: T0 + 9 * MIN, windowStartedAt: T0 + 9 * MIN, polls: 6 }),
      notFound,
      budget(card),
    );
    expect(end).toMatchObject({ action: 'handoff', reason: 'lookup-window-exhausted' });
    expect(notFoundIsAuthoritative(card, state({ now: T0 + 60 * MIN }))).toBe(false);
  });

  it('a known bound counts from the LAST dispatch: not-found before last dispatch + bound + delay ⇒ keep looking; after ⇒ not applied', () => {
    const card = lookupOnly(20_000);
    const early = decide(card, state({ now: T0 + 15_000, observedAt: T0 + 15_000 }), notFound, budget(card));
    expect(early.action).toBe('lookup');
    expect(early.action === 'lookup' && early.delayMs).toBeGreaterThanOrEqual(5000);
    expect(decide(card, state({ now: T0 + 20_000, observedAt: T0 + 20_000 }), notFound, budget(card)).action).toBe(
      'send',
    );
  });

  it('after a takeover the dead owner could have sent until its lease end: that, plus the clock-skew margin, is the last dispatch', () => {
    const card = lookupOnly(1000);
    const leaseEnd = T0 + 30_000;
    const wide = budget(card, { lookupWindowMs: 5 * MIN, maxElapsedMs: 10 * MIN });
    const margin = wide.policy.clockSkewMarginMs;
    expect(margin).toBe(MIN);
    // The state the runner decides with once it took the operation over (startState, decisionState), asked at `at`.
    const takenOver = (at: number) => {
      const ctx = { clock: { now: () => at }, ledger: { capabilities: {} } };
      const record = { state: 'dispatched', firstDispatchedAt: T0, updatedAt: at, fence: 2, providerKey: 'k' };
      const claimed = {
        record: record as unknown as OperationRecord,
        takenOver: true,
        previousLeaseExpiresAt: leaseEnd,
        claimedAt: at,
        dispatchWritten: false,
      };
      const s = startState(ctx, { card, policy: wide.policy }, claimed, []);
      return { ...decisionState(ctx, card, s, at), runStartedAt: at, windowStartedAt: at };
    };
    const asked = leaseEnd + 5000; // past the lease end + bound, but inside leaseEnd + margin + bound
    const d = decide(card, takenOver(asked), notFound, wide);
    expect(d.action).toBe('lookup');
    expect(d.action === 'lookup' && d.delayMs).toBeGreaterThanOrEqual(leaseEnd + margin + 1000 - asked);
    expect(decide(card, takenOver(leaseEnd + margin + 1000), notFound, wide).action).toBe('send');
  });
});

describe("one clock-skew margin wherever a key's age meets its retention", () => {
  const replaying = sandboxCreateCard(REPLAYING_BEHAVIOUR);
  const unknown: Outcome = { kind: 'unknown', cause: 'timeout', message: 'timed out' };

  it('resendSafety counts the key as the margin older: at 24 h − 5 min with the 10 min margin it is past retention', () => {
    const age = 24 * 60 * MIN - 5 * MIN;
    expect(resendSafety(replaying, T0, T0 + age, 10 * MIN)).toMatchObject({ safe: false, pastRetention: true });
    expect(resendSafety(replaying, T0, T0 + age, 0).safe).toBe(true);
    // The default is the card's policy (1m unless the card says otherwise).
    expect(resendSafety(replaying, T0, T0 + 24 * 60 * MIN - 30_000).safe).toBe(false);
  });

  it('decide does not re-send on a key inside the margin of its retention: it looks up instead', () => {
    const now = T0 + 24 * 60 * MIN - 5 * MIN;
    const d = decide(
      replaying,
      state({ ledgerState: 'unknown', now, windowStartedAt: null, polls: 0 }),
      unknown,
      budget(replaying, { clockSkewMarginMs: 10 * MIN }),
    );
    expect(d.action).toBe('lookup');
    expect(d.why).toMatch(/clock-skew margin/);
  });

  it('the policy carries the margin from the card (limits.clockSkewMargin), default 1 minute', () => {
    expect(resolvePolicy(replaying).clockSkewMarginMs).toBe(MIN);
    expect(
      resolvePolicy({ ...replaying, limits: { ...replaying.limits, clockSkewMargin: '10m' } }).clockSkewMarginMs,
    ).toBe(10 * MIN);
  });
});

describe('stored errors (issue 15 item 8): a same-key re-send after a stored 5xx only replays it', () => {
  const base = sandboxCreateCard(REPLAYING_BEHAVIOUR);
  const storesErrors: RetrySafetyCard = {
    ...base,
    storedResult: { ...base.storedResult, includesErrors: fact(true, 'test: errors are stored') },
  };
  const stored500: Outcome = { kind: 'unknown', cause: 'server-error', status: 500, message: 'internal error' };

  it('goes to the lookup instead of re-sending', () => {
    const d = decide(
      storesErrors,
      state({ ledgerState: 'unknown', windowStartedAt: null, polls: 0 }),
      stored500,
      budget(storesErrors),
    );
    expect(d.action).toBe('lookup');
    expect(d.why).toMatch(/only replay it/);
  });

  it('without a lookup: hands off, saying why, instead of burning the budget on replays', () => {
    const noLookup: RetrySafetyCard = {
      ...storesErrors,
      lookup: { ...storesErrors.lookup, method: fact('none', 'test') },
    };
    expect(decide(noLookup, state({ ledgerState: 'unknown' }), stored500, budget(noLookup))).toMatchObject({
      action: 'handoff',
      reason: 'unknown-no-safe-resend',
    });
  });

  it('a provider that does not store errors: a 5xx is still an unknown that a same-key re-send may settle', () => {
    expect(
      decide(base, state({ ledgerState: 'unknown', windowStartedAt: null, polls: 0 }), stored500, budget(base)).action,
    ).toBe('send');
  });
});

describe("a policy whose lookup window cannot outlast the card's bounds is refused before anything is claimed (issue 15 item 8)", () => {
  it("resolvePolicy throws a RunnerConfigurationError naming the window and the bounds; a window long enough passes; unknown bounds are the card's statement, not refused", () => {
    const slow = sandboxCreateCard({
      ...FORGETFUL_BEHAVIOUR,
      lookup: 'get-by-key',
      lookupDelayMs: 60_000,
      lateApplyMs: 30_000,
    });
    expect(() => resolvePolicy(slow)).toThrow(/policy\.lookupWindowMs: 30000 ms is shorter than .*90000 ms/);
    expect(resolvePolicy(slow, { lookupWindowMs: 90_000 }).lookupWindowMs).toBe(90_000);
    expect(() => resolvePolicy(lookupOnly())).not.toThrow();
  });

  it('run() refuses it with 0 rows and 0 provider calls', async () => {
    const { createMemoryLedger, createRunner, RunnerConfigurationError } = await import('@retrysafe/core');
    const { createSandboxAdapter, createSandboxProvider } = await import('@retrysafe/sandbox');
    const provider = createSandboxProvider({
      ...FORGETFUL_BEHAVIOUR,
      lookup: 'get-by-key',
      lookupDelayMs: 60_000,
      lateApplyMs: 30_000,
    });
    const ledger = createMemoryLedger();
    const runner = createRunner({ ledger });
    const err = await runner
      .run(createSandboxAdapter({ provider }), 'records.create', { params: { ref: 'w-1' } })
      .catch((e: unknown) => e);
    expect(RunnerConfigurationError.isInstance(err)).toBe(true);
    expect(await ledger.list()).toEqual([]);
    expect(provider.count()).toBe(0);
  });
});
