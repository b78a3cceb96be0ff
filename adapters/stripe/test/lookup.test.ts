import { asBusinessOperationId } from '@retrysafe/contract';
import { executeContext, lookupContext, operationIdFor } from '@retrysafe/testkit/conformance';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createStripeAdapter, type StripeAdapter } from '../src/index.js';
import { type StripeSandbox, startStripeSandbox } from '../src/sandbox/index.js';
import { API_KEY, startScriptedServer } from './helpers.js';

// doLookup through the real SDK against the sandbox, on the sandbox's clock.
// Inside retention: re-send with the same key (Stripe replays). Past it: metadata search (refunds: list).

const HOUR = 60 * 60 * 1000;
// The card's key retention and search delay (24 h, 1 h), as the adapter reads them.
const STRIPE_KEY_RETENTION_MS = 24 * HOUR;
const STRIPE_SEARCH_DELAY_MS = HOUR;
let sandbox: StripeSandbox;
let adapter: StripeAdapter;
const t0 = Date.UTC(2026, 10, 30, 0, 0, 0);

beforeEach(async () => {
  sandbox = await startStripeSandbox({ now: () => t0, searchDelayMs: 30_000 });
  adapter = createStripeAdapter({ apiKey: API_KEY, baseUrl: sandbox.url, timeoutMs: 2000 });
});
afterEach(async () => {
  await sandbox.close();
});

const customer = { customerRef: 'user-42', email: 'c42@example.test' };

async function dispatch(operation: string, params: Record<string, unknown>) {
  const id = operationIdFor(adapter, operation, params);
  const outcome = await adapter.doExecute(operation, params, executeContext(adapter, operation, id));
  return { id, outcome };
}

describe('inside retention: re-send with the same key', () => {
  it('finds the stored result as replayed, without creating a second object', async () => {
    const { id } = await dispatch('customers.create', customer);
    sandbox.advance(2 * HOUR);
    const result = await adapter.doLookup(
      'customers.create',
      lookupContext(adapter, 'customers.create', id, customer, { firstDispatchedAt: t0, now: t0 + 2 * HOUR }),
    );
    expect(result).toMatchObject({ kind: 'found', outcome: { kind: 'replayed' } });
    expect(sandbox.count('customers.create')).toBe(1);
    expect(sandbox.requests().map((r) => r.result)).toEqual(['executed', 'replayed']);
  });

  it('never dispatched ⇒ not-found without calling Stripe', async () => {
    const id = operationIdFor(adapter, 'customers.create', customer);
    const result = await adapter.doLookup(
      'customers.create',
      lookupContext(adapter, 'customers.create', id, customer, { firstDispatchedAt: null, now: t0 }),
    );
    expect(result.kind).toBe('not-found');
    expect(sandbox.requests()).toEqual([]);
  });

  it('a stored 500 that replays for the key: the object was created ⇒ found by metadata search (after the search lag)', async () => {
    sandbox.failNext('server-error-after-commit');
    const { id, outcome } = await dispatch('customers.create', customer);
    expect(outcome).toMatchObject({ kind: 'unknown', cause: 'server-error' });
    sandbox.advance(60_000);
    const result = await adapter.doLookup(
      'customers.create',
      lookupContext(adapter, 'customers.create', id, customer, { firstDispatchedAt: t0, now: t0 + 60_000 }),
    );
    expect(result).toMatchObject({ kind: 'found', outcome: { kind: 'succeeded' } });
    expect(sandbox.count('customers.create')).toBe(1);
  });

  it('a stored 500 and nothing created ⇒ cannot-tell (re-sending would only replay the 500)', async () => {
    sandbox.failNext('server-error');
    const { id } = await dispatch('customers.create', customer);
    sandbox.advance(2 * HOUR);
    const result = await adapter.doLookup(
      'customers.create',
      lookupContext(adapter, 'customers.create', id, customer, { firstDispatchedAt: t0, now: t0 + 2 * HOUR }),
    );
    expect(result.kind).toBe('cannot-tell');
    expect(sandbox.count('customers.create')).toBe(0);
  });

  it("a caller's clock-skew margin without the runner's judgement: a key too old under that margin is never re-sent", async () => {
    const { id } = await dispatch('customers.create', customer);
    sandbox.advance(23 * HOUR);
    const posts = sandbox.requestCount({ method: 'POST' });
    // 23 h + 1 h margin (+ 1 h for a late apply) is past the 24 h retention: only the metadata search may answer.
    const result = await adapter.doLookup(
      'customers.create',
      lookupContext(adapter, 'customers.create', id, customer, {
        firstDispatchedAt: t0,
        now: t0 + 23 * HOUR,
        clockSkewMarginMs: HOUR,
      }),
    );
    expect(sandbox.requestCount({ method: 'POST' })).toBe(posts);
    expect(sandbox.requests().at(-1)?.path).toBe('/v1/customers/search');
    expect(result).toMatchObject({ kind: 'found', outcome: { kind: 'succeeded' } });
  });

  it('a 409 while the first request still runs ⇒ found in-progress', async () => {
    const release = sandbox.hold();
    const id = operationIdFor(adapter, 'customers.create', customer);
    const first = adapter.doExecute('customers.create', customer, executeContext(adapter, 'customers.create', id));
    await sandbox.waitFor((_log, s) => s.keys().length === 1);
    const result = await adapter.doLookup(
      'customers.create',
      lookupContext(adapter, 'customers.create', id, customer, { firstDispatchedAt: t0, now: t0 }),
    );
    expect(result).toMatchObject({ kind: 'found', outcome: { kind: 'in-progress', status: 409 } });
    release();
    expect((await first).kind).toBe('succeeded');
  });
});

describe('past retention: never rely on the key', () => {
  it('a pruned key creates a NEW object on re-send (why the adapter never re-sends past retention)', async () => {
    const { id } = await dispatch('customers.create', customer);
    sandbox.advance(STRIPE_KEY_RETENTION_MS);
    expect(sandbox.keys()).toEqual([]);
    await adapter.doExecute(
      'customers.create',
      customer,
      executeContext(adapter, 'customers.create', id, { attempt: 2 }),
    );
    expect(sandbox.count('customers.create')).toBe(2);
  });

  it('metadata search finds the earlier object and adopts it; no POST is made; 0 duplicates', async () => {
    const { id, outcome } = await dispatch('customers.create', customer);
    const at = t0 + STRIPE_KEY_RETENTION_MS + STRIPE_SEARCH_DELAY_MS + HOUR;
    sandbox.advance(at - t0);
    const posts = sandbox.requestCount({ method: 'POST' });
    const result = await adapter.doLookup(
      'customers.create',
      lookupContext(adapter, 'customers.create', id, customer, { firstDispatchedAt: t0, now: at }),
    );
    expect(result).toMatchObject({
      kind: 'found',
      outcome: { kind: 'succeeded', providerRef: outcome.kind === 'succeeded' ? outcome.providerRef : 'x' },
    });
    expect(sandbox.requestCount({ method: 'POST' })).toBe(posts);
    expect(sandbox.requests().at(-1)?.path).toBe('/v1/customers/search');
    expect(sandbox.count('customers.create')).toBe(1);
  });

  // Adopting the oldest of two hides the other: which one is this operation's is for a person to say.
  it.each([
    ['customers.create', customer, '/v1/customers/search'],
    ['refunds.create', { paymentIntent: 'pi_fixture', refundRef: 'RF-9', amount: 100 }, '/v1/refunds'],
  ] as const)(
    '%s: two objects carry the id (a duplicate exists) ⇒ cannot-tell naming both',
    async (op, params, path) => {
      const { id, outcome: first } = await dispatch(op, params);
      sandbox.expireKeys();
      const second = await adapter.doExecute(op, params, executeContext(adapter, op, id, { attempt: 2 }));
      expect(sandbox.count(op)).toBe(2);
      const at = t0 + STRIPE_KEY_RETENTION_MS + STRIPE_SEARCH_DELAY_MS + HOUR;
      sandbox.advance(at - t0);
      const result = await adapter.doLookup(
        op,
        lookupContext(adapter, op, id, params, { firstDispatchedAt: t0, now: at }),
      );
      expect(result.kind).toBe('cannot-tell');
      for (const o of [first, second]) expect(result.kind === 'cannot-tell' && result.reason).toContain(o.providerRef);
      expect(result).toMatchObject({ duplicates: expect.arrayContaining([first.providerRef, second.providerRef]) });
      expect(sandbox.requests().at(-1)?.path).toBe(path);
    },
  );

  it('search lag: a miss inside the declared delay window is cannot-tell; once the search catches up it is found', async () => {
    sandbox.setSearchDelayMs(50 * 60 * 1000);
    const params = { customer: 'cus_fixture', amount: 500, currency: 'eur', orderRef: 'late-1' };
    const id = operationIdFor(adapter, 'paymentIntents.create', params);
    // The last send under the key happened just before retention ended: the record is 50 min behind in search.
    sandbox.advance(STRIPE_KEY_RETENTION_MS - 11 * 60 * 1000);
    await adapter.doExecute(
      'paymentIntents.create',
      params,
      executeContext(adapter, 'paymentIntents.create', id, { attempt: 2 }),
    );
    sandbox.advance(20 * 60 * 1000);
    const now1 = sandbox.now();
    const early = await adapter.doLookup(
      'paymentIntents.create',
      lookupContext(adapter, 'paymentIntents.create', id, params, { firstDispatchedAt: t0, now: now1 }),
    );
    expect(early.kind).toBe('cannot-tell');
    sandbox.advance(40 * 60 * 1000);
    const late = await adapter.doLookup(
      'paymentIntents.create',
      lookupContext(adapter, 'paymentIntents.create', id, params, { firstDispatchedAt: t0, now: sandbox.now() }),
    );
    expect(late).toMatchObject({ kind: 'found', outcome: { kind: 'succeeded' } });
    expect(sandbox.count('paymentIntents.create')).toBe(1);
    expect(sandbox.requests().filter((r) => r.method === 'POST')).toHaveLength(1);
  });

  it.each([
    ['crm-acct-7', 'crm-acct-7-eu'],
    ['crm-acct-8', 'CRM-ACCT-8'],
  ])(
    "Stripe's search matches words case-insensitively: operation %s never adopts the customer of operation %s",
    async (mine, other) => {
      // https://docs.stripe.com/search: a string "exact match" is case insensitive and matches a value that contains the words.
      const params = { customerRef: 'shared-ref' };
      const otherId = asBusinessOperationId(other);
      await adapter.doExecute('customers.create', params, executeContext(adapter, 'customers.create', otherId));
      const at = t0 + STRIPE_KEY_RETENTION_MS + STRIPE_SEARCH_DELAY_MS;
      sandbox.advance(at - t0);
      const result = await adapter.doLookup(
        'customers.create',
        lookupContext(adapter, 'customers.create', asBusinessOperationId(mine), params, {
          firstDispatchedAt: t0,
          now: at,
        }),
      );
      // Never found; and no miss is "absent" while the card bounds no late apply.
      expect(result.kind).toBe('cannot-tell');
    },
  );

  it("this operation's customer behind a full page of loose matches (crm-acct-9-…): found on the next page", async () => {
    const params = { customerRef: 'shared-ref' };
    const create = (id: string) =>
      adapter.doExecute(
        'customers.create',
        params,
        executeContext(adapter, 'customers.create', asBusinessOperationId(id)),
      );
    await create('crm-acct-9'); // the oldest: the search answers newest first, so it is on page 2
    for (let i = 0; i < 100; i++) await create(`crm-acct-9-x${i}`);
    const at = t0 + STRIPE_KEY_RETENTION_MS + STRIPE_SEARCH_DELAY_MS;
    sandbox.advance(at - t0);
    const ctx = { firstDispatchedAt: t0, now: at };
    const mine = lookupContext(adapter, 'customers.create', asBusinessOperationId('crm-acct-9'), params, ctx);
    expect(await adapter.doLookup('customers.create', mine)).toMatchObject({ kind: 'found' });
    expect(sandbox.requests().filter((r) => r.path.startsWith('/v1/customers/search'))).toHaveLength(2);
  });

  it('nothing there: cannot-tell inside 24 h + 1 h of the first dispatch, and after it (the card bounds no late apply)', async () => {
    const params = { customer: 'cus_fixture', invoiceRef: 'INV-9' };
    const id = operationIdFor(adapter, 'invoices.create', params);
    const inside = await adapter.doLookup(
      'invoices.create',
      lookupContext(adapter, 'invoices.create', id, params, {
        firstDispatchedAt: t0,
        now: t0 + STRIPE_KEY_RETENTION_MS + 30 * 60 * 1000,
      }),
    );
    expect(inside.kind).toBe('cannot-tell');
    const after = await adapter.doLookup(
      'invoices.create',
      lookupContext(adapter, 'invoices.create', id, params, {
        firstDispatchedAt: t0,
        now: t0 + STRIPE_KEY_RETENTION_MS + STRIPE_SEARCH_DELAY_MS,
      }),
    );
    expect(after.kind).toBe('cannot-tell');
    expect(sandbox.requestCount({ method: 'POST' })).toBe(0);
  });

  it('refunds: no Search API; the list by payment_intent is not delayed, so a match is found at once; a miss is cannot-tell (the card bounds no late apply)', async () => {
    const params = { paymentIntent: 'pi_fixture', refundRef: 'RF-1', amount: 300 };
    const { id } = await dispatch('refunds.create', params);
    const other = { paymentIntent: 'pi_fixture', refundRef: 'RF-2', amount: 200 };
    await dispatch('refunds.create', other);
    const at = t0 + STRIPE_KEY_RETENTION_MS + 1000;
    sandbox.advance(at - t0);
    const found = await adapter.doLookup(
      'refunds.create',
      lookupContext(adapter, 'refunds.create', id, params, { firstDispatchedAt: t0, now: at }),
    );
    expect(found).toMatchObject({ kind: 'found', outcome: { kind: 'succeeded', result: { amount: 300 } } });
    expect(sandbox.requests().at(-1)?.path).toBe('/v1/refunds');
    const missingId = operationIdFor(adapter, 'refunds.create', { paymentIntent: 'pi_fixture', refundRef: 'RF-3' });
    const missing = await adapter.doLookup(
      'refunds.create',
      lookupContext(
        adapter,
        'refunds.create',
        missingId,
        { paymentIntent: 'pi_fixture', refundRef: 'RF-3' },
        { firstDispatchedAt: t0, now: at },
      ),
    );
    expect(missing.kind).toBe('cannot-tell');
    expect(sandbox.count('refunds.create')).toBe(2);
  });

  it('a throttled search ⇒ cannot-tell (never "absent")', async () => {
    const id = operationIdFor(adapter, 'customers.create', customer);
    sandbox.failNext('rate-limit', { method: 'GET' });
    const result = await adapter.doLookup(
      'customers.create',
      lookupContext(adapter, 'customers.create', id, customer, {
        firstDispatchedAt: t0,
        now: t0 + 3 * STRIPE_KEY_RETENTION_MS,
      }),
    );
    expect(result).toMatchObject({ kind: 'cannot-tell', status: 429 });
  });
});

describe('a declined create+confirm is found as the rejection it was, naming the PaymentIntent it left', () => {
  const declined = {
    customer: 'cus_fixture',
    amount: 700,
    currency: 'eur',
    orderRef: 'D-1',
    confirm: true,
    paymentMethod: 'pm_card_chargeDeclined',
  };

  it('inside retention: the same key replays the 402 with its PaymentIntent', async () => {
    const { id, outcome } = await dispatch('paymentIntents.create', declined);
    const left = outcome.kind === 'rejected' ? outcome.created : undefined;
    expect(left).toMatch(/^pi_/);
    const result = await adapter.doLookup(
      'paymentIntents.create',
      lookupContext(adapter, 'paymentIntents.create', id, declined, { firstDispatchedAt: t0, now: t0 + HOUR }),
    );
    expect(result).toMatchObject({
      kind: 'found',
      outcome: { kind: 'rejected', reason: 'card-declined', created: left },
    });
    expect(sandbox.count('paymentIntents.create')).toBe(1);
  });

  it('past retention: the metadata search finds a PaymentIntent whose payment failed ⇒ rejected, never adopted as a success', async () => {
    const { id, outcome } = await dispatch('paymentIntents.create', declined);
    const left = outcome.kind === 'rejected' ? outcome.created : undefined;
    const later = t0 + STRIPE_KEY_RETENTION_MS + STRIPE_SEARCH_DELAY_MS + HOUR;
    sandbox.advance(later - t0);
    const result = await adapter.doLookup(
      'paymentIntents.create',
      lookupContext(adapter, 'paymentIntents.create', id, declined, { firstDispatchedAt: t0, now: later }),
    );
    expect(result).toMatchObject({
      kind: 'found',
      outcome: { kind: 'rejected', reason: 'card-declined', code: 'card_declined', created: left },
    });
    expect(sandbox.count('paymentIntents.create')).toBe(1);
  });
});

describe('refunds past retention: a match on an earlier list page proves nothing while a later page is not read', () => {
  it.each([
    ['a 500', 500, { error: { type: 'api_error', message: 'An unknown error occurred.' } }],
    ['a 429', 429, { error: { type: 'invalid_request_error', code: 'rate_limit', message: 'Too many requests.' } }],
  ])(
    'page 1 holds the refund, page 2 answers %s ⇒ cannot-tell (a second refund of ours may be there)',
    async (_name, status, body) => {
      const params = { paymentIntent: 'pi_fixture', refundRef: 'RF-P', amount: 100 };
      const id = operationIdFor(adapter, 'refunds.create', params);
      const refund = (n: number, opId: string) => ({
        id: `re_${n}`,
        object: 'refund',
        amount: 100,
        created: 1_800_000_000 - n,
        payment_intent: 'pi_fixture',
        status: 'succeeded',
        metadata: { refund_ref: `RF-${n}`, retrysafe_operation_id: opId },
      });
      const server = await startScriptedServer((req, res, n) => {
        res.setHeader('content-type', 'application/json');
        res.setHeader('request-id', `req_${n}`);
        if (!req.url?.includes('starting_after')) {
          const data = [refund(1, 'other-op'), refund(2, id), refund(3, 'another-op')];
          res.end(JSON.stringify({ object: 'list', url: '/v1/refunds', has_more: true, data }));
          return;
        }
        res.statusCode = status;
        res.end(JSON.stringify(body));
      });
      try {
        const scripted = createStripeAdapter({ apiKey: API_KEY, baseUrl: server.url, timeoutMs: 2000 });
        const at = t0 + STRIPE_KEY_RETENTION_MS + HOUR;
        const result = await scripted.doLookup(
          'refunds.create',
          lookupContext(scripted, 'refunds.create', id, params, { firstDispatchedAt: t0, now: at }),
        );
        expect(result).toMatchObject({ kind: 'cannot-tell', reason: expect.stringMatching(/metadata list failed/) });
        expect(server.count()).toBe(2);
      } finally {
        await server.close();
      }
    },
  );
});

/** customers.create's lookup past the key's retention against a search answering our customer on every page, with
 * `more(url)`'s paging fields. */
async function searchPastRetention(more: (url: string) => object) {
  const id = operationIdFor(adapter, 'customers.create', customer);
  const ours = { id: 'cus_1', object: 'customer', metadata: { retrysafe_operation_id: id } };
  const server = await startScriptedServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    const page = { object: 'search_result', url: '/v1/customers/search', ...more(req.url ?? '') };
    res.end(JSON.stringify({ ...page, data: [ours] }));
  });
  try {
    const scripted = createStripeAdapter({ apiKey: API_KEY, baseUrl: server.url, timeoutMs: 2000 });
    const at = t0 + STRIPE_KEY_RETENTION_MS + HOUR;
    const ctx = lookupContext(scripted, 'customers.create', id, customer, { firstDispatchedAt: t0, now: at });
    return await scripted.doLookup('customers.create', ctx);
  } finally {
    await server.close();
  }
}

describe('past retention: a search whose one exact match sits on a page with more after it', () => {
  it('cannot tell (a second object of ours may be on the page not read), never adopts it', async () => {
    // Every page says there is more after it: the search is never read to its end.
    const result = await searchPastRetention(() => ({ has_more: true, next_page: 'p2' }));
    expect(result).toMatchObject({ kind: 'cannot-tell' });
  });
});

describe('past retention: the same object on two search pages (the results moved between the reads)', () => {
  it('is one object, adopted, not a duplicate', async () => {
    const result = await searchPastRetention((url) =>
      url.includes('page=p2') ? { has_more: false } : { has_more: true, next_page: 'p2' },
    );
    expect(result).toMatchObject({ kind: 'found' });
  });
});

describe('past retention: a PaymentIntent created without confirm whose later confirmation failed', () => {
  it('is the create that succeeded (as the key would have replayed it), not a card decline of this operation', async () => {
    const params = { customer: 'cus_fixture', amount: 700, currency: 'eur', orderRef: 'NC-1' };
    const id = operationIdFor(adapter, 'paymentIntents.create', params);
    const server = await startScriptedServer((_req, res) => {
      res.setHeader('content-type', 'application/json');
      const pi = {
        id: 'pi_later_declined',
        object: 'payment_intent',
        amount: 700,
        currency: 'eur',
        created: 1_800_000_000,
        status: 'requires_payment_method',
        // Set by a confirmation made later, e.g. by the customer in the browser with Stripe.js.
        last_payment_error: { code: 'card_declined', message: 'Your card was declined.' },
        metadata: { order_ref: 'NC-1', retrysafe_operation_id: id },
      };
      res.end(
        JSON.stringify({ object: 'search_result', url: '/v1/payment_intents/search', has_more: false, data: [pi] }),
      );
    });
    try {
      const scripted = createStripeAdapter({ apiKey: API_KEY, baseUrl: server.url, timeoutMs: 2000 });
      const at = t0 + STRIPE_KEY_RETENTION_MS + STRIPE_SEARCH_DELAY_MS + HOUR;
      const result = await scripted.doLookup(
        'paymentIntents.create',
        lookupContext(scripted, 'paymentIntents.create', id, params, { firstDispatchedAt: t0, now: at }),
      );
      expect(result).toMatchObject({ kind: 'found', outcome: { kind: 'succeeded', providerRef: 'pi_later_declined' } });
    } finally {
      await server.close();
    }
  });
});
