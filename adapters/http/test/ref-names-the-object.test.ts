import { ConflictError } from '@retrysafe/contract';
import { closeAfterTest } from '@retrysafe/testkit/close-after-test';
import { describe, expect, it } from 'vitest';
import { asyncExportsCreate, clientTokenInstancesRun, type HttpOperationSpec, ietfOrdersCreate } from '../src/index.js';
import { startAsyncReplySandbox, startClientTokenSandbox, startIetfKeySandbox } from '../src/sandbox/index.js';
import { adapterAt, testRunner } from './helpers.js';

// The caller's reference names the object (as the provider's own key does: the same key with other params is refused).
// A changed parameter under it is a correction of that object, never a second order, export or instance.
const patterns = [
  {
    op: 'orders.create',
    spec: ietfOrdersCreate('acme-orders'),
    start: () => startIetfKeySandbox({ port: 0 }),
    params: { customer: 'cus_1', sku: 'sku_1', quantity: 2, orderRef: 'A-17' },
    corrected: { quantity: 3 },
  },
  {
    op: 'exports.create',
    spec: asyncExportsCreate('acme-exports'),
    start: () => startAsyncReplySandbox({ port: 0 }),
    params: { dataset: 'sales-2026', format: 'csv', requestRef: 'R-9' },
    corrected: { format: 'json' },
  },
  {
    op: 'instances.run',
    spec: clientTokenInstancesRun('acme-compute'),
    start: () => startClientTokenSandbox({ port: 0 }),
    params: { imageId: 'ami-0abcdef12', instanceType: 't3.micro', launchRef: 'L-1' },
    corrected: { instanceType: 't3.small' },
  },
] satisfies {
  op: string;
  spec: HttpOperationSpec;
  start: () => Promise<{ url: string; count(op: string): number; close(): Promise<void> }>;
  params: Record<string, unknown>;
  corrected: Record<string, unknown>;
}[];

describe('the caller’s reference names the object: a changed parameter under it is never a second one', () => {
  it.each(patterns)(
    '$op: done, then the same reference with a changed parameter ⇒ params conflict, one object',
    async (p) => {
      const sb = closeAfterTest(await p.start());
      const adapter = closeAfterTest(adapterAt(sb.url, p.op, p.spec));
      const { runner } = testRunner();
      expect(await runner.run(adapter, p.op, { params: p.params })).toMatchObject({ status: 'done' });
      const err = await runner.run(adapter, p.op, { params: { ...p.params, ...p.corrected } }).catch((e: unknown) => e);
      expect(ConflictError.isInstance(err) && err.field === 'params' && err.paths).toEqual(Object.keys(p.corrected));
      expect(sb.count(p.op)).toBe(1);
    },
  );

  it('orders.create: refused out of stock, then resend-with another sku ⇒ the same operation, revision 2, one order', async () => {
    const sb = closeAfterTest(await startIetfKeySandbox({ port: 0 }));
    const adapter = closeAfterTest(adapterAt(sb.url, 'orders.create', ietfOrdersCreate('acme-orders')));
    const { runner } = testRunner();
    const params = { customer: 'cus_1', sku: 'oos-1', quantity: 2, orderRef: 'A-18' };
    const first = await runner.run(adapter, 'orders.create', { params });
    expect(first).toMatchObject({ status: 'handed-off' });
    const fixed = { ...params, sku: 'sku_1' };
    const again = await runner.resolve(
      first.businessOperationId,
      { action: 'resend-with', params: fixed },
      { adapters: [adapter] },
    );
    expect(again).toMatchObject({ status: 'done' });
    expect(sb.count('orders.create')).toBe(1);
  });
});
