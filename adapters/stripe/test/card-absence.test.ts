import { asBusinessOperationId, fact, type RetrySafetyCard } from '@retrysafe/contract';
import { notFoundIsAuthoritative } from '@retrysafe/contract/rules';
import { lookupContext } from '@retrysafe/testkit/conformance';
import { describe, expect, it, vi } from 'vitest';
import { stripeCards } from '../src/stripe-cards.js';
import { adapterPerTest } from './helpers.js';

// Whether a metadata miss proves absence is the card's rule (the contract's notFoundIsAuthoritative), not the
// adapter's. The real cards bound no late apply, so a miss is never not-found; a test card that bounds it (refunds,
// mocked below) makes a miss past the bounds not-found, as the runner would judge it.
vi.mock('../src/stripe-cards.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../src/stripe-cards.js')>();
  const cards = real.stripeCards as Record<string, RetrySafetyCard>;
  const refunds = cards['refunds.create']!;
  const lookup = { ...refunds.lookup, lateApplyBound: fact('1h', 'test: a bounded late apply') };
  return { ...real, stripeCards: { ...cards, 'refunds.create': { ...refunds, lookup } } };
});

const HOUR = 60 * 60 * 1000;
const t0 = Date.UTC(2026, 10, 30, 0, 0, 0);
const rig = adapterPerTest(t0);

const missAt = (
  operation: keyof typeof stripeCards,
  params: Record<string, unknown>,
  now: number,
  lastDispatchedAt = t0,
) => {
  const id = asBusinessOperationId(`never-sent-${operation}`);
  const times = { firstDispatchedAt: t0, lastDispatchedAt, now };
  return rig.adapter.doLookup(
    operation,
    lookupContext(rig.adapter, operation, id, params, { ...times, keyReusable: false }),
  );
};

describe("past retention: a metadata miss is judged by the card's bounds", () => {
  it.each([
    ['customers.create', { customerRef: 'absent-1' }],
    ['paymentIntents.create', { customer: 'cus_fixture', amount: 500, currency: 'eur', orderRef: 'absent-2' }],
    ['invoices.create', { customer: 'cus_fixture', invoiceRef: 'absent-3' }],
  ] as const)('%s: lateApplyBound unknown ⇒ a miss a month later is still cannot-tell', async (operation, params) => {
    const now = t0 + 30 * 24 * HOUR;
    expect(notFoundIsAuthoritative(stripeCards[operation], { firstDispatchedAt: t0, now })).toBe(false);
    expect((await missAt(operation, params, now)).kind).toBe('cannot-tell');
  });

  it('a card that bounds the late apply (1 h, list not delayed): a miss 1 h past the last dispatch is not-found', async () => {
    const params = { paymentIntent: 'pi_fixture', refundRef: 'absent-4', amount: 100 };
    expect((await missAt('refunds.create', params, t0 + 25 * HOUR)).kind).toBe('not-found');
    // The last send went out at 23 h 30: it may still land until 24 h 30, whatever the first dispatch's age.
    const last = t0 + 23.5 * HOUR;
    expect((await missAt('refunds.create', params, t0 + 24 * HOUR + 1000, last)).kind).toBe('cannot-tell');
    expect((await missAt('refunds.create', params, t0 + 24.5 * HOUR, last)).kind).toBe('not-found');
  });
});
