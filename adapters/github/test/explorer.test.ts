// The testkit explorer over both GitHub cards: no interleaving of lost answers and late applies gives a
// second issue or comment; they end in "done" or a handoff. The control — the same card with a rule that
// trusts "not found" right after a lost answer, as a lookup on GitHub's lagging search would — is caught.
import { decide } from '@retrysafe/core/internal';
import { type DecideFn, explore } from '@retrysafe/testkit/explorer';
import { describe, expect, it } from 'vitest';
import { gitHubCards } from '../src/index.js';

const NETWORK = { workers: 1, maxCrashes: 0, maxNetworkFaults: 2, maxStates: 40_000 } as const;
const CRASH = {
  workers: 2,
  maxCrashes: 1,
  maxNetworkFaults: 1,
  fates: ['delivered', 'lost-after', 'late'],
  maxStates: 100_000,
} as const;

const trustsNotFound: DecideFn = (card, state, obs, budget) =>
  obs !== null && obs.kind === 'not-found'
    ? { action: 'send', delayMs: 0, why: 'CONTROL: "not found" taken as "not created"' }
    : decide(card, state, obs, budget);

describe('the explorer over the github cards', () => {
  it.each(Object.entries(gitHubCards))(
    '%s: at most one effect in every explored interleaving; lost answers end done or handed off',
    (_name, card) => {
      for (const world of [NETWORK, CRASH]) {
        const r = explore({ card, ...world });
        expect(r.violation, r.violation?.story).toBeNull();
        expect(r.endings.succeeded).toBeGreaterThan(0);
      }
      expect(explore({ card, ...NETWORK }).handsOff).toBe(true);
    },
  );

  // The explorer runs the runner's own observationPatch, which still counts the early "not found" as maybe applied:
  // the loop's key check refuses the control's re-send, so it decides again and again without acting (testkit's
  // core-rules.test.ts breaks both rules and shows the second effect).
  it.each(Object.entries(gitHubCards))(
    'control, %s: trusting "not found" after a lost answer is caught',
    (_name, card) => {
      const r = explore({ card, decide: trustsNotFound, ...NETWORK });
      expect(r.violation?.invariant).toBe('stuck');
      expect(r.violation!.story).toMatch(/CONTROL: "not found" taken as "not created"/);
    },
  );
});
