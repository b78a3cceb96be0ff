import { describe, expect, it } from 'vitest';
import type { BusinessOperationId, ProviderKey } from '@retrysafe/contract';
import { fillTemplate, operationFromDeclaration, type HttpOperationDeclaration } from './http-declaration.js';
import { ordersCreateCard } from './http-cards.js';

const ids = { businessOperationId: 'acme.orders.create:abc' as BusinessOperationId, providerKey: 'rs-abc' as ProviderKey };

describe('data declarations', () => {
  it('a whole-string placeholder keeps the value’s type; inside a string it is interpolated; a missing value is left out', () => {
    const body = fillTemplate({ qty: '{quantity}', ref: 'order {orderRef} / {businessOperationId}', nested: ['{customer.id}', { k: '{key}' }], gone: '{nothing}', n: 3, b: false }, { quantity: 2, orderRef: 'A-1', customer: { id: 'cus_1' } }, ids);
    expect(body).toEqual({ qty: 2, ref: 'order A-1 / acme.orders.create:abc', nested: ['cus_1', { k: 'rs-abc' }], n: 3, b: false });
  });

  it('a search match compares every `where` path and needs at least one', () => {
    const decl: HttpOperationDeclaration = {
      description: 'Create an order',
      method: 'POST',
      path: '/orders',
      key: { travels: 'header', name: 'Idempotency-Key', rule: { maxLength: 64 } },
      card: ordersCreateCard('acme'),
      lookup: { method: 'search', path: '/orders', match: { items: 'data', where: { reference: '{businessOperationId}', sku: '{sku}' } } },
      errors: { rules: [] },
    };
    const spec = operationFromDeclaration('acme', 'orders.create', decl);
    if (spec.lookup.method !== 'search') throw new Error('expected search');
    const ctx = { ...ids, params: { sku: 'sku_1' } };
    const body = { data: [{ reference: ids.businessOperationId, sku: 'other' }, { reference: ids.businessOperationId, sku: 'sku_1', id: 'ord_2' }] };
    expect(spec.lookup.match(body, ctx)).toEqual({ reference: ids.businessOperationId, sku: 'sku_1', id: 'ord_2' });
    expect(spec.lookup.match({ data: [] }, ctx)).toBeUndefined();
    expect(spec.lookup.match({ data: 'not a list' }, ctx)).toBeUndefined();
    expect(() => operationFromDeclaration('acme', 'orders.create', { ...decl, lookup: { method: 'search', path: '/orders', match: { where: {} } } })).toThrow(/needs at least one `where` comparison/);
  });
});
