import { FORGETFUL_BEHAVIOUR, sandboxCreateCard } from '@retrysafe/sandbox';
import { type ExploreOptions, explore } from '@retrysafe/testkit/explorer';
import { describe, expect, it } from 'vitest';
import { shippedCards } from './shipped-cards.js';

/**
 * Every shipped card, with its own policy, through two bounded worlds: the network one (one worker, up
 * to two network faults of every kind, no crash) and the crash one (a run and a recover() whose clock is
 * off by the policy's clock-skew margin, one crash, one network fault: delivered, lost after apply, or
 * held and applied late). Bounds keep the whole file well under 3 minutes on 2 cores; the output lists
 * states and depth per card.
 */
const WORLDS: Record<string, Omit<ExploreOptions, 'card'>> = {
  network: { workers: 1, maxCrashes: 0, maxNetworkFaults: 2, maxStates: 40_000 },
  crash: {
    workers: 2,
    maxCrashes: 1,
    maxNetworkFaults: 1,
    fates: ['delivered', 'lost-after', 'late'],
    maxStates: 100_000,
  },
};

describe('the explorer over every shipped card', () => {
  for (const { name, card } of shippedCards()) {
    it(`${name}: at most one effect, nothing stuck, in every explored interleaving`, () => {
      const lines: string[] = [];
      for (const [world, options] of Object.entries(WORLDS)) {
        const r = explore({ card, ...options });
        lines.push(
          `[explorer] ${name} (${world}): ${r.states} states, depth ${r.depth}${r.truncated ? ' (state bound reached)' : ''}; endings ${JSON.stringify(r.endings)}`,
        );
        if (r.violation) console.log(r.violation.story);
        expect(r.violation, r.violation?.story).toBeNull();
        expect(Object.keys(r.endings).length).toBeGreaterThan(0);
      }
      console.log(lines.join('\n'));
    });
  }

  it('Graph sendMail (no key, Sent Items lookup with an unknown delay) comes out as "hands off", never as a second effect', () => {
    const card = shippedCards().find((c) => c.name === 'msgraph.mail.send')!.card;
    const r = explore({ card, ...WORLDS.network });
    console.log(`[explorer] ${r.summary}`);
    expect(r.violation).toBeNull();
    expect(r.handsOff).toBe(true);
  });

  it('the lookup-only flow (no key folding, get-by-key lookup, late-apply bound unknown) hands off instead of re-sending', () => {
    const card = sandboxCreateCard({ ...FORGETFUL_BEHAVIOUR, lookup: 'get-by-key' });
    const r = explore({ card, workers: 1, maxNetworkFaults: 1 });
    console.log(`[explorer] ${r.summary}`);
    expect(r.violation).toBeNull();
    expect(r.handsOff).toBe(true);
  });

  it('the Stripe-like retention-margin interleaving (recover() 5 min slow, near 24 h) is covered and safe', () => {
    const card = shippedCards().find((c) => c.name === 'stripe.paymentIntents.create')!.card;
    const r = explore({
      card,
      workers: 2,
      maxCrashes: 1,
      maxNetworkFaults: 1,
      fates: ['delivered', 'lost-after'],
      clockSkewMs: 5 * 60_000,
      // A recover() 5 min ahead judges every 30 s lease run out, as the runner does: it may take over at any step.
      maxStates: 700_000,
    });
    console.log(`[explorer] ${r.summary}`);
    expect(r.truncated).toBe(false);
    expect(r.violation).toBeNull();
  });
});
