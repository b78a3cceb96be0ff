/**
 * A fence file's `normalize` and `paramComparison`, each in the card's own shape: how a fenced tool's intent
 * arguments are put in normal form for its business-operation id, and how an argument outside the intent is compared
 * with the stored one on a repeat call. Without them two spellings of one intent (a trailing space) are two operations,
 * two items upstream, and a retry that sends `labels: []` after leaving labels out is a conflict for a person, though
 * the upstream reads both as one request. The contract's card validator judges both.
 */
import { randomBytes } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
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
const LABELS = {
  field: 'labels',
  compare: 'normalized',
  steps: ['trim', 'empty-array-as-absent'],
  source: 'orders-server.mjs --labels: labels are kept trimmed, [] when left out',
  evidence: 'https://orders.example/docs/orders#labels',
};

/** A fence file over the orders server whose `create_order` declares `rules` (`normalize`, `paramComparison`). */
const rulesFence = (rules: Record<string, unknown> = {}) =>
  writeFence(tempDir('retrysafe-fence-rules-'), {
    name: 'orders',
    timeoutMs: 2000,
    policy: lookupPolicy,
    tools: { create_order: { ...ordersTool({ lateApplyBound: '1s' }), ...rules } },
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
    const { first, second, orders } = await twoSpellings(rulesFence());
    expect(second._meta?.retrysafe?.businessOperationId).not.toBe(first._meta?.retrysafe?.businessOperationId);
    expect(orders).toHaveLength(2);
  });

  it('ref declared with trim: the second call is the first operation, adopted; one order', async () => {
    const { first, second, orders, description } = await twoSpellings(rulesFence({ normalize: [TRIM] }));
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
    const wrap = wrapOrders(rulesFence({ normalize: [caseFold] }));
    expect(wrap.stderr).toMatch(
      /^retrysafe-mcp wrap: \S+\.(yaml|json): tools\.create_order\.normalize\[0\]\.evidence: missing/,
    );
    expect(wrap.status).toBe(2);
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

describe('fence file normalize: spellings the upstream stores as one (an empty collection and none, its default and none)', () => {
  const made: unknown[] = [];
  const callTool = async (p: { arguments?: Record<string, unknown> }) => {
    made.push(p.arguments);
    return { content: [], structuredContent: { number: made.length } };
  };
  const issue = { type: 'object', properties: { title: { type: 'string' }, labels: {}, priority: { type: 'string' } } };
  const tools = [{ name: 'create_issue', inputSchema: { type: 'object' as const, properties: { repo: {}, issue } } }];
  const adapterWith = (normalize: readonly unknown[] | undefined) => {
    const config = parseFenceConfig({
      name: 'tracker',
      ledger: './unused.db',
      tools: { create_issue: { kind: 'create', intent: ['repo', 'issue'], ...(normalize ? { normalize } : {}) } },
    });
    return createFenceAdapter({ config, client: { callTool }, tools });
  };
  /** A create of issue `{ title: 'Fix login' }`, then one with `spelled` added: their ids, and the issues made. */
  const run = async (normalize: readonly unknown[] | undefined, spelled: Record<string, unknown>) => {
    made.length = 0;
    const adapter = adapterWith(normalize);
    const runner = createRunner({ ledger: createMemoryLedger() });
    const call = (issue: Record<string, unknown>) =>
      runner.run(adapter, 'create_issue', { params: { repo: 'acme/web', issue } });
    const first = await call({ title: 'Fix login' });
    const second = await call({ title: 'Fix login', ...spelled });
    return { ids: [first.businessOperationId, second.businessOperationId], made: made.length };
  };

  it('issue.labels declared empty-array-as-absent: `labels: []` after no labels is one operation, one issue', async () => {
    const labels = {
      field: 'issue.labels',
      steps: ['empty-array-as-absent'],
      source: 'the tracker stores an issue created without labels with labels: []',
      evidence: 'https://tracker.example/docs/issues#labels',
    };
    const exact = await run(undefined, { labels: [] });
    expect(exact.ids[0]).not.toBe(exact.ids[1]);
    expect(exact.made).toBe(2);
    const one = await run([labels], { labels: [] });
    expect(one.ids[0]).toBe(one.ids[1]);
    expect(one.made).toBe(1);
  });

  it('issue.priority declared with the tracker\'s default: `priority: "normal"` after none is one operation, one issue', async () => {
    const priority = {
      field: 'issue.priority',
      steps: [],
      providerDefault: 'normal',
      source: 'the tracker stores an issue created without priority with priority: "normal"',
      evidence: 'https://tracker.example/docs/issues#priority',
    };
    expect((await run(undefined, { priority: 'normal' })).made).toBe(2);
    const one = await run([priority], { priority: 'normal' });
    expect(one.ids[0]).toBe(one.ids[1]);
    expect(one.made).toBe(1);
    expect((await run([priority], { priority: 'high' })).made).toBe(2);
    // refused at start: without evidence, on an intent field itself, a default the input schema does not take
    const { evidence: _, ...noEvidence } = priority;
    expect(() => adapterWith([noEvidence])).toThrow(/tools\.create_issue\.normalize\[0\]\.evidence: missing/);
    expect(() => adapterWith([{ ...priority, field: 'issue' }])).toThrow(
      /tools\.create_issue\.normalize\[0\]\.providerDefault: goes beneath an intent field/,
    );
    expect(() => adapterWith([{ ...priority, providerDefault: 3 }])).toThrow(
      /tools\.create_issue\.normalize\[0\]\.providerDefault: does not fit the params schema/,
    );
  });
});

/** `fence` over the orders server that takes labels. */
const labelled = (fence: string) => wrapped(fence, ['--', process.execPath, ordersServer, '--labels']);

/** A first call, then its retry with the same intent (a ref of its own) and `labels` spelled otherwise. */
async function retried(client: Client, first: Record<string, unknown>, retry: Record<string, unknown>) {
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
    const { first, second, orders } = await retried(await labelled(rulesFence()), {}, { labels: [] });
    expect(first._meta?.retrysafe).toMatchObject({ status: 'done', adopted: false });
    expect(second._meta?.retrysafe?.status).toBe('conflict');
    expect(orders).toHaveLength(1);
  });

  it('labels declared empty-array-as-absent: labels: [] after none is the first operation, adopted; one order', async () => {
    const { first, second, orders, description } = await retried(
      await labelled(rulesFence({ paramComparison: [LABELS] })),
      {},
      { labels: [] },
    );
    expect(description).toMatch(/refused as a conflict \(compared after labels: trim, empty-array-as-absent;/);
    expect(first._meta?.retrysafe).toMatchObject({ status: 'done', adopted: false });
    expect(second._meta?.retrysafe).toMatchObject({ status: 'done', adopted: true });
    expect(second._meta?.retrysafe?.businessOperationId).toBe(first._meta?.retrysafe?.businessOperationId);
    expect(second.structuredContent).toEqual(first.structuredContent);
    expect(orders).toHaveLength(1);
  });

  it('matched by the lookup and left out of a call whose answer is lost: the order ([] upstream) is found, not handed off', async () => {
    const match = { customer: 'customer', ref: 'ref', labels: 'labels' };
    const fence = writeFence(tempDir('retrysafe-fence-rules-'), {
      name: 'orders',
      timeoutMs: 300,
      policy: lookupPolicy,
      tools: { create_order: { ...ordersTool({ lateApplyBound: '1s', match }), paramComparison: [LABELS] } },
    });
    const client = await wrapped(fence, ['--', process.execPath, ordersServer, '--labels', '--reply-delay-ms', '1000']);
    const args = { customer: 'cus_l', ref: 'PO-lost', sku: 'sku_1', quantity: 1 };
    const answer = (await client.callTool({ name: 'create_order', arguments: args }, undefined, {
      timeout: 30_000,
    })) as Answer;
    expect(answer._meta?.retrysafe?.status).toBe('done');
    expect(answer.structuredContent).toMatchObject({ id: 'ord_1', labels: [] }); // the item the lookup found
    const listed = await client.callTool({ name: 'list_orders', arguments: { customer: 'cus_l' } });
    expect((listed.structuredContent as { orders: Order[] }).orders).toHaveLength(1);
  });

  it('labels declared trim: [" bug"] after ["bug"] is adopted; a label that differs still conflicts', async () => {
    const trim = { field: 'labels', compare: 'normalized', steps: ['trim'], source: LABELS.source };
    // one fence for both retries: each has a ref of its own
    const client = await labelled(rulesFence({ paramComparison: [trim] }));
    const spaced = await retried(client, { labels: ['bug'] }, { labels: [' bug'] });
    expect(spaced.second._meta?.retrysafe).toMatchObject({ status: 'done', adopted: true });
    expect(spaced.orders).toHaveLength(1);
    const other = await retried(client, { labels: ['bug'] }, { labels: ['ux'] });
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
    const wrap = wrapOrders(rulesFence({ paramComparison: [noEvidence] }), '--labels');
    expect(wrap.stderr).toMatch(
      /^retrysafe-mcp wrap: \S+\.(yaml|json): tools\.create_order\.paramComparison\[0\]\.evidence: missing/,
    );
    expect(wrap.status).toBe(2);
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

describe('fence file rules: their shape is the fence file’s', () => {
  it.each([
    ['normalize', TRIM],
    ['paramComparison', LABELS],
  ])('an unknown key in a %s rule is refused when the file is read', (key, rule) => {
    expect(() => parseWithRule(key, { ...rule, evidense: 'x' })).toThrow(
      new RegExp(`tools\\.create_order\\.${key}\\[0\\]\\.evidense: unknown key`),
    );
  });
});

describe('fence file rules: the lookup reads each argument as the card does, on any path', () => {
  const LINE_REFS = { field: 'lines.ref', compare: 'normalized', steps: ['trim'], source: 'line refs, spaces aside' };

  it('asked by an array item (lines.0.ref) that a rule on every item (lines.ref) trims: a miss is cannot-tell', async () => {
    // The upstream searches by the line ref as asked: the order a retry spelled "L-1" is not listed for " L-1 ".
    const lookup = {
      ...ordersTool({ lateApplyBound: '1s' }).lookup,
      arguments: { customer: '{{customer}}', line: '{{lines.0.ref}}' },
      match: { customer: 'customer', ref: 'ref', 'lines.0.ref': 'lines.0.ref' },
    };
    const adapter = fenceAdapter({ paramComparison: [LINE_REFS], lookup }, listed([]));
    const params = { customer: 'cus_1', ref: 'PO-7', lines: [{ ref: ' L-1 ' }] };
    expect(await lookupOrder(adapter, params)).toMatchObject({ kind: 'cannot-tell' });
  });

  it('a paramComparison rule above an intent argument does not fold two intents: the other order is not this one', async () => {
    // One operation per customer and first line ref, compared exactly; the lines are otherwise compared trimmed.
    const lines = { field: 'lines', compare: 'normalized', steps: ['trim'], source: 'line fields, spaces aside' };
    const crossing = { ...LINE_REFS, field: 'lines.note' };
    for (const paramComparison of [[lines], [LINE_REFS, crossing]]) {
      const orders: Record<string, unknown>[] = [];
      let lose = false;
      const callTool = async (p: { name: string; arguments?: Record<string, unknown> }) => {
        if (p.name === 'list_orders') return { content: [], structuredContent: { orders } };
        // The second operation's first send is lost before it reaches the upstream (the connection closed).
        if (lose) {
          lose = false;
          throw Object.assign(new Error('Connection closed'), { code: -32000 });
        }
        orders.push({ id: `ord_${orders.length + 1}`, ...p.arguments });
        return { content: [], structuredContent: { id: `ord_${orders.length}` } };
      };
      const match = { customer: 'customer', 'lines.0.ref': 'lines.0.ref' };
      const tool = {
        intent: ['customer', 'lines.0.ref'],
        paramComparison,
        lookup: { ...ordersTool({ lateApplyBound: '1ms' }).lookup, match },
      };
      const adapter = fenceAdapter(tool, callTool);
      const runner = createRunner({ ledger: createMemoryLedger(), policy: { ...lookupPolicy, lookupWindowMs: 50 } });
      const call = (ref: string) =>
        runner.run(adapter, 'create_order', { params: { customer: 'cus_1', lines: [{ ref, note: 'n' }] } });
      const first = await call('L-1');
      lose = true;
      const second = await call(' L-1');
      expect(second.businessOperationId).not.toBe(first.businessOperationId);
      expect(second).toMatchObject({ status: 'done', providerRef: 'ord_2' });
      expect(orders).toHaveLength(2);
    }
  });
});

describe('fence file optionalIntent: an argument a call may leave out that names the target', () => {
  // The tracker files an issue in `repo`, or in the account's default repository when a call leaves it out.
  const made: unknown[] = [];
  const callTool = async (p: { arguments?: Record<string, unknown> }) => {
    made.push(p.arguments);
    return { content: [], structuredContent: { number: made.length } };
  };
  const properties = { title: { type: 'string' }, repo: { type: 'string' } };
  const tools = [{ name: 'create_issue', inputSchema: { type: 'object' as const, properties, required: ['title'] } }];
  const adapterWith = (tool: Record<string, unknown>) => {
    const config = parseFenceConfig({
      name: 'tracker',
      ledger: './unused.db',
      tools: { create_issue: { kind: 'create', ...tool } },
    });
    return createFenceAdapter({ config, client: { callTool }, tools });
  };

  it('"Fix login" in the default repository and in acme/api are two issues; a repeat that leaves repo out is the first', async () => {
    const adapter = adapterWith({ intent: ['title', 'repo'], optionalIntent: ['repo'] });
    const runner = createRunner({ ledger: createMemoryLedger() });
    const call = (params: Record<string, unknown>) => runner.run(adapter, 'create_issue', { params });
    const first = await call({ title: 'Fix login' });
    const other = await call({ title: 'Fix login', repo: 'acme/api' });
    const again = await call({ title: 'Fix login' });
    expect(other.businessOperationId).not.toBe(first.businessOperationId);
    expect(again.businessOperationId).toBe(first.businessOperationId);
    expect(made).toEqual([{ title: 'Fix login' }, { title: 'Fix login', repo: 'acme/api' }]);
    // refused at start, named by the fence file's path: it must be one of the intent arguments, a top-level one
    expect(() => adapterWith({ intent: ['title'], optionalIntent: ['repo'] })).toThrow(
      /tools\.create_issue\.optionalIntent\[0\]: expected one of the intent fields/,
    );
  });
});
