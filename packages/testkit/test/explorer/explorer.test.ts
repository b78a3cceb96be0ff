import type { Decision } from '@retrysafe/core';
import { decide } from '@retrysafe/core/internal';
import { REPLAYING_BEHAVIOUR, sandboxCreateCard } from '@retrysafe/sandbox';
import { type DecideFn, explore } from '@retrysafe/testkit/explorer';
import { describe, expect, it } from 'vitest';
import { newWorld, process, providerFromCard } from '../../src/explorer/model.js';
import { lookupOnly, trustsEveryNotFound } from './broken-rules.js';

/** A broken rule: where the runner's `decide` gives up (a hand-off for anything but a rejection), it does `instead`. */
const insteadOfGivingUp =
  (instead: Decision): DecideFn =>
  (card, state, obs, budget) => {
    const d = decide(card, state, obs, budget);
    return d.action === 'handoff' && d.reason !== 'rejected' ? instead : d;
  };

describe('explorer', () => {
  it('catches a decide that trusts every not-found where the runner does not: it decides again and again, never calling', () => {
    // The runner's observationPatch still counts the early not-found as maybe applied, so the loop's key check refuses
    // each send and decides again with no wait: reported as stuck, not explored forever (core-rules.test.ts: both broken).
    const r = explore({ card: lookupOnly, decide: trustsEveryNotFound, workers: 1, maxCrashes: 0 });
    console.log(r.summary);
    expect(r.violation?.invariant).toBe('stuck');
    expect(r.violation!.message).toMatch(/decided again 2 times without a call or lookup/);
    expect(r.violation!.story).toMatch(/BROKEN: trusts every not-found/);
    expect(r.violation!.story).toMatch(/outlasted the key's retention; decides again/);
  });

  it('gives an operation back (not-sent) only where no request of it ever reached the provider', () => {
    // No lookup: after an unknown call, a spent budget is retry-exhausted too, and a last call refused must not give it back.
    const card = sandboxCreateCard({ ...REPLAYING_BEHAVIOUR, lookup: 'none' });
    const refused = { fates: ['delivered', 'refused', 'lost-after'], maxNetworkFaults: 2 } as const;
    const r = explore({ card, policy: { maxAttempts: 2 }, workers: 1, maxCrashes: 1, ...refused });
    console.log(r.summary);
    expect(r.violation, r.violation?.story).toBeNull();
    expect(r.truncated).toBe(false);
    expect(r.endings['not-sent']).toBeGreaterThan(0);
  });

  it('runs the real decide and reports states, depth and how the runs ended', () => {
    const r = explore({
      card: sandboxCreateCard(REPLAYING_BEHAVIOUR),
      workers: 2,
      clockSkewMs: 0,
      maxNetworkFaults: 1,
    });
    console.log(r.summary);
    expect(r.violation).toBeNull();
    expect(r.truncated).toBe(false);
    expect(r.states).toBeGreaterThan(100);
    expect(r.depth).toBeGreaterThan(5);
    expect(r.endings.succeeded).toBeGreaterThan(0);
  });

  it('catches a provider call on a run-out lease when the runner does not check its lease before calling (a paused worker)', () => {
    const card = sandboxCreateCard(REPLAYING_BEHAVIOUR);
    const r = explore({ card, workers: 1, maxCrashes: 0, maxPauses: 1, maxNetworkFaults: 0, runnerChecksLease: false });
    expect(r.violation?.invariant).toBe('lease');
    expect(r.violation!.story).toMatch(/PAUSES/);
    const checked = explore({ card, workers: 1, maxCrashes: 0, maxPauses: 1, maxNetworkFaults: 0 });
    expect(checked.violation).toBeNull();
  });

  it('catches a dishonest terminal state: a rule that calls a not-found a success', () => {
    const claimsSuccess: DecideFn = (card, state, obs, budget) =>
      obs !== null && obs.kind === 'not-found'
        ? { action: 'complete', adopted: true, why: 'BROKEN: not-found means done' }
        : decide(card, state, obs, budget);
    const r = explore({ card: lookupOnly, decide: claimsSuccess, workers: 1, maxCrashes: 0, maxNetworkFaults: 1 });
    expect(r.violation?.invariant).toBe('honest-terminal');
    expect(r.violation!.story).toMatch(/lost before the provider/);
  });

  it('a rejection ends handed off, as the runner writes it, and one while the effect exists is a dishonest terminal state', () => {
    const rejectsNotFound: DecideFn = (card, state, obs, budget) =>
      obs !== null && obs.kind === 'not-found'
        ? { action: 'handoff', reason: 'rejected', why: 'BROKEN: not-found means rejected' }
        : decide(card, state, obs, budget);
    const world = { card: lookupOnly, decide: rejectsNotFound, workers: 1, maxCrashes: 0 } as const;
    const lost = explore({ ...world, maxNetworkFaults: 1, fates: ['delivered', 'lost-before'] });
    expect(lost.violation).toBeNull();
    expect(lost.endings).toHaveProperty('handed-off:rejected');
    expect(lost.endings).not.toHaveProperty('rejected');
    const r = explore({ ...world, maxNetworkFaults: 1, fates: ['delivered', 'late'] });
    expect(r.violation?.invariant, r.summary).toBe('honest-terminal');
    expect(r.violation!.story).toMatch(/handed-off \(rejected\)/);
  });

  it('catches a rule that never gives up: polling on past maxElapsed is a stuck operation, not "no violation"', () => {
    const keepsLooking = insteadOfGivingUp({ action: 'lookup', delayMs: 1000, why: 'BROKEN: never stops looking' });
    const r = explore({ card: lookupOnly, decide: keepsLooking, workers: 1, maxCrashes: 0, maxNetworkFaults: 1 });
    console.log(r.summary);
    expect(r.violation?.invariant).toBe('stuck');
    expect(r.violation!.message).toMatch(/maxElapsed/);
    expect(r.violation!.story).toMatch(/BROKEN: never stops looking/);
  });

  it('catches a rule that re-sends past maxAttempts', () => {
    const sendsOnAndOn = insteadOfGivingUp({ action: 'send', delayMs: 0, why: 'BROKEN: one more try' });
    const card = sandboxCreateCard(REPLAYING_BEHAVIOUR);
    const r = explore({
      card,
      decide: sendsOnAndOn,
      policy: { maxAttempts: 2 },
      workers: 1,
      maxCrashes: 0,
      maxNetworkFaults: 2,
    });
    console.log(r.summary);
    expect(r.violation?.invariant).toBe('stuck');
    expect(r.violation!.message).toMatch(/maxAttempts/);
  });
});

describe('explorer options', () => {
  it('a misspelt fate or a bound that is not a count is a TypeError, not fewer interleavings reported as no violation', () => {
    // control: with the real fate the broken rule is caught
    const base = { card: lookupOnly, decide: trustsEveryNotFound, workers: 1, maxCrashes: 0 } as const;
    expect(explore({ ...base, fates: ['delivered', 'late'] }).violation?.invariant).toBe('stuck');
    expect(() => explore({ ...base, fates: ['delivered', 'lates' as never] })).toThrow(TypeError);
    expect(() => explore({ ...base, fates: ['delivered', 'lates' as never] })).toThrow(/unknown fate 'lates'/);
    for (const bad of [Number.NaN, -1, 1.5, '2' as never])
      expect(() => explore({ ...base, maxNetworkFaults: bad }), String(bad)).toThrow(/maxNetworkFaults/);
    expect(() => explore({ ...base, maxCrashes: Number.NaN })).toThrow(/maxCrashes/);
    expect(() => explore({ ...base, maxPauses: -1 })).toThrow(/maxPauses/);
    expect(() => explore({ ...base, maxStates: 0 })).toThrow(/maxStates/);
    expect(() => explore({ ...base, workers: 3 as never })).toThrow(/workers/);
  });
});

describe('an unknown fact is explored as its worst case', () => {
  it('storedResult.includesErrors unknown: the provider may store a 500 under the key, as with true', () => {
    const base = sandboxCreateCard(REPLAYING_BEHAVIOUR);
    const withErrors = (value: boolean | 'unknown') =>
      ({
        ...base,
        storedResult: { ...base.storedResult, includesErrors: { value, source: 'test' } },
        unverified: [...base.unverified, { field: 'storedResult.includesErrors', condition: 'test', source: 'test' }],
      }) as typeof base;
    const world = {
      fates: ['delivered', 'stored-error-applied', 'stored-error-not-applied'],
      workers: 1,
      maxCrashes: 0,
    } as const;
    const states = (value: boolean | 'unknown') => explore({ card: withErrors(value), ...world }).states;
    expect(states(true)).toBeGreaterThan(states(false));
    // the runner decides differently for true and unknown, so their counts differ; both explore the stored 500s
    expect(states('unknown')).toBeGreaterThan(states(false));
  });
});

describe('the concurrency a card declares, in the provider model', () => {
  it('duplicates: a held request that was running when a same-key request committed is a second effect', () => {
    const effectsAfter = (concurrency: 'duplicates' | 'rejects-in-progress' | 'unknown') => {
      const base = sandboxCreateCard(REPLAYING_BEHAVIOUR);
      const card = { ...base, concurrency: { value: concurrency, source: 'test' } } as typeof base;
      const pm = providerFromCard(card, { unknownLateApplyMs: 1000, unknownDelayMs: 1000 });
      // request 1 is sent at 0 and held; request 2 with the same key is delivered at 10; request 1 lands at 20
      const second = process(pm, newWorld([]).prov, 10);
      return process(pm, second.p, 20, 0).p.effects;
    };
    expect(effectsAfter('duplicates')).toBe(2);
    expect(effectsAfter('unknown')).toBe(2);
    expect(effectsAfter('rejects-in-progress')).toBe(1);
  });
});
