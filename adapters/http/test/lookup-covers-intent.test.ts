import { AdapterConfigurationError } from '@retrysafe/contract';
import { closeAfterTest } from '@retrysafe/testkit/close-after-test';
import { describe, expect, it } from 'vitest';
import { createHttpAdapterFromDeclaration } from '../src/index.js';
import { startIetfKeySandbox } from '../src/sandbox/index.js';
import { searchedOrdersCreate, testRunner } from './helpers.js';

// A list lookup adopts the first item its path and `where` select. If they compare less than the id covers, another
// operation's item (same customer and sku, another orderRef) is taken for this one, which is then never made.

const OP = 'orders.create';
const order = (orderRef: string) => ({ customer: 'cus_1', sku: 'sku_1', quantity: 2, orderRef });

const declaration = (where: Record<string, string>, path = '/orders?customer={customer}') =>
  searchedOrdersCreate('Create an order; the search lists the customer’s orders and picks one', where, path);

const build = (where: Record<string, string>, path?: string, baseUrl = 'http://127.0.0.1:9') =>
  createHttpAdapterFromDeclaration({
    provider: 'acme',
    baseUrl,
    timeoutMs: 1000,
    operations: { [OP]: declaration(where, path) },
  });

describe('a declared list lookup compares everything the id covers, or the id or key', () => {
  it('one that leaves out an intent field is refused when the adapter is built, naming the field', () => {
    expect(() => build({ sku: '{sku}', quantity: '{quantity}' })).toThrow(AdapterConfigurationError);
    expect(() => build({ sku: '{sku}', quantity: '{quantity}' })).toThrow(/orderRef/);
    // The path's filter counts: customer there, the rest in `where`.
    expect(() => build({ sku: '{sku}', quantity: '{quantity}', reference: '{orderRef}' })).not.toThrow();
    expect(() =>
      build({ reference: '{businessOperationId}' }, '/orders?reference={businessOperationId}'),
    ).not.toThrow();
    expect(() => build({ sku: '{sku}' }, '/orders?key={key}')).not.toThrow();
  });

  it('with every field compared, B after a lost answer is not answered with A’s order', async () => {
    const sb = closeAfterTest(await startIetfKeySandbox({ port: 0 }));
    const adapter = closeAfterTest(
      build({ sku: '{sku}', quantity: '{quantity}', reference: '{orderRef}' }, undefined, sb.url),
    );
    const { runner } = testRunner();
    expect(await runner.run(adapter, OP, { params: order('A-1') })).toMatchObject({
      status: 'done',
      providerRef: 'ord_1',
    });
    sb.failNext(1);
    const b = await runner.run(adapter, OP, { params: order('B-1') });
    expect(b).not.toMatchObject({ providerRef: 'ord_1' });
    expect(b.status === 'done' && b.adopted).toBe(false);
  });
});
