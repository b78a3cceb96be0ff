import { CardValidationError } from '@retrysafe/contract';
import { notFoundIsAuthoritative } from '@retrysafe/contract/rules';
import { executeContext, operationIdFor } from '@retrysafe/testkit/conformance';
import { describe, expect, it } from 'vitest';
import { ordersCreateCard } from '../src/http-cards.js';
import { type HttpOperationSpec, ietfOrdersCreate } from '../src/index.js';
import { startIetfKeySandbox } from '../src/sandbox/index.js';
import {
  adapterAt,
  closedPort,
  executeOn,
  expectFoundOnlyAfterExecute,
  lookupOn,
  paramsWith,
  rejected,
  sandboxPerTest,
  startSilentServer,
  testRunner,
  withAdapter,
} from './helpers.js';

const OP = 'orders.create';
const order = paramsWith({ customer: 'cus_1', sku: 'sku_1', quantity: 2, orderRef: 'A-17' });

describe('IETF Idempotency-Key: SDK → sandbox, one row per mapping', () => {
  const env = sandboxPerTest(() => startIetfKeySandbox({ port: 0 }), 'acme-orders', OP, ietfOrdersCreate);

  it('201 ⇒ succeeded with the order id and request id; the key travels as a Structured Field string derived from the business-operation id', async () => {
    const ctx = executeContext(env.adapter, OP, operationIdFor(env.adapter, OP, order()));
    const out = await env.adapter.doExecute(OP, order(), ctx);
    expect(out).toMatchObject({ kind: 'succeeded', status: 201, providerRef: 'ord_1', requestId: 'req_1' });
    expect(env.sb.requests[0]!.headers['idempotency-key']).toBe(`"${ctx.providerKey}"`);
    expect(ctx.providerKey).toBe(`rs-${ctx.businessOperationId}`);
    expect(env.sb.records()[0]!.reference).toBe(ctx.businessOperationId);
  });

  it('same key, same payload after completion ⇒ the stored result is replayed: one order', async () => {
    const ctx = executeContext(env.adapter, OP, operationIdFor(env.adapter, OP, order()));
    const a = await env.adapter.doExecute(OP, order(), ctx);
    const b = await env.adapter.doExecute(OP, order(), { ...ctx, attempt: 2 });
    expect(b).toMatchObject({ kind: 'succeeded', providerRef: 'ord_1' });
    expect((b as { result: unknown }).result).toEqual((a as { result: unknown }).result);
    expect(env.sb.count(OP)).toBe(1);
  });

  it('same key, other payload ⇒ 422 ⇒ rejected (conflict), nothing created', async () => {
    const ctx = executeContext(env.adapter, OP, operationIdFor(env.adapter, OP, order()));
    await env.adapter.doExecute(OP, order(), ctx);
    const out = await env.adapter.doExecute(OP, order({ quantity: 3 }), { ...ctx, attempt: 2 });
    expect(out).toMatchObject(rejected('conflict', 422, 'https://retrysafe.invalid/problems/idempotency-key-reused'));
    expect(env.sb.count(OP)).toBe(1);
  });

  it('same key while the first is in flight ⇒ 409 ⇒ in-progress with Retry-After; one order', async () => {
    const slow = await startIetfKeySandbox({ port: 0, processingMs: 300 });
    const a2 = adapterAt(slow.url, OP, ietfOrdersCreate('acme-orders'), 5000);
    try {
      const ctx = executeContext(a2, OP, operationIdFor(a2, OP, order()));
      const first = a2.doExecute(OP, order(), ctx);
      await new Promise((r) => setTimeout(r, 50));
      const second = await a2.doExecute(OP, order(), { ...ctx, attempt: 2 });
      expect(second).toMatchObject({ kind: 'in-progress', status: 409, retryAfterMs: 1000 });
      expect(await first).toMatchObject({ kind: 'succeeded' });
      expect(slow.count(OP)).toBe(1);
    } finally {
      await a2.close();
      await slow.close();
    }
  });

  it('missing key ⇒ 400 ⇒ rejected (configuration)', async () => {
    const card = ordersCreateCard('acme-orders');
    await withAdapter(
      env.sb.url,
      OP,
      {
        ...ietfOrdersCreate('acme-orders'),
        key: { travels: 'none' },
        card: {
          ...card,
          providerKey: {
            ...card.providerKey,
            travels: { value: 'none', source: 'test: a client that forgot the key' },
          },
        },
      },
      async (noKey) => {
        const out = await executeOn(noKey, OP, order());
        expect(out).toMatchObject(
          rejected('configuration', 400, 'https://retrysafe.invalid/problems/idempotency-key-missing'),
        );
        expect(env.sb.count(OP)).toBe(0);
      },
    );
  });

  it('an unquoted key ⇒ 400 malformed ⇒ rejected (configuration): the draft requires an sf-string', async () => {
    const spec = ietfOrdersCreate('acme-orders');
    await withAdapter(
      env.sb.url,
      OP,
      {
        ...spec,
        key: { travels: 'header', name: 'Idempotency-Key', rule: { maxLength: 64, prefix: 'rs-' } },
      },
      async (raw) => {
        const out = await executeOn(raw, OP, order());
        expect(out).toMatchObject({ kind: 'rejected', reason: 'configuration', status: 400 });
        expect(env.sb.count(OP)).toBe(0);
      },
    );
  });

  it('invalid order ⇒ 400 ⇒ rejected (validation); the stored error is replayed on the same key', async () => {
    const bad = order({ quantity: 0 });
    // The declared schema (quantity ≥ 1) refuses it before anything is sent; past it, the provider's 400 is
    // rejected and replayed on the same key.
    await env.expectRefused(bad, async (loose) => {
      const ctx = executeContext(loose, OP, operationIdFor(loose, OP, bad));
      expect(await loose.doExecute(OP, bad, ctx)).toMatchObject(rejected('validation', 400));
      expect(await loose.doExecute(OP, bad, { ...ctx, attempt: 2 })).toMatchObject(rejected('validation', 400));
    });
    expect(env.sb.count(OP)).toBe(0);
  });

  it('a 409 that is not "in flight" (out of stock) ⇒ rejected, not in-progress: the body code decides, not the status', async () => {
    const out = await env.execute(order({ sku: 'oos-1' }));
    expect(out).toMatchObject(rejected('other', 409, 'https://retrysafe.invalid/problems/out-of-stock'));
  });

  it('a stored 500 ⇒ unknown (server-error), and the same key replays the 500 without creating anything', async () => {
    env.sb.failNext(1);
    const ctx = executeContext(env.adapter, OP, operationIdFor(env.adapter, OP, order()));
    expect(await env.adapter.doExecute(OP, order(), ctx)).toMatchObject({
      kind: 'unknown',
      cause: 'server-error',
      status: 500,
    });
    expect(await env.adapter.doExecute(OP, order(), { ...ctx, attempt: 2 })).toMatchObject({
      kind: 'unknown',
      status: 500,
    });
    expect(env.sb.count(OP)).toBe(0);
  });

  it('past the published expiry the same key is a new request: a second order (why the card states retention)', async () => {
    const ctx = executeContext(env.adapter, OP, operationIdFor(env.adapter, OP, order()));
    await env.adapter.doExecute(OP, order(), ctx);
    env.sb.advance(env.sb.retentionMs);
    await env.adapter.doExecute(OP, order(), { ...ctx, attempt: 2 });
    expect(env.sb.count(OP)).toBe(2);
  });

  it('lookup searches by business-operation id: found after a dispatch, cannot-tell before (the card bounds no late apply)', async () => {
    await expectFoundOnlyAfterExecute(env, order(), 'ord_1');
    expect(await env.lookup(order({ orderRef: 'other' }))).toMatchObject({
      kind: 'cannot-tell',
    });
  });

  it('two orders carry the reference (a re-send after the key expired made a second): cannot-tell naming both, never the first adopted', async () => {
    let now = Date.UTC(2026, 11, 4);
    const sb = await startIetfKeySandbox({ port: 0, clock: { now: () => now }, retentionMs: 60_000 });
    const a = adapterAt(sb.url, OP, ietfOrdersCreate('acme-orders'));
    try {
      await executeOn(a, OP, order());
      now += 120_000;
      await executeOn(a, OP, order(), 2);
      expect(sb.count(OP)).toBe(2);
      const out = await lookupOn(a, OP, order());
      expect(out).toMatchObject({
        kind: 'cannot-tell',
        reason: expect.stringMatching(/ord_1.*ord_2/),
        duplicates: ['ord_1', 'ord_2'],
      });
    } finally {
      await a.close();
      await sb.close();
    }
  });

  it('a miss, or one match, on a page the provider says more follow (Link rel="next") is cannot-tell: never not-found, never adopted', async () => {
    const paged = await startIetfKeySandbox({ port: 0, pageSize: 1 });
    // The sandbox ignores ?customer=: every order is listed, one a page, the other order first.
    const byCustomer = ietfOrdersCreate('acme-orders');
    const a = adapterAt(paged.url, OP, {
      ...byCustomer,
      lookup: { ...byCustomer.lookup, path: '/orders?customer={customer}' } as HttpOperationSpec['lookup'],
    });
    try {
      await executeOn(a, OP, order({ orderRef: 'other' }));
      await executeOn(a, OP, order());
      expect(await lookupOn(a, OP, order())).toMatchObject({
        kind: 'cannot-tell',
        reason: expect.stringMatching(/next/),
      });
      // ord_1 on page 1: page 2 may hold a second order with its reference
      expect(await lookupOn(a, OP, order({ orderRef: 'other' }))).toMatchObject({
        kind: 'cannot-tell',
        reason: expect.stringMatching(/one match .*next/),
      });
      expect(paged.count(OP)).toBe(2);
    } finally {
      await a.close();
      await paged.close();
    }
  });

  it('a miss on a page whose body says more follow (the declared `more`, has_more) is cannot-tell, naming has_more', async () => {
    const paged = await startIetfKeySandbox({ port: 0, pageSize: 1 });
    const byCustomer = ietfOrdersCreate('acme-orders');
    const path = '/orders?customer={customer}&linkless=1'; // no Link header: only the body says it
    const lookup = { ...byCustomer.lookup, path, more: 'has_more' } as HttpOperationSpec['lookup'];
    const a = adapterAt(paged.url, OP, { ...byCustomer, lookup });
    try {
      await executeOn(a, OP, order({ orderRef: 'other' }));
      // One order, the whole list: not found, which still proves nothing while the card bounds no late apply.
      expect(await lookupOn(a, OP, order())).toMatchObject({
        kind: 'cannot-tell',
        reason: expect.not.stringMatching(/has_more/),
      });
      await executeOn(a, OP, order());
      expect(await lookupOn(a, OP, order())).toMatchObject({
        kind: 'cannot-tell',
        reason: expect.stringMatching(/has_more/),
      });
      expect(await lookupOn(a, OP, order({ orderRef: 'other' }))).toMatchObject({
        kind: 'cannot-tell',
        reason: expect.stringMatching(/one match .*has_more/),
      });
      expect(paged.count(OP)).toBe(2);
    } finally {
      await a.close();
      await paged.close();
    }
  });

  it("the adapter judges an absence by the card's rule, as decide's row does (late-apply bound + consistency delay): inside it, or with a bound unknown, cannot-tell", async () => {
    const spec = ietfOrdersCreate('acme-orders');
    const card = ordersCreateCard('acme-orders');
    const withDelay = (value: '1m' | 'unknown') =>
      adapterAt(env.sb.url, OP, {
        ...spec,
        card: {
          ...card,
          lookup: { ...card.lookup, consistencyDelay: { value, source: 'test' } },
          unverified: [...card.unverified, { field: 'lookup.consistencyDelay', condition: 'test', source: 'test' }],
        },
      });
    const now = Date.now();
    const a = withDelay('1m');
    const u = withDelay('unknown');
    try {
      const early = await lookupOn(a, OP, order(), { firstDispatchedAt: now - 10_000, now });
      expect(early).toMatchObject({ kind: 'cannot-tell' });
      expect(await lookupOn(u, OP, order(), { firstDispatchedAt: now - 86_400_000, now })).toMatchObject({
        kind: 'cannot-tell',
      });
      // decide judges it: inside the delay (and with the card's late-apply bound unknown) it proves nothing.
      const c = a.operations[OP]!.card;
      const st = {
        ledgerState: 'reconciling' as const,
        now,
        firstDispatchedAt: now - 10_000,
        maybeApplied: true,
        runAttempts: 1,
        runStartedAt: now - 10_000,
        windowStartedAt: now,
        polls: 1,
      };
      expect(notFoundIsAuthoritative(c, st)).toBe(false);
      expect(
        notFoundIsAuthoritative(
          { ...c, lookup: { ...c.lookup, lateApplyBound: { value: '0s', source: 'test' } } },
          { ...st, now: now + 60_000 },
        ),
      ).toBe(true);
    } finally {
      await a.close();
      await u.close();
    }
  });

  it('network: refused ⇒ not-applied; timeout ⇒ unknown (timeout); reset after send ⇒ unknown (connection-reset)', async () => {
    const refused = adapterAt(await closedPort(), OP, ietfOrdersCreate('acme-orders'));
    expect(await executeOn(refused, OP, order())).toMatchObject({
      kind: 'not-applied',
      code: 'ECONNREFUSED',
    });
    for (const [mode, cause] of [
      ['hang', 'timeout'],
      ['reset', 'connection-reset'],
    ] as const) {
      const srv = await startSilentServer(mode);
      const a = adapterAt(srv.url, OP, ietfOrdersCreate('acme-orders'), 300);
      try {
        expect(await executeOn(a, OP, order())).toMatchObject({ kind: 'unknown', cause });
        expect(srv.received()).toBe(1);
      } finally {
        await a.close();
        await srv.close();
      }
    }
  });
});

// A declaration may name a param's documented default: spelled out or left out, it is one order.
describe('a declared providerDefault: SDK → sandbox', () => {
  const giftWrap = (value: unknown): HttpOperationSpec => {
    const spec = ietfOrdersCreate('acme-orders');
    const rule = {
      field: 'giftWrap',
      compare: 'normalized' as const,
      providerDefault: value,
      source: 's',
      evidence: EVIDENCE,
    };
    const properties = { ...(spec.paramsSchema?.properties as object), giftWrap: { type: 'boolean' } };
    return {
      ...spec,
      card: { ...spec.card, paramComparison: [rule] },
      paramsSchema: { ...spec.paramsSchema, properties },
    };
  };
  const EVIDENCE = 'https://acme.example/docs/orders#gift-wrap';

  it('giftWrap false (the default) on the repeat ⇒ the first order adopted, one order; a default the schema refuses ⇒ CardValidationError', async () => {
    const sb = await startIetfKeySandbox({ port: 0 });
    try {
      await withAdapter(sb.url, OP, giftWrap(false), async (adapter) => {
        const { runner } = testRunner();
        const first = await runner.run(adapter, OP, { params: order() });
        const second = await runner.run(adapter, OP, { params: order({ giftWrap: false }) });
        expect(second).toMatchObject({ status: 'done', adopted: true, businessOperationId: first.businessOperationId });
        expect(sb.records()).toHaveLength(1);
      });
      expect(() => adapterAt(sb.url, OP, giftWrap('no'))).toThrow(CardValidationError);
    } finally {
      await sb.close();
    }
  });
});
