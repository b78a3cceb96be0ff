/**
 * The fence's lookup after a lost answer, in process: an upstream whose create tool commits and then never answers
 * (the fence's call times out), reconciled through its list tool. A "not found" the runner may trust sends the call
 * again, so the lookup must find what is there: by the arguments as sent (the fence's key included), by object and
 * array values, and it cannot tell when the call has no value to ask or match by.
 */
import { createMemoryLedger, createRunner } from '@retrysafe/core';
import { describe, expect, it } from 'vitest';
import { createFenceAdapter, FenceConfigError, parseFenceConfig } from '../src/index.js';

const policy = { lookupWindowMs: 300, baseMs: 5, capMs: 10, maxAttempts: 3 };
const tools = [
  { name: 'create', inputSchema: { type: 'object' as const } },
  { name: 'list', inputSchema: { type: 'object' as const } },
];

/** An upstream without an idempotency guard whose create answer is always lost after it committed; its list is a
 * search by the words of `q`. */
function losingUpstream(pageSize = Infinity, items: Record<string, unknown>[] = [], newestFirst = false) {
  let lookups = 0;
  const client = {
    async callTool(p: { name: string; arguments?: Record<string, unknown> }) {
      // A search: the items whose JSON holds every word of `q` (all items without one).
      const words = String(p.arguments?.q ?? '')
        .split(' ')
        .filter(Boolean);
      const found = items.filter((i) => words.every((w) => JSON.stringify(i).includes(w)));
      // A list tool that pages: the oldest items first (or the newest), and a cursor while more follow.
      const next = found.length > pageSize ? { next: 'page-2' } : {};
      const listed = newestFirst ? [...found].reverse() : found;
      if (p.name === 'list') {
        lookups++;
        return { content: [], structuredContent: { items: listed.slice(0, pageSize), ...next } };
      }
      items.push({ id: `it_${items.length + 1}`, ...structuredClone(p.arguments) }); // as it arrives: a copy
      throw Object.assign(new Error('Request timed out'), { code: -32001 });
    },
  };
  return { client, items, lookups: () => lookups };
}
type Upstream = Pick<ReturnType<typeof losingUpstream>, 'client' | 'items'>;

/** Runs one call of `create` through a fence whose tool is `tool` (its lookup declared authoritative). */
async function run(tool: Record<string, unknown>, params: Record<string, unknown>, upstream: Upstream) {
  const lookup = { tool: 'list', items: 'items', consistencyDelay: 0, lateApplyBound: '1ms' };
  const config = parseFenceConfig({
    name: 'things',
    ledger: './unused.db',
    timeoutMs: 100,
    policy,
    tools: {
      create: { kind: 'create', intent: ['title'], ...tool, lookup: { ...lookup, ...(tool.lookup as object) } },
    },
  });
  const adapter = createFenceAdapter({ config, client: upstream.client, tools });
  return createRunner({ ledger: createMemoryLedger(), policy }).run(adapter, 'create', { params });
}

/** `run`, told as its status and the number of items of its title upstream. */
async function runOnce(
  tool: Record<string, unknown>,
  params: Record<string, unknown>,
  upstream: Upstream = losingUpstream(),
) {
  const result = await run(tool, params, upstream);
  return { status: result.status, effects: upstream.items.filter((i) => i.title === params.title).length };
}

describe('the lookup after a lost answer never reads "not found" for an item that is there', () => {
  it('a match argument the call left out: the lookup cannot tell — one effect and a handoff, never a re-send', async () => {
    const r = await runOnce({ lookup: { match: { title: 'title', owner: 'owner' } } }, { title: 'Q3 report' });
    expect(r).toEqual({ status: 'handed-off', effects: 1 });
  });

  it("a match on the fence's key argument reads the key that was sent: found, one effect", async () => {
    const tool = {
      key: { argument: 'request_id', semantics: 'none' },
      lookup: { match: { request_id: 'request_id' } },
    };
    expect(await runOnce(tool, { title: 'Q3 report' })).toEqual({ status: 'done', effects: 1 });
  });

  it('a lookup argument made from an argument the call left out: the lookup cannot tell — one effect and a handoff', async () => {
    const lookup = { arguments: { q: 'owner {{owner}} {{title}}' }, match: { title: 'title' } };
    expect(await runOnce({ lookup }, { title: 'Q3' })).toEqual({ status: 'handed-off', effects: 1 });
    expect(await runOnce({ lookup }, { title: 'Q3', owner: 'ann' })).toEqual({ status: 'done', effects: 1 });
  });

  it('a lookup argument made from an argument whose name is not a word (task-title, straße): asked by its value, found, one effect', async () => {
    for (const name of ['task-title', 'straße']) {
      const lookup = { arguments: { q: `{{${name}}}` }, match: { [name]: name } };
      const upstream = losingUpstream();
      const r = await runOnce({ intent: [name], lookup }, { [name]: 'Q3 report' }, upstream);
      expect({ status: r.status, effects: upstream.items.length }).toEqual({ status: 'done', effects: 1 });
    }
  });

  it('a lookup argument that puts an object inside text cannot ask for it: the lookup cannot tell — one effect and a handoff', async () => {
    // "Q3 [object Object]" finds nothing: a "not found" from that search would send the call again.
    const lookup = { arguments: { q: '{{title}} {{owner}}' }, match: { title: 'title', owner: 'owner' } };
    const tool = { intent: ['title', 'owner'], lookup };
    expect(await runOnce(tool, { title: 'Q3', owner: { name: 'ann' } })).toEqual({ status: 'handed-off', effects: 1 });
  });

  it('a match on an array argument compares its items: found, one effect', async () => {
    const r = await runOnce(
      { lookup: { match: { title: 'title', labels: 'labels' } } },
      {
        title: 'Q3 report',
        labels: ['finance', 'q3'],
      },
    );
    expect(r).toEqual({ status: 'done', effects: 1 });
  });

  it('a miss on an answer that says more items follow (the declared `more`) cannot tell: one effect and a handoff, never a re-send', async () => {
    const lookup = { match: { title: 'title' }, more: 'next' };
    const paged = () => losingUpstream(1, [{ id: 'it_0', title: 'an older item' }]);
    expect(await runOnce({ lookup }, { title: 'Q3 report' }, paged())).toEqual({ status: 'handed-off', effects: 1 });
    // The whole list in one answer (no cursor): the item is found there.
    const whole = losingUpstream(10, [{ id: 'it_0', title: 'an older item' }]);
    expect(await runOnce({ lookup }, { title: 'Q3 report' }, whole)).toEqual({ status: 'done', effects: 1 });
  });

  it('a match on an answer that says more items follow cannot tell either: a second item of this call may be on the page not read', async () => {
    const lookup = { match: { title: 'title' }, more: 'next' };
    // Newest first, one a page: this call's item on the page read, an older item after it.
    const paged = losingUpstream(1, [{ id: 'it_0', title: 'an older item' }], true);
    expect(await runOnce({ lookup }, { title: 'Q3 report' }, paged)).toEqual({ status: 'handed-off', effects: 1 });
  });
});

describe("the lookup finds this operation's item: its match names every intent argument, or the fence's key", () => {
  // Ann's report is another operation than Bob's; her call is lost before it reaches the upstream, and Bob's is there.
  const bobs = { id: 'it_0', title: 'Q3 report', owner: 'bob' };
  const lostBeforeSent = () => ({
    items: [bobs] as Record<string, unknown>[],
    client: {
      async callTool(p: { name: string }) {
        if (p.name === 'list') return { content: [], structuredContent: { items: [bobs] } };
        throw Object.assign(new Error('Request timed out'), { code: -32001 });
      },
    },
  });
  const anns = { title: 'Q3 report', owner: 'ann' };

  it("a match that leaves out an intent argument is refused: it would adopt another operation's item as done, and this one would never be made", async () => {
    const tool = { intent: ['title', 'owner'], lookup: { match: { title: 'title' } } };
    await expect(runOnce(tool, anns, lostBeforeSent())).rejects.toThrow(FenceConfigError);
    await expect(runOnce(tool, anns, lostBeforeSent())).rejects.toThrow(/match.*owner/);
  });

  it('a match on every intent argument does not take the other item: nothing found, a handoff, never "done"', async () => {
    const tool = { intent: ['title', 'owner'], lookup: { match: { title: 'title', owner: 'owner' } } };
    // Ann's report was never made (the one item is Bob's): before, the runner answered "done" with Bob's.
    expect((await runOnce(tool, anns, lostBeforeSent())).status).toBe('handed-off');
  });
});

describe('the lookup never adopts one of two items of this operation', () => {
  it('an earlier copy of the same call is listed beside this one: cannot tell — a handoff naming the duplicate, never done', async () => {
    const tool = {
      key: { argument: 'request_id', semantics: 'none' },
      lookup: { match: { request_id: 'request_id' } },
    };
    // The upstream already holds the item this call makes (the same request_id): after the lost answer, two match.
    const upstream = losingUpstream();
    const first = await runOnce(tool, { title: 'Q3 report' }, upstream);
    expect(first).toEqual({ status: 'done', effects: 1 });
    upstream.items.push({ ...structuredClone(upstream.items[0]!), id: 'it_copy' });
    expect(await runOnce(tool, { title: 'Q3 report' }, upstream)).toMatchObject({ status: 'handed-off' });
  });

  it('two items of this call: handed off after that one lookup, naming both by resultRef (or their place in the list)', async () => {
    // A duplicate already made stays made: looking again until the window closes only delays the person.
    const key = { argument: 'request_id', semantics: 'none' };
    for (const [resultRef, named] of [
      ['id', ['it_1', 'it_copy']],
      [undefined, ['items[0]', 'items[1]']],
    ] as const) {
      const upstream = losingUpstream();
      const tool = { key, lookup: { match: { request_id: 'request_id' } }, ...(resultRef ? { resultRef } : {}) };
      await runOnce(tool, { title: 'Q3 report' }, upstream);
      upstream.items.push({ ...structuredClone(upstream.items[0]!), id: 'it_copy' });
      const before = upstream.lookups();
      const r = await run(tool, { title: 'Q3 report' }, upstream);
      expect(upstream.lookups() - before).toBe(1);
      expect(r).toMatchObject({ status: 'handed-off', packet: { reason: 'unknown-no-safe-resend' } });
      for (const n of named) expect(r.status === 'handed-off' && r.packet.explanation).toContain(n);
    }
  });
});
