/**
 * Whether a lookup miss proves absence is the card's rule (the contract's notFoundIsAuthoritative, the runner's
 * too): the last dispatch + lookup.lateApplyBound + lookup.consistencyDelay, never while one is unknown. A direct
 * caller of doLookup is told "not-found" only when it is proven.
 */
import { asBusinessOperationId } from '@retrysafe/contract';
import { lookupContext } from '@retrysafe/testkit/conformance';
import { describe, expect, it } from 'vitest';
import { createFenceAdapter, parseFenceConfig } from '../src/index.js';

const tools = [
  { name: 'create', inputSchema: { type: 'object' as const } },
  { name: 'list', inputSchema: { type: 'object' as const } },
];
const client = { callTool: async () => ({ content: [], structuredContent: { items: [] } }) };
const MIN = 60_000;

function missAt(lookup: Record<string, unknown>, ago: number) {
  const config = parseFenceConfig({
    name: 'things',
    ledger: './unused.db',
    timeoutMs: 100,
    tools: {
      create: {
        kind: 'create',
        intent: ['title'],
        lookup: { tool: 'list', items: 'items', match: { title: 'title' }, ...lookup },
      },
    },
  });
  const adapter = createFenceAdapter({ config, client, tools });
  const now = Date.now();
  const id = asBusinessOperationId('never-sent');
  const ctx = lookupContext(adapter, 'create', id, { title: 'Q3' }, { firstDispatchedAt: now - ago, now });
  return adapter.doLookup('create', ctx);
}

describe("fence lookup miss: judged by the card's bounds", () => {
  it('no late-apply bound declared: a miss a day after the call is cannot-tell', async () => {
    expect(await missAt({ consistencyDelay: 0 }, 1440 * MIN)).toMatchObject({ kind: 'cannot-tell' });
  });

  it('a 1 min late-apply bound: cannot-tell (with the wait) inside it, not-found past it', async () => {
    const bounded = { consistencyDelay: 0, lateApplyBound: '1m' };
    expect(await missAt(bounded, 20_000)).toMatchObject({ kind: 'cannot-tell', retryAfterMs: 40_000 });
    expect(await missAt(bounded, 2 * MIN)).toMatchObject({ kind: 'not-found' });
  });
});
