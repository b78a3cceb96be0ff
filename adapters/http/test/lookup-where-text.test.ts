import { InvalidParamsError, type JsonSchema } from '@retrysafe/contract';
import { closeAfterTest } from '@retrysafe/testkit/close-after-test';
import { describe, expect, it } from 'vitest';
import { createHttpAdapterFromDeclaration } from '../src/index.js';
import { startIetfKeySandbox } from '../src/sandbox/index.js';
import { searchedOrdersCreate, testRunner } from './helpers.js';

// A lookup's `where` compares the item with a param as text (a number matches its string, and a template puts it inside
// text): orderRef 5 and "5" are two business operations, but the lookup of one picks the other's order. Such a param
// is checked like a path placeholder: refused before the claim unless paramsSchema pins it to numbers.

const OP = 'orders.create';
const order = (orderRef: unknown) => ({ customer: 'cus_1', sku: 'sku_1', quantity: 2, orderRef });

const declaration = (where: Record<string, string>) =>
  searchedOrdersCreate(
    'Create an order; the search lists the customer’s orders and picks ours by reference',
    where,
    '/orders?customer={customer}&sku={sku}&quantity={quantity}',
  );

async function rig(where: Record<string, string>) {
  const sb = closeAfterTest(await startIetfKeySandbox({ port: 0 }));
  const adapter = closeAfterTest(
    createHttpAdapterFromDeclaration({
      provider: 'acme',
      baseUrl: sb.url,
      timeoutMs: 1000,
      operations: { [OP]: declaration(where) },
    }),
  );
  return { sb, adapter, runner: testRunner().runner };
}

describe('a param the lookup `where` compares as text', () => {
  it('a whole-string placeholder (5 matches "5"): orderRef 5 is refused before the claim, so its lookup never adopts the order of orderRef "5"', async () => {
    const { sb, adapter, runner } = await rig({ reference: '{orderRef}' });
    expect(await runner.run(adapter, OP, { params: order('5') })).toMatchObject({
      status: 'done',
      providerRef: 'ord_1',
    });
    sb.failNext(1); // B's request gets a stored 500: the runner would look it up and find A's order
    await expect(runner.run(adapter, OP, { params: order(5) })).rejects.toSatisfy(
      (e) => InvalidParamsError.isInstance(e) && e.fields.some((f) => f.path === 'orderRef'),
    );
    expect(sb.count(OP)).toBe(1);
  });

  it('inside text a number, a boolean or an object is refused; whole, only an unpinned number (a boolean or object keeps its type)', () => {
    const check = (where: Record<string, string>, paramsSchema?: JsonSchema) =>
      createHttpAdapterFromDeclaration({
        provider: 'acme',
        baseUrl: 'http://127.0.0.1:9',
        timeoutMs: 1000,
        operations: { [OP]: { ...declaration(where), ...(paramsSchema ? { paramsSchema } : {}) } },
      }).operations[OP]!.checkParams!;
    const inText = check({ reference: 'ref {orderRef}' });
    for (const v of [5, true, { a: 1 }])
      expect(inText(order(v))).toEqual([{ path: 'orderRef', message: expect.stringMatching(/lookup match/) }]);
    expect(inText(order('5'))).toEqual([]);
    const whole = check({ reference: '{orderRef}' });
    expect(whole(order(5))).toEqual([{ path: 'orderRef', message: expect.stringMatching(/lookup match/) }]);
    expect(whole(order(true))).toEqual([]);
    expect(whole(order({ a: 1 }))).toEqual([]);
    const pinned = check(
      { reference: '{orderRef}' },
      { type: 'object', properties: { orderRef: { type: 'integer' }, sku: {}, quantity: { type: 'integer' } } },
    );
    expect(pinned(order(5))).toEqual([]);
  });
});
