import { FORGETFUL_BEHAVIOUR, sandboxCreateCard } from '@retrysafe/sandbox';
import { type ExploreOptions, type ExploreReport, explore } from '@retrysafe/testkit/explorer';
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

/**
 * States, depth and ended runs per card in each world (network, crash): a faster explorer must explore exactly the
 * same interleavings, so a change here is a change of the model, to be explained.
 */
const EXPLORED: Record<string, readonly [string, string]> = {
  'stripe.customers.create': ['1029 88 50', '100000 29 4409'],
  'stripe.paymentIntents.create': ['1029 88 50', '100000 29 4409'],
  'stripe.invoices.create': ['1029 88 50', '100000 29 4409'],
  'stripe.refunds.create': ['769 90 67', '100000 29 4687'],
  'hubspot.contacts.update': ['274 21 52', '100001 29 4205'],
  'hubspot.objects.upsert': ['268 20 49', '100001 28 3951'],
  'hubspot.tickets.create': ['2057 64 67', '100000 29 380'],
  'msgraph.mail.send': ['2692 89 42', '100000 29 22'],
  'msgraph.events.create': ['1372 57 42', '100000 29 22'],
  'msgraph.todo.tasks.create': ['1372 57 42', '100000 29 22'],
  'resend.emails.send': ['608 26 81', '100000 31 8008'],
  'resend.batch.send': ['608 26 81', '100000 31 8008'],
  'github.issues.create': ['1372 57 42', '100000 29 22'],
  'github.issues.createComment': ['1372 57 42', '100000 29 22'],
  'slack.chat.postMessage': ['2692 89 42', '100000 29 22'],
  'slack.chat.update': ['453 24 85', '100000 30 4922'],
  'acme-orders.orders.create': ['559 50 67', '100000 29 4687'],
  'acme-exports.exports.create': ['606 50 64', '100000 28 4063'],
  'acme-docs.documents.update': ['821 50 95', '100000 36 4403'],
  'acme-compute.instances.run': ['827 50 97', '100000 31 3860'],
  'sandbox.records.create--sandbox-replaying': ['332 22 55', '100000 29 4687'],
  'sandbox.records.create--sandbox-forgetful': ['49 18 11', '4018 28 1305'],
};

/** A report's states, depth and how many runs ended, as the table above gives them. */
const explored = (r: ExploreReport) => `${r.states} ${r.depth} ${Object.values(r.endings).reduce((a, b) => a + b, 0)}`;

describe('the explorer over every shipped card', () => {
  for (const { name, card } of shippedCards()) {
    it(`${name}: at most one effect, nothing stuck, in every explored interleaving`, () => {
      const lines: string[] = [];
      Object.entries(WORLDS).forEach(([world, options], k) => {
        const r = explore({ card, ...options });
        lines.push(
          `[explorer] ${name} (${world}): ${r.states} states, depth ${r.depth}${r.truncated ? ' (state bound reached)' : ''}; endings ${JSON.stringify(r.endings)}`,
        );
        if (r.violation) console.log(r.violation.story);
        expect(r.violation, r.violation?.story).toBeNull();
        expect(Object.keys(r.endings).length).toBeGreaterThan(0);
        expect(explored(r), `${name} (${world})`).toBe(EXPLORED[name]?.[k]);
      });
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
    expect(explored(r)).toBe('15635 118 1155');
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
    expect(explored(r)).toBe('629200 284 11986');
    expect(r.violation).toBeNull();
  });
});
