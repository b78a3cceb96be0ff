import type { BusinessOperationId, JsonSchema, ProviderKey } from '@retrysafe/contract';
import { describe, expect, it } from 'vitest';
import { ordersCreateCard } from './http-cards.js';
import {
  createHttpAdapterFromDeclaration,
  fillTemplate,
  type HttpOperationDeclaration,
  operationFromDeclaration,
} from './http-declaration.js';

const ids = {
  businessOperationId: 'acme.orders.create:abc' as BusinessOperationId,
  providerKey: 'rs-abc' as ProviderKey,
};
/** An IETF-style order declaration whose search matches by reference. */
const orderDeclaration: HttpOperationDeclaration = {
  description: 'Create an order',
  method: 'POST',
  path: '/orders',
  key: { travels: 'header', name: 'Idempotency-Key', rule: { maxLength: 64 } },
  card: ordersCreateCard('acme'),
  lookup: {
    method: 'search',
    path: '/orders',
    match: { items: 'data', where: { reference: '{businessOperationId}' } },
  },
  errors: { rules: [{ status: 422, outcome: 'rejected', reason: 'conflict' }] },
  // The order's parameters, declared without pinning their types (the card's intent is customer and orderRef).
  paramsSchema: { type: 'object', properties: { sku: {}, quantity: {} } },
};

describe('data declarations', () => {
  it('a whole-string placeholder keeps the value’s type; inside a string it is interpolated; a missing value is left out', () => {
    const body = fillTemplate(
      {
        qty: '{quantity}',
        ref: 'order {orderRef} / {businessOperationId}',
        nested: ['{customer.id}', { k: '{key}' }],
        gone: '{nothing}',
        n: 3,
        b: false,
      },
      { quantity: 2, orderRef: 'A-1', customer: { id: 'cus_1' } },
      ids,
    );
    expect(body).toEqual({
      qty: 2,
      ref: 'order A-1 / acme.orders.create:abc',
      nested: ['cus_1', { k: 'rs-abc' }],
      n: 3,
      b: false,
    });
  });

  it('a search match compares every `where` path and needs at least one', () => {
    const decl: HttpOperationDeclaration = {
      ...orderDeclaration,
      lookup: {
        method: 'search',
        path: '/orders',
        match: { items: 'data', where: { reference: '{businessOperationId}', sku: '{sku}' } },
      },
    };
    const spec = operationFromDeclaration('acme', 'orders.create', decl);
    if (spec.lookup.method !== 'search') throw new Error('expected search');
    const ctx = { ...ids, params: { sku: 'sku_1' } };
    const body = {
      data: [
        { reference: ids.businessOperationId, sku: 'other' },
        { reference: ids.businessOperationId, sku: 'sku_1', id: 'ord_2' },
      ],
    };
    expect(spec.lookup.match(body, ctx)).toEqual([{ reference: ids.businessOperationId, sku: 'sku_1', id: 'ord_2' }]);
    expect(spec.lookup.match({ data: [] }, ctx)).toEqual([]);
    expect(spec.lookup.match({ data: 'not a list' }, ctx)).toEqual([]);
    expect(() =>
      operationFromDeclaration('acme', 'orders.create', {
        ...decl,
        lookup: { method: 'search', path: '/orders', match: { where: {} } },
      }),
    ).toThrow(/needs at least one `where` comparison/);
  });
  it('a number, boolean or object interpolated into body text is refused unless the schema pins numbers: 5 and "5" send one body under two ids', () => {
    const orderMatch = { items: 'data', where: { reference: '{businessOperationId}' } };
    const checkParams = (paramsSchema?: JsonSchema) =>
      createHttpAdapterFromDeclaration({
        provider: 'acme',
        baseUrl: 'http://127.0.0.1:9',
        timeoutMs: 1000,
        operations: {
          'orders.create': {
            ...orderDeclaration,
            lookup: { method: 'search', path: '/orders?ref={businessOperationId}', match: orderMatch },
            body: { note: 'Order {quantity} of {sku}', quantity: '{quantity}', customer: '{customer}' },
            ...(paramsSchema ? { paramsSchema } : {}),
          },
        },
      }).operations['orders.create']!.checkParams!;
    const open = checkParams();
    const params = { customer: 'cus_1', sku: 'sku_1', orderRef: 'R-1' };
    expect(open({ ...params, quantity: 5 })).toEqual([
      { path: 'quantity', message: expect.stringMatching(/send it as a string/) },
    ]);
    expect(open({ ...params, quantity: '5' })).toEqual([]);
    expect(open({ ...params, quantity: '5', sku: true })).toEqual([
      { path: 'sku', message: expect.stringMatching(/send it as a string/) },
    ]);
    expect(open({ ...params, quantity: '5', sku: { a: 1 } })).toEqual([
      { path: 'sku', message: expect.stringMatching(/send it as a string/) },
    ]);
    // A whole-string placeholder keeps the type, so a number there is one spelling: only the interpolated use counts.
    expect(open({ ...params, quantity: '5', customer: 7 })).toEqual([]);
    const pinned = checkParams({ type: 'object', properties: { sku: {}, quantity: { type: 'integer' } } });
    expect(pinned({ ...params, quantity: 5 })).toEqual([]);
  });
});

describe('drills for a declaration', () => {
  it('picks the pattern sandbox from the declaration’s shape unless it names one, and fills {i} in drill params', async () => {
    const { drillsForDeclaration, patternOf } = await import('./sandbox/http-drills.js');
    const base = orderDeclaration;
    expect(patternOf(base)).toBe('ietf-idempotency-key');
    expect(patternOf({ ...base, key: { travels: 'body', name: 'ClientToken' } })).toBe('client-token');
    expect(patternOf({ ...base, precondition: { param: 'etag', header: 'If-Match' } })).toBe('etag');
    expect(patternOf({ ...base, asyncReply: true })).toBe('async-request-reply');
    expect(patternOf({ ...base, drill: { pattern: 'etag' } })).toBe('etag');
    const [d] = drillsForDeclaration({
      name: 'acme',
      provider: 'acme',
      operations: {
        'orders.create': {
          ...base,
          drill: { params: { customer: 'cus_{i}', sku: 'sku_1', quantity: 2, orderRef: 'R-{i}' } },
        },
      },
    });
    expect(d!.name).toBe('acme--ietf-idempotency-key');
    expect(d!.operations['orders.create']!.params(7)).toEqual({
      customer: 'cus_7',
      sku: 'sku_1',
      quantity: 2,
      orderRef: 'R-7',
    });
    expect(d!.operations['orders.create']!.changeIntent!({ orderRef: 'R-7' })).toEqual({ orderRef: 'R-7-changed' });
    const two = drillsForDeclaration({
      name: 'acme',
      provider: 'acme',
      operations: { 'orders.create': base, 'orders.again': base },
    });
    expect(two.map((x) => x.name)).toEqual([
      'acme--ietf-idempotency-key--orders.create',
      'acme--ietf-idempotency-key--orders.again',
    ]);
  });
});
