/**
 * A fence file's `normalize`: how a fenced tool's intent arguments are put in normal form for its business-operation
 * id, as a card's `businessOperationId.normalize`. Without it two spellings of one intent (a trailing space) are two
 * operations, and the upstream makes two items; with it they are one. The contract's card validator judges it.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { type Answer, lookupPolicy, ordersServer, ordersTool, tempDir, wrapped, writeFence } from './fence-helpers.js';

const ordersFence = (normalize?: readonly unknown[]) =>
  writeFence(tempDir('retrysafe-normalize-'), {
    name: 'orders',
    timeoutMs: 2000,
    policy: lookupPolicy,
    tools: { create_order: { ...ordersTool({ lateApplyBound: '1s' }), ...(normalize ? { normalize } : {}) } },
  });

type Order = { id: string; ref: string };

async function twoSpellings(fence: string) {
  const client = await wrapped(fence, ['--', process.execPath, ordersServer]);
  const ref = `PO-${randomBytes(3).toString('hex')}`;
  const call = (r: string) =>
    client.callTool({
      name: 'create_order',
      arguments: { customer: 'cus_n', ref: r, sku: 'sku_1', quantity: 1 },
    }) as Promise<Answer>;
  const first = await call(ref);
  const second = await call(`${ref} `);
  const listed = await client.callTool({ name: 'list_orders', arguments: { customer: 'cus_n' } });
  const orders = (listed.structuredContent as { orders: Order[] }).orders.filter((o) => o.ref.trim() === ref);
  return { first, second, orders };
}

describe('fence file normalize: one intent in two spellings, against the orders server', () => {
  it('without it (the default) the intent is compared exactly: "PO-1" and "PO-1 " are two operations, two orders', async () => {
    const { first, second, orders } = await twoSpellings(ordersFence());
    expect(second._meta?.retrysafe?.businessOperationId).not.toBe(first._meta?.retrysafe?.businessOperationId);
    expect(orders).toHaveLength(2);
  });
});
