/**
 * A fence file's `paramComparison`: how a fenced tool's argument that is not part of its intent is compared with the
 * stored one when the operation is called again, as a card's `paramComparison`. Without it (exact) a retry that left
 * `labels` out the first time and sends `labels: []` the second is refused as a conflict for a person to resolve,
 * though the upstream reads both as one request; with it the retry is the first operation, adopted. The contract's
 * card validator judges it.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { FenceConfigError } from '../src/index.js';
import {
  type Answer,
  fenceAdapter,
  listed,
  lookupOrder,
  lookupPolicy,
  ordersServer,
  ordersTool,
  parseWithRule,
  startError,
  tempDir,
  wrapOrders,
  wrapped,
  writeFence,
} from './fence-helpers.js';

const LABELS = {
  field: 'labels',
  compare: 'normalized',
  steps: ['trim', 'empty-array-as-absent'],
  source: 'orders-server.mjs --labels: labels are kept trimmed, [] when left out',
  evidence: 'https://orders.example/docs/orders#labels',
};

const ordersFence = (paramComparison?: readonly unknown[]) =>
  writeFence(tempDir('retrysafe-param-comparison-'), {
    name: 'orders',
    timeoutMs: 2000,
    policy: lookupPolicy,
    tools: {
      create_order: { ...ordersTool({ lateApplyBound: '1s' }), ...(paramComparison ? { paramComparison } : {}) },
    },
  });

type Order = { id: string; ref: string };

/** A first call, then its retry with the same intent and `labels` spelled otherwise, against the orders server. */
async function retried(fence: string, first: Record<string, unknown>, retry: Record<string, unknown>) {
  const client = await wrapped(fence, ['--', process.execPath, ordersServer, '--labels']);
  const { tools } = await client.listTools();
  const description = tools.find((t) => t.name === 'create_order')?.description;
  const ref = `PO-${randomBytes(3).toString('hex')}`;
  const call = (extra: Record<string, unknown>) =>
    client.callTool({
      name: 'create_order',
      arguments: { customer: 'cus_p', ref, sku: 'sku_1', quantity: 1, ...extra },
    }) as Promise<Answer>;
  const one = await call(first);
  const two = await call(retry);
  const listed = await client.callTool({ name: 'list_orders', arguments: { customer: 'cus_p' } });
  const orders = (listed.structuredContent as { orders: Order[] }).orders.filter((o) => o.ref === ref);
  return { first: one, second: two, orders, description };
}

describe('fence file paramComparison: a retry that spells an optional argument otherwise, against the orders server', () => {
  it('without it (the default) params are compared exactly: labels: [] after none is a conflict for a person', async () => {
    const { first, second, orders } = await retried(ordersFence(), {}, { labels: [] });
    expect(first._meta?.retrysafe).toMatchObject({ status: 'done', adopted: false });
    expect(second._meta?.retrysafe?.status).toBe('conflict');
    expect(orders).toHaveLength(1);
  });

  it('labels declared empty-array-as-absent: labels: [] after none is the first operation, adopted; one order', async () => {
    const { first, second, orders, description } = await retried(ordersFence([LABELS]), {}, { labels: [] });
    expect(description).toMatch(/refused as a conflict \(compared after labels: trim, empty-array-as-absent;/);
    expect(first._meta?.retrysafe).toMatchObject({ status: 'done', adopted: false });
    expect(second._meta?.retrysafe).toMatchObject({ status: 'done', adopted: true });
    expect(second._meta?.retrysafe?.businessOperationId).toBe(first._meta?.retrysafe?.businessOperationId);
    expect(second.structuredContent).toEqual(first.structuredContent);
    expect(orders).toHaveLength(1);
  });

  it('labels declared trim: [" bug"] after ["bug"] is adopted; a label that differs still conflicts', async () => {
    const trim = { field: 'labels', compare: 'normalized', steps: ['trim'], source: LABELS.source };
    const spaced = await retried(ordersFence([trim]), { labels: ['bug'] }, { labels: [' bug'] });
    expect(spaced.second._meta?.retrysafe).toMatchObject({ status: 'done', adopted: true });
    expect(spaced.orders).toHaveLength(1);
    const other = await retried(ordersFence([trim]), { labels: ['bug'] }, { labels: ['ux'] });
    expect(other.second._meta?.retrysafe?.status).toBe('conflict');
    expect(other.orders).toHaveLength(1);
  });
});

describe("fence file paramComparison: judged by the contract's card validator when the fence starts", () => {
  it('is carried onto the fenced tool card; none declared, none on the card', () => {
    const card = (tool: Record<string, unknown>) => fenceAdapter(tool).operations.create_order!.card;
    expect(card({ paramComparison: [LABELS] }).paramComparison).toEqual([LABELS]);
    expect(card({}).paramComparison).toBeUndefined();
  });

  it('a merging step without evidence, an intent field, no steps, an unknown compare: refused, naming tools.<name>.paramComparison', () => {
    const { evidence: _, ...noEvidence } = LABELS;
    const refused = startError({ paramComparison: [noEvidence] });
    expect(refused).toBeInstanceOf(FenceConfigError);
    expect(refused.message).toMatch(/tools\.create_order\.paramComparison\[0\]\.evidence: missing/);
    expect(refused.message).not.toMatch(/card /);
    expect(startError({ paramComparison: [{ ...LABELS, field: 'ref' }] }).message).toMatch(
      /tools\.create_order\.paramComparison\[0\]\.field: is \(or is beneath\) an intent field/,
    );
    expect(startError({ paramComparison: [{ field: 'labels', compare: 'normalized', source: 's' }] }).message).toMatch(
      /tools\.create_order\.paramComparison\[0\]\.steps: a normalized comparison lists its steps/,
    );
    expect(startError({ paramComparison: [{ ...LABELS, compare: 'loose' }] }).message).toMatch(
      /tools\.create_order\.paramComparison\[0\]\.compare: expected one of "exact"/,
    );
    expect(startError({ paramComparison: [{ ...LABELS, steps: ['lowercase'] }] }).message).toMatch(
      /tools\.create_order\.paramComparison\[0\]\.steps\[0\]: expected one of "trim"/,
    );
    expect(() => fenceAdapter({ paramComparison: [{ field: 'labels', compare: 'exact', source: 's' }] })).not.toThrow();
    // `wrap` does not start: exit 2, the problem named by the fence file's path
    const wrap = wrapOrders(ordersFence([noEvidence]), '--labels');
    expect(wrap.stderr).toMatch(/^retrysafe-mcp wrap: tools\.create_order\.paramComparison\[0\]\.evidence: missing/);
    expect(wrap.status).toBe(2);
  });

  it('its shape is the fence file’s: an unknown key is refused when the file is read', () => {
    expect(() => parseWithRule('paramComparison', { ...LABELS, evidense: 'x' })).toThrow(
      /tools\.create_order\.paramComparison\[0\]\.evidense: unknown key/,
    );
  });
});

describe('fence file paramComparison: the lookup compares an argument as the card reads it', () => {
  const CUSTOMER = { field: 'customer', compare: 'normalized', steps: ['trim'], source: 'customer ids, spaces aside' };
  /** One business operation per ref; customer is another argument, matched and asked by. */
  const byRef = (paramComparison?: readonly unknown[]) => ({
    intent: ['ref'],
    ...(paramComparison ? { paramComparison } : {}),
  });
  const lookup = (tool: Record<string, unknown>, orders: readonly Record<string, unknown>[], customer: string) => {
    const adapter = fenceAdapter(tool, listed(orders));
    const params = { customer, ref: 'PO-1', sku: 'sku_1', quantity: 1 };
    return lookupOrder(adapter, params);
  };
  const made = [{ id: 'ord_1', customer: 'cus_1', ref: 'PO-1' }];

  it('an order made for "cus_1" is the operation whose call spells " cus_1" (customer trimmed), found', async () => {
    expect(await lookup(byRef([CUSTOMER]), made, ' cus_1')).toMatchObject({
      kind: 'found',
      outcome: { providerRef: 'ord_1' },
    });
    // exact by default: the order is another customer's
    expect(await lookup(byRef(), made, ' cus_1')).toMatchObject({ kind: 'not-found' });
    // an exact rule compares exactly too
    const exact = { field: 'customer', compare: 'exact', source: 's' };
    expect(await lookup(byRef([exact]), made, ' cus_1')).toMatchObject({ kind: 'not-found' });
  });

  it('asked by an argument compared normalised, the upstream may hold the item under another spelling: a miss is cannot-tell', async () => {
    // the lookup lists the orders of {{customer}}: an upstream that filters exactly would not list "cus_1"'s for " cus_1"
    expect(await lookup(byRef([CUSTOMER]), [], ' cus_1')).toMatchObject({ kind: 'cannot-tell' });
    expect(await lookup(byRef(), [], ' cus_1')).toMatchObject({ kind: 'not-found' });
  });

  it('an argument matched with empty-array-as-absent: [] and none, in the call or the item, are one', async () => {
    const labels = { match: { customer: 'customer', ref: 'ref', labels: 'labels' } };
    const tool = { ...byRef([LABELS]), lookup: { ...ordersTool({ lateApplyBound: '1s' }).lookup, ...labels } };
    const adapter = fenceAdapter(tool, listed([{ id: 'ord_1', customer: 'cus_1', ref: 'PO-1' }]));
    const params = { customer: 'cus_1', ref: 'PO-1', sku: 'sku_1', quantity: 1, labels: [] };
    expect(await lookupOrder(adapter, params)).toMatchObject({ kind: 'found' });
  });
});
