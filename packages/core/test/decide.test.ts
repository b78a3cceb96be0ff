import { fact, type LookupResult, type Outcome, type RetrySafetyCard } from '@retrysafe/contract';
import { STATES } from '@retrysafe/contract/ledger';
import type { DecisionState } from '@retrysafe/core';
import { decide, resolvePolicy } from '@retrysafe/core/internal';
import { FORGETFUL_BEHAVIOUR, REPLAYING_BEHAVIOUR, sandboxCreateCard } from '@retrysafe/sandbox';
import { describe, expect, it } from 'vitest';
import { decisionState as state, T0 } from './helpers.js';

/** An explicit 'unknown' fact, assignable to a fact of any type. */
const UNK = { value: 'unknown', source: 'test: not known' } as const;
const replaying = sandboxCreateCard(REPLAYING_BEHAVIOUR);
const noReplayNoLookup = sandboxCreateCard(FORGETFUL_BEHAVIOUR);
// lateApplyMs 0: the in-process sandbox applies a request when it gets it, so nothing lands after the client gave up.
const noReplayLookup = sandboxCreateCard({ ...FORGETFUL_BEHAVIOUR, lookup: 'get-by-key', lateApplyMs: 0 });
const replayingNoLookup = sandboxCreateCard({
  replays: true,
  retentionMs: 86_400_000,
  parameterMatching: 'mismatch-error',
  concurrency: 'rejects-in-progress',
  lookup: 'none',
});
const withCard = (card: RetrySafetyCard, patch: Partial<RetrySafetyCard>): RetrySafetyCard => ({ ...card, ...patch });

const budget = (card: RetrySafetyCard, over = {}) => ({ policy: resolvePolicy(card, over), random: () => 0.5 });
const unknown: Outcome = { kind: 'unknown', cause: 'timeout', message: 'timed out' };
const inProgress: Outcome = { kind: 'in-progress', statusRef: '/records/rec_1', retryAfterMs: 2000 };

describe('decision table (docs/concepts.md, "Outcomes and the decision table"), one test per row', () => {
  it('unknown ⇒ never a new send: with a replaying provider inside retention, re-send with the SAME key (the re-send is the lookup)', () => {
    const d = decide(replaying, state(), unknown, budget(replaying));
    expect(d.action).toBe('send');
    expect(d.why).toMatch(/re-send is safe/);
  });

  it('unknown ⇒ lookup first when the provider does not fold re-sends together', () => {
    const d = decide(noReplayLookup, state(), unknown, budget(noReplayLookup));
    expect(d).toMatchObject({ action: 'lookup', delayMs: 0 });
  });

  it('unknown ⇒ hand off when there is neither a safe re-send nor a lookup', () => {
    expect(decide(noReplayNoLookup, state(), unknown, budget(noReplayNoLookup))).toMatchObject({
      action: 'handoff',
      reason: 'unknown-no-safe-resend',
    });
  });

  it('unknown ⇒ a needed card field that is unknown means no automatic re-send (lookup if possible, else hand off)', () => {
    const semUnknown = withCard(replaying, { storedResult: { semantics: UNK, includesErrors: fact(false, 'x') } });
    expect(decide(semUnknown, state(), unknown, budget(semUnknown)).action).toBe('lookup');
    const retUnknown = withCard(replayingNoLookup, { retention: { minimum: UNK } });
    expect(decide(retUnknown, state(), unknown, budget(retUnknown))).toMatchObject({
      action: 'handoff',
      reason: 'unknown-no-safe-resend',
    });
    const pmUnknown = withCard(replayingNoLookup, { parameterMatching: UNK });
    expect(decide(pmUnknown, state(), unknown, budget(pmUnknown))).toMatchObject({ action: 'handoff' });
    const travelsUnknown = withCard(replayingNoLookup, { providerKey: { ...replaying.providerKey, travels: UNK } });
    expect(decide(travelsUnknown, state(), unknown, budget(travelsUnknown))).toMatchObject({ action: 'handoff' });
    const lookupUnknown = withCard(noReplayLookup, { lookup: { method: UNK, consistencyDelay: fact(null, 'x') } });
    expect(decide(lookupUnknown, state(), unknown, budget(lookupUnknown))).toMatchObject({
      action: 'handoff',
      reason: 'unknown-no-safe-resend',
    });
  });

  it('unknown ⇒ no same-key re-send when a duplicate arriving while the first still runs would be processed (concurrency duplicates/unknown)', () => {
    const dup = withCard(replaying, { concurrency: fact('duplicates', 'x') });
    expect(decide(dup, state(), unknown, budget(dup)).action).toBe('lookup');
    const dupNoLookup = withCard(replayingNoLookup, { concurrency: UNK });
    expect(decide(dupNoLookup, state(), unknown, budget(dupNoLookup))).toMatchObject({
      action: 'handoff',
      reason: 'unknown-no-safe-resend',
    });
    const waits = withCard(replayingNoLookup, { concurrency: fact('waits-then-replays', 'x') });
    expect(decide(waits, state(), unknown, budget(waits)).action).toBe('send');
  });

  it('unknown ⇒ an operation idempotent by nature may be re-sent', () => {
    const setValue = withCard(noReplayNoLookup, {
      sideEffect: { kind: fact('set', 'x'), idempotentByNature: fact(true, 'x'), rejectionMayCreate: fact(false, 'x') },
    });
    expect(decide(setValue, state(), unknown, budget(setValue)).action).toBe('send');
  });

  it('key older than the provider retention ⇒ never rely on it: lookup if possible, else hand off key-past-retention', () => {
    const old = state({ now: T0 + 86_400_000 + 1 });
    expect(decide(replaying, old, unknown, budget(replaying, { maxElapsedMs: 10 * 86_400_000 })).action).toBe('lookup');
    expect(decide(replayingNoLookup, old, unknown, budget(replayingNoLookup))).toMatchObject({
      action: 'handoff',
      reason: 'key-past-retention',
    });
  });

  it('in-progress ⇒ poll the status (honouring Retry-After), never a second work item', () => {
    const d = decide(replaying, state({ ledgerState: 'dispatched' }), inProgress, budget(replaying));
    expect(d.action).toBe('lookup');
    expect(d.action === 'lookup' && d.delayMs).toBeGreaterThanOrEqual(2000);
    const noLookup = decide(
      noReplayNoLookup,
      state({ ledgerState: 'dispatched' }),
      inProgress,
      budget(noReplayNoLookup),
    );
    expect(noLookup.action).toBe('handoff');
  });

  it('in-progress ⇒ past the lookup window: hand off in-progress-window-exhausted', () => {
    const s = state({ windowStartedAt: T0, now: T0 + 29_000, polls: 5 });
    expect(decide(replaying, s, inProgress, budget(replaying))).toMatchObject({
      action: 'handoff',
      reason: 'in-progress-window-exhausted',
    });
  });

  it('stored result exists ⇒ adopt it; do not call the provider again', () => {
    expect(decide(replaying, state({ ledgerState: 'succeeded' }), null, budget(replaying))).toMatchObject({
      action: 'complete',
      adopted: true,
    });
    expect(decide(replaying, state(), { kind: 'replayed', result: { id: 'r' } }, budget(replaying))).toMatchObject({
      action: 'complete',
      adopted: true,
    });
    const found: LookupResult = { kind: 'found', outcome: { kind: 'succeeded', result: { id: 'r' } } };
    expect(decide(noReplayLookup, state(), found, budget(noReplayLookup))).toMatchObject({
      action: 'complete',
      adopted: true,
    });
    expect(
      decide(replaying, state({ ledgerState: 'dispatched' }), { kind: 'succeeded', result: 1 }, budget(replaying)),
    ).toMatchObject({ action: 'complete', adopted: false });
  });

  it('rejected ⇒ stop, record, hand off (also when a lookup finds the request rejected)', () => {
    expect(
      decide(replaying, state(), { kind: 'rejected', reason: 'validation', message: 'bad' }, budget(replaying)),
    ).toMatchObject({ action: 'handoff', reason: 'rejected' });
    const found: LookupResult = { kind: 'found', outcome: { kind: 'rejected', reason: 'validation', message: 'bad' } };
    expect(decide(noReplayLookup, state(), found, budget(noReplayLookup))).toMatchObject({
      action: 'handoff',
      reason: 'rejected',
    });
  });

  it('rejected leaving an object ⇒ the hand-off names it and never says "not applied" (a person would send a second)', () => {
    const left: Outcome = { kind: 'rejected', reason: 'card-declined', message: 'declined', created: 'pi_9' };
    const d = decide(replaying, state(), left, budget(replaying));
    expect(d).toMatchObject({ action: 'handoff', reason: 'rejected' });
    expect(d.why).not.toMatch(/not applied/);
    expect(d.why).toMatch(/pi_9/);
  });

  it('not-applied ⇒ bounded retry with backoff; at max attempts ⇒ hand off retry-exhausted', () => {
    const na: Outcome = { kind: 'not-applied', message: '429', retryAfterMs: 3000 };
    const d = decide(noReplayNoLookup, state({ runAttempts: 1 }), na, budget(noReplayNoLookup));
    expect(d.action).toBe('send');
    expect(d.action === 'send' && d.delayMs).toBeGreaterThanOrEqual(3000);
    expect(decide(noReplayNoLookup, state({ runAttempts: 4 }), na, budget(noReplayNoLookup))).toMatchObject({
      action: 'handoff',
      reason: 'retry-exhausted',
    });
    expect(decide(noReplayNoLookup, state({ now: T0 + 119_999 }), na, budget(noReplayNoLookup))).toMatchObject({
      action: 'handoff',
      reason: 'retry-exhausted',
    });
  });

  it('not-applied after an earlier attempt that may have been applied ⇒ still unknown: no plain retry', () => {
    const na: Outcome = { kind: 'not-applied', message: '429', retryAfterMs: 1000 };
    expect(decide(noReplayNoLookup, state({ maybeApplied: true }), na, budget(noReplayNoLookup))).toMatchObject({
      action: 'handoff',
      reason: 'unknown-no-safe-resend',
    });
    expect(decide(noReplayLookup, state({ maybeApplied: true }), na, budget(noReplayLookup)).action).toBe('lookup');
    expect(decide(replaying, state({ maybeApplied: true }), na, budget(replaying)).action).toBe('send');
  });

  it('lookup not-found (authoritative, past the consistency delay) ⇒ the effect was not applied: bounded retry', () => {
    expect(decide(noReplayLookup, state(), { kind: 'not-found', reason: 'none' }, budget(noReplayLookup)).action).toBe(
      'send',
    );
    const delayed = withCard(noReplayLookup, {
      lookup: { method: fact('get-by-key', 'x'), consistencyDelay: fact('10s', 'x'), lateApplyBound: fact('0s', 'x') },
    });
    const early = decide(delayed, state({ now: T0 + 5000 }), { kind: 'not-found', reason: 'none' }, budget(delayed));
    expect(early.action).toBe('lookup');
    expect(early.action === 'lookup' && early.delayMs).toBeGreaterThanOrEqual(5000);
    expect(
      decide(delayed, state({ now: T0 + 10_000 }), { kind: 'not-found', reason: 'none' }, budget(delayed)).action,
    ).toBe('send');
    // A consistency delay longer than the lookup window cannot be waited out: hand off.
    const slow = withCard(noReplayLookup, {
      lookup: { method: fact('search', 'x'), consistencyDelay: fact('1h', 'x'), lateApplyBound: fact('0s', 'x') },
    });
    // (resolvePolicy now refuses such a card with a 30 s window; decide still hands off for a policy built by hand.)
    expect(() => resolvePolicy(slow)).toThrow(/lookupWindowMs/);
    expect(
      decide(slow, state({ now: T0 + 5000 }), { kind: 'not-found', reason: 'none' }, budget(noReplayLookup)),
    ).toMatchObject({ action: 'handoff', reason: 'lookup-window-exhausted' });
    const delayUnknown = withCard(noReplayLookup, {
      lookup: { method: fact('search', 'x'), consistencyDelay: UNK, lateApplyBound: fact('0s', 'x') },
    });
    expect(decide(delayUnknown, state(), { kind: 'not-found', reason: 'none' }, budget(delayUnknown)).action).toBe(
      'lookup',
    );
  });

  it('lookup not-found asked inside the consistency delay of the LAST dispatch ⇒ not proof of absence: keep looking', () => {
    const delayed = withCard(noReplayLookup, {
      lookup: { method: fact('get-by-key', 'x'), consistencyDelay: fact('10s', 'x'), lateApplyBound: fact('0s', 'x') },
    });
    // A re-send at T0+20s; the lookup asked at T0+25s, the answer is judged at T0+40s: still inside the delay when asked.
    const s = state({
      firstDispatchedAt: T0,
      lastDispatchedAt: T0 + 20_000,
      observedAt: T0 + 25_000,
      now: T0 + 40_000,
      windowStartedAt: T0 + 39_000,
      polls: 1,
    });
    expect(decide(delayed, s, { kind: 'not-found', reason: 'none' }, budget(delayed)).action).toBe('lookup');
    expect(
      decide(delayed, { ...s, observedAt: T0 + 30_000 }, { kind: 'not-found', reason: 'none' }, budget(delayed)).action,
    ).toBe('send');
  });

  it('unknown ⇒ a re-send that would only go out after the key passed its retention is not a safe re-send', () => {
    // 59 s into a 1 m retention, the provider asks for 5 s: by the time of the re-send the key is too old.
    const shortRetention = withCard(replaying, { retention: { minimum: fact('1m', 'x') } });
    const late = state({ now: T0 + 59_000 });
    const d = decide(
      shortRetention,
      late,
      { ...unknown, retryAfterMs: 5000 },
      budget(shortRetention, { maxElapsedMs: 600_000 }),
    );
    expect(d.action).toBe('lookup');
  });

  it('lookup cannot tell ⇒ keep polling inside the window, then hand off lookup-window-exhausted', () => {
    const ct: LookupResult = { kind: 'cannot-tell', reason: 'throttled' };
    expect(decide(noReplayLookup, state({ windowStartedAt: T0, polls: 1 }), ct, budget(noReplayLookup)).action).toBe(
      'lookup',
    );
    expect(
      decide(noReplayLookup, state({ windowStartedAt: T0, now: T0 + 30_000, polls: 9 }), ct, budget(noReplayLookup)),
    ).toMatchObject({ action: 'handoff', reason: 'lookup-window-exhausted' });
  });

  it('lookup found two objects of this operation (a duplicate already made) ⇒ hand off at once, naming them', () => {
    // Asking again cannot undo a duplicate: waiting out the lookup window only delays the person who must choose.
    const two: LookupResult = { kind: 'cannot-tell', reason: '2 items', duplicates: ['obj_1', 'obj_2'] };
    const d = decide(noReplayLookup, state({ windowStartedAt: T0, polls: 1 }), two, budget(noReplayLookup));
    expect(d).toMatchObject({ action: 'handoff', reason: 'unknown-no-safe-resend' });
    expect(d.action === 'handoff' && d.why).toContain('obj_1, obj_2');
  });

  it('a lookup or status poll never goes out sooner than a Retry-After beyond its cap: it hands off instead', () => {
    // RetryPolicy.retryAfterCapMs: "the runner stops instead of calling sooner than asked".
    const b = budget(noReplayLookup, { retryAfterCapMs: 5000, lookupWindowMs: 120_000, maxElapsedMs: 600_000 });
    const s = state({ windowStartedAt: T0, polls: 1 });
    const ct: LookupResult = { kind: 'cannot-tell', reason: 'throttled', retryAfterMs: 60_000 };
    expect(decide(noReplayLookup, s, ct, b)).toMatchObject({ action: 'handoff', reason: 'lookup-window-exhausted' });
    const busy: Outcome = { ...inProgress, retryAfterMs: 60_000 };
    expect(decide(noReplayLookup, s, busy, b)).toMatchObject({
      action: 'handoff',
      reason: 'in-progress-window-exhausted',
    });
    // Within the cap the wait is honoured in full.
    const d = decide(noReplayLookup, s, { ...ct, retryAfterMs: 4000 }, b);
    expect(d.action === 'lookup' && d.delayMs).toBeGreaterThanOrEqual(4000);
  });

  it('a throttled answer after a maybe-applied attempt is looked up, but not before the Retry-After', () => {
    // The runner keeps a send's Retry-After as notBefore: it "holds back every later call", lookups included.
    const na: Outcome = { kind: 'not-applied', message: '429', retryAfterMs: 4000 };
    const throttled = state({ maybeApplied: true, notBefore: T0 + 1000 + 4000 });
    const d = decide(noReplayLookup, throttled, na, budget(noReplayLookup));
    expect(d.action).toBe('lookup');
    expect(d.action === 'lookup' && d.delayMs).toBeGreaterThanOrEqual(4000);
  });

  it('recovered from the ledger: claimed ⇒ send; dispatched ⇒ treated as unknown; in-progress ⇒ poll', () => {
    expect(
      decide(
        noReplayNoLookup,
        state({ ledgerState: 'claimed', firstDispatchedAt: null, runAttempts: 0 }),
        null,
        budget(noReplayNoLookup),
      ).action,
    ).toBe('send');
    expect(
      decide(noReplayNoLookup, state({ ledgerState: 'dispatched', runAttempts: 0 }), null, budget(noReplayNoLookup)),
    ).toMatchObject({ action: 'handoff', reason: 'unknown-no-safe-resend' });
    expect(
      decide(noReplayLookup, state({ ledgerState: 'dispatched', runAttempts: 0 }), null, budget(noReplayLookup)).action,
    ).toBe('lookup');
    expect(
      decide(replaying, state({ ledgerState: 'in-progress', runAttempts: 0 }), null, budget(replaying)).action,
    ).toBe('lookup');
  });

  it('is pure: the same inputs always give the same decision, and it reads only the card (not the provider name)', () => {
    const renamed = withCard(replaying, { provider: 'stripe', operation: 'stripe.records.create' });
    for (const o of [unknown, inProgress, { kind: 'not-applied', message: 'x' } as Outcome]) {
      expect(decide(replaying, state(), o, budget(replaying))).toEqual(
        decide(replaying, state(), o, budget(replaying)),
      );
      expect(decide(renamed, state(), o, budget(renamed))).toEqual(decide(replaying, state(), o, budget(replaying)));
    }
  });
});

describe("decide's explanations", () => {
  // A state is the ledger's word; said in a sentence it is words ("already handed off"), never the token.
  it.each(STATES)('from the ledger state %s alone: no state token in the sentence', (ledgerState) => {
    const d = decide(replaying, state({ ledgerState }), null, budget(replaying));
    expect(d.why).not.toMatch(/\b(already|is) [a-z]+-[a-z]+\b/);
  });

  // Refused before processing for a cause outside the params: nothing applied, and resuming is safe once the cause
  // is fixed (the packet's resume action); the explanation says what to do, not only that it will not succeed as is.
  it.each(['authentication', 'permission', 'configuration'] as const)(
    'refused for %s before processing: fix the cause, then resume',
    (reason) => {
      const refused: Outcome = { kind: 'rejected', reason, message: 'no' };
      const d = decide(replaying, state({ ledgerState: 'dispatched' }), refused, budget(replaying));
      expect(d).toMatchObject({ action: 'handoff', reason: 'rejected' });
      expect(d.why).toMatch(/not applied/);
      expect(d.why).toMatch(/fix the cause.*then resume/);
      expect(d.why).not.toMatch(/will not succeed as is/);
    },
  );

  it('a refusal of the params themselves, or one that may follow an applied attempt: no resume promised', () => {
    const invalid: Outcome = { kind: 'rejected', reason: 'validation', message: 'no' };
    const permission: Outcome = { kind: 'rejected', reason: 'permission', message: 'no' };
    for (const [obs, over] of [
      [invalid, {}],
      [permission, { maybeApplied: true }],
      [permission, { keyMayHoldEarlier: true }],
    ] as const)
      expect(decide(replaying, state({ ledgerState: 'dispatched', ...over }), obs, budget(replaying)).why).not.toMatch(
        /resume/,
      );
  });
});
