import { fact, type RetrySafetyCard } from '@retrysafe/contract';
import { lookupContext, operationIdFor } from '@retrysafe/testkit/conformance';
import { describe, expect, it, vi } from 'vitest';
import { adapterPerTest } from './helpers.js';

// The past-retention window is the card's: a card that says 48 h retention or a 2 h search delay moves it.
vi.mock('../src/stripe-cards.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../src/stripe-cards.js')>();
  const cards = real.stripeCards as Record<string, RetrySafetyCard>;
  const invoices = cards['invoices.create']!;
  const customers = cards['customers.create']!;
  return {
    ...real,
    stripeCards: {
      ...cards,
      'invoices.create': { ...invoices, retention: { minimum: fact('48h', 'test: a longer retention') } },
      'customers.create': {
        ...customers,
        lookup: { ...customers.lookup, consistencyDelay: fact('2h', 'test: a longer search delay') },
      },
    },
  };
});

const HOUR = 60 * 60 * 1000;
const t0 = Date.UTC(2026, 10, 30, 0, 0, 0);
const rig = adapterPerTest(t0);

async function missAt(operation: string, params: Record<string, unknown>, now: number) {
  const id = operationIdFor(rig.adapter, operation, params);
  // The runner's judgement: the key is no longer reusable.
  const ctx = lookupContext(rig.adapter, operation, id, params, { firstDispatchedAt: t0, now, keyReusable: false });
  return rig.adapter.doLookup(operation, ctx);
}

describe('past retention: the search window comes from the card', () => {
  it('a card with 48 h retention: a miss at 47 h could be the last same-key send, not yet searchable ⇒ cannot-tell', async () => {
    const result = await missAt('invoices.create', { customer: 'cus_fixture', invoiceRef: 'INV-48' }, t0 + 47 * HOUR);
    expect(result.kind).toBe('cannot-tell');
    expect(result.kind === 'cannot-tell' && result.reason).toMatch(/48h retention/);
  });

  it('a card with a 2 h search delay: a miss 90 min past retention is still inside it ⇒ cannot-tell', async () => {
    const result = await missAt('customers.create', { customerRef: 'late-2h' }, t0 + 24 * HOUR + 90 * 60 * 1000);
    expect(result.kind).toBe('cannot-tell');
    // Past it a miss still proves nothing: the card bounds no late apply (notFoundIsAuthoritative).
    const after = await missAt('customers.create', { customerRef: 'late-2h' }, t0 + 26 * HOUR);
    expect(after.kind).toBe('cannot-tell');
  });
});
