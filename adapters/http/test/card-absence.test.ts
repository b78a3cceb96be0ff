import type { RetrySafetyCard } from '@retrysafe/contract';
import { notFoundIsAuthoritative } from '@retrysafe/contract/rules';
import { describe, expect, it } from 'vitest';
import { ordersCreateCard } from '../src/http-cards.js';
import { ietfOrdersCreate } from '../src/index.js';
import { startIetfKeySandbox } from '../src/sandbox/index.js';
import { adapterAt, lookupOn, paramsWith } from './helpers.js';

// Whether a miss proves absence is the card's rule (the contract's notFoundIsAuthoritative, which the runner applies
// too): the last dispatch + lookup.lateApplyBound + lookup.consistencyDelay, never while one is unknown. A direct
// caller of doLookup is told "not-found" only when it is proven.

const OP = 'orders.create';
const order = paramsWith({ customer: 'cus_1', sku: 'sku_1', quantity: 2, orderRef: 'A-17' });
const MIN = 60_000;

async function withCard(card: RetrySafetyCard, fn: (a: ReturnType<typeof adapterAt>) => Promise<void>) {
  const sb = await startIetfKeySandbox({ port: 0 });
  const a = adapterAt(sb.url, OP, { ...ietfOrdersCreate('acme-orders'), card });
  try {
    await fn(a);
  } finally {
    await a.close();
    await sb.close();
  }
}

describe("search miss: judged by the card's bounds", () => {
  it('the shipped card bounds no late apply: a miss a day after the dispatch is cannot-tell', async () => {
    const card = ordersCreateCard('acme-orders');
    const now = Date.now();
    const times = { firstDispatchedAt: now - 1440 * MIN, now };
    expect(notFoundIsAuthoritative(card, times)).toBe(false);
    await withCard(card, async (a) => {
      expect(await lookupOn(a, OP, order(), times)).toMatchObject({ kind: 'cannot-tell', status: 200 });
    });
  });

  it('a card with a 1 min late-apply bound: cannot-tell (with the wait) inside it after the LAST dispatch, not-found past it', async () => {
    const shipped = ordersCreateCard('acme-orders');
    const late = { value: '1m' as const, source: 'test: a bounded late apply' };
    const card = {
      ...shipped,
      lookup: { ...shipped.lookup, lateApplyBound: late },
      unverified: shipped.unverified.filter((u) => u.field !== 'lookup.lateApplyBound'),
    };
    const now = Date.now();
    await withCard(card, async (a) => {
      const early = { firstDispatchedAt: now - 10 * MIN, lastDispatchedAt: now - 20_000, now };
      expect(await lookupOn(a, OP, order(), early)).toMatchObject({ kind: 'cannot-tell', retryAfterMs: 40_000 });
      const late = { firstDispatchedAt: now - 10 * MIN, lastDispatchedAt: now - MIN, now };
      expect(await lookupOn(a, OP, order(), late)).toMatchObject({ kind: 'not-found', status: 200 });
    });
  });
});
