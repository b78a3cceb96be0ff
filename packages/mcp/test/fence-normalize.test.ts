/**
 * A fence file's `normalize`: how a fenced tool's intent arguments are put in normal form for its business-operation
 * id, as a card's `businessOperationId.normalize`. Without it two spellings of one intent (a trailing space) are two
 * operations, and the upstream makes two items; with it they are one. The contract's card validator judges it.
 */
import { randomBytes } from 'node:crypto';
import { createMemoryLedger, createRunner } from '@retrysafe/core';
import { describe, expect, it } from 'vitest';
import { createFenceAdapter, FenceConfigError, parseFenceConfig } from '../src/index.js';
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

const TRIM = { field: 'ref', steps: ['trim'], source: 'orders-server.mjs: a ref is the caller’s, spaces aside' };

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
  const { tools } = await client.listTools();
  const description = tools.find((t) => t.name === 'create_order')?.description;
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
  return { first, second, orders, description };
}

describe('fence file normalize: one intent in two spellings, against the orders server', () => {
  it('without it (the default) the intent is compared exactly: "PO-1" and "PO-1 " are two operations, two orders', async () => {
    const { first, second, orders } = await twoSpellings(ordersFence());
    expect(second._meta?.retrysafe?.businessOperationId).not.toBe(first._meta?.retrysafe?.businessOperationId);
    expect(orders).toHaveLength(2);
  });

  it('ref declared with trim: the second call is the first operation, adopted; one order', async () => {
    const { first, second, orders, description } = await twoSpellings(ordersFence([TRIM]));
    expect(description).toMatch(/One business operation per intent \(customer, ref; read after ref: trim\)/);
    expect(first._meta?.retrysafe).toMatchObject({ status: 'done', adopted: false });
    expect(second._meta?.retrysafe).toMatchObject({ status: 'done', adopted: true });
    expect(second._meta?.retrysafe?.businessOperationId).toBe(first._meta?.retrysafe?.businessOperationId);
    expect(second.structuredContent).toEqual(first.structuredContent);
    expect(orders).toHaveLength(1);
  });
});

describe("fence file normalize: judged by the contract's card validator when the fence starts", () => {
  it('is carried onto the fenced tool card; none declared, none on the card', () => {
    const card = (tool: Record<string, unknown>) => fenceAdapter(tool).operations.create_order!.card;
    expect(card({ normalize: [TRIM] }).businessOperationId.normalize).toEqual([TRIM]);
    expect(card({}).businessOperationId.normalize).toBeUndefined();
  });

  it('a merging step without evidence, an unknown step, a path outside the intent: refused, naming tools.<name>.normalize', () => {
    const caseFold = { field: 'ref', steps: ['case-fold'], source: 'refs are case-insensitive' };
    const noEvidence = startError({ normalize: [caseFold] });
    expect(noEvidence).toBeInstanceOf(FenceConfigError);
    expect(noEvidence.message).toMatch(/tools\.create_order\.normalize\[0\]\.evidence: missing/);
    expect(noEvidence.message).not.toMatch(/businessOperationId/);
    const evidence = 'https://orders.example/docs/refs';
    expect(() => fenceAdapter({ normalize: [{ ...caseFold, evidence }] })).not.toThrow();
    expect(startError({ normalize: [{ ...TRIM, steps: ['lowercase'] }] }).message).toMatch(
      /tools\.create_order\.normalize\[0\]\.steps\[0\]: expected one of "trim"/,
    );
    expect(startError({ normalize: [{ ...TRIM, field: 'sku' }] }).message).toMatch(
      /tools\.create_order\.normalize\[0\]\.field: expected one of the intent fields/,
    );
    expect(startError({ normalize: [{ ...caseFold, evidence: 'http://orders.example' }] }).message).toMatch(
      /tools\.create_order\.normalize\[0\]\.evidence/,
    );
    // `wrap` does not start: exit 2, the problem named by the fence file's path
    const wrap = wrapOrders(ordersFence([caseFold]));
    expect(wrap.stderr).toMatch(/^retrysafe-mcp wrap: tools\.create_order\.normalize\[0\]\.evidence: missing/);
    expect(wrap.status).toBe(2);
  });

  it('its shape is the fence file’s: an unknown key is refused when the file is read', () => {
    expect(() => parseWithRule('normalize', { ...TRIM, evidense: 'x' })).toThrow(
      /tools\.create_order\.normalize\[0\]\.evidense: unknown key/,
    );
  });
});

describe('fence file normalize: the lookup compares the intent as its id reads it', () => {
  const lookup = (tool: Record<string, unknown>, orders: readonly Record<string, unknown>[], ref: string) => {
    const adapter = fenceAdapter(tool, listed(orders));
    const params = { customer: 'cus_1', ref, sku: 'sku_1', quantity: 1 };
    return lookupOrder(adapter, params);
  };
  const made = [{ id: 'ord_1', customer: 'cus_1', ref: 'PO-1' }];

  it('an order made as "PO-1" is the operation a retry spells " PO-1 " (ref trimmed), found: not made again', async () => {
    expect(await lookup({ normalize: [TRIM] }, made, ' PO-1 ')).toMatchObject({
      kind: 'found',
      outcome: { providerRef: 'ord_1' },
    });
    // exact by default: " PO-1 " is another operation, whose order is not there
    expect(await lookup({}, made, ' PO-1 ')).toMatchObject({ kind: 'not-found' });
    expect(await lookup({ normalize: [TRIM] }, made, 'PO-2')).toMatchObject({ kind: 'not-found' });
  });

  it('asked by a normalised argument, the upstream may hold the item under another spelling: a miss is cannot-tell', async () => {
    const customer = { field: 'customer', steps: ['trim'], source: 'customer ids, spaces aside' };
    // the lookup lists the orders of {{customer}}: an upstream that filters exactly would not list "cus_1 "'s
    expect(await lookup({ normalize: [customer] }, [], 'PO-1')).toMatchObject({ kind: 'cannot-tell' });
    expect(await lookup({ normalize: [customer] }, made, 'PO-1')).toMatchObject({ kind: 'found' });
  });
});

describe('fence file normalize: a lookup that matches an array item', () => {
  it('a rule on every item (lines.ref) reads the item the match names (lines.0.ref): found, not made again', async () => {
    // The upstream keeps line refs trimmed; the call spells one with spaces, which the card compares trimmed.
    const lines = { field: 'lines.ref', compare: 'normalized', steps: ['trim'], source: 'line refs, spaces aside' };
    const match = { customer: 'customer', ref: 'ref', 'lines.0.ref': 'lines.0.ref' };
    const tool = { paramComparison: [lines], lookup: { ...ordersTool({ lateApplyBound: '1s' }).lookup, match } };
    const made = [{ id: 'ord_7', customer: 'cus_1', ref: 'PO-7', lines: [{ ref: 'L-1' }] }];
    const adapter = fenceAdapter(tool, listed(made));
    const params = { customer: 'cus_1', ref: 'PO-7', lines: [{ ref: ' L-1 ' }] };
    expect(await lookupOrder(adapter, params)).toMatchObject({
      kind: 'found',
      outcome: { providerRef: 'ord_7' },
    });
  });
});

describe('fence file normalize: an empty collection and a left-out one, where the upstream says they are one', () => {
  it('issue.labels declared empty-array-as-absent: `labels: []` after no labels is one operation, one issue', async () => {
    const made: unknown[] = [];
    const callTool = async (p: { arguments?: Record<string, unknown> }) => {
      made.push(p.arguments);
      return { content: [], structuredContent: { number: made.length } };
    };
    const labels = {
      field: 'issue.labels',
      steps: ['empty-array-as-absent'],
      source: 'the tracker stores an issue created without labels with labels: []',
      evidence: 'https://tracker.example/docs/issues#labels',
    };
    const run = async (normalize: readonly unknown[] | undefined) => {
      made.length = 0;
      const config = parseFenceConfig({
        name: 'tracker',
        ledger: './unused.db',
        tools: { create_issue: { kind: 'create', intent: ['repo', 'issue'], ...(normalize ? { normalize } : {}) } },
      });
      const tools = [{ name: 'create_issue', inputSchema: { type: 'object' as const } }];
      const adapter = createFenceAdapter({ config, client: { callTool }, tools });
      const runner = createRunner({ ledger: createMemoryLedger() });
      const call = (issue: Record<string, unknown>) =>
        runner.run(adapter, 'create_issue', { params: { repo: 'acme/web', issue } });
      const first = await call({ title: 'Fix login' });
      const second = await call({ title: 'Fix login', labels: [] });
      return { ids: [first.businessOperationId, second.businessOperationId], made: made.length };
    };
    const exact = await run(undefined);
    expect(exact.ids[0]).not.toBe(exact.ids[1]);
    expect(exact.made).toBe(2);
    const one = await run([labels]);
    expect(one.ids[0]).toBe(one.ids[1]);
    expect(one.made).toBe(1);
  });
});
