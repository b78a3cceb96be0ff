// Two fences of one `name` in front of two upstream accounts, on one ledger: the same call through each is its own
// operation when each fence file says its `account`, so each upstream gets its call.
import { createMemoryLedger, createRunner } from '@retrysafe/core';
import { expect, it } from 'vitest';
import { createFenceAdapter, FenceConfigError, parseFenceConfig } from '../src/index.js';

const tools = [{ name: 'create', inputSchema: { type: 'object' as const } }];

function upstream() {
  const calls: unknown[] = [];
  const client = {
    async callTool(p: { name: string; arguments?: Record<string, unknown> }) {
      calls.push(p.arguments);
      return { content: [], structuredContent: { id: `it_${calls.length}` } };
    },
  };
  return { client, calls };
}

const fence = (account: string | undefined, up: ReturnType<typeof upstream>) =>
  createFenceAdapter({
    config: parseFenceConfig({
      name: 'things',
      ...(account !== undefined ? { account } : {}),
      ledger: './unused.db',
      tools: { create: { kind: 'create', intent: ['title'] } },
    }),
    client: up.client,
    tools,
  });

it('fences of one name with accounts a and b on one ledger: the same call reaches each upstream once', async () => {
  const ups = [upstream(), upstream()];
  const runner = createRunner({ ledger: createMemoryLedger() });
  const params = { title: 'Q3 report' };
  const a = await runner.run(fence('tenant-a', ups[0]!), 'create', { params });
  const b = await runner.run(fence('tenant-b', ups[1]!), 'create', { params });
  expect([a, b]).toMatchObject([
    { status: 'done', adopted: false },
    { status: 'done', adopted: false },
  ]);
  expect(ups.map((u) => u.calls.length)).toEqual([1, 1]);
});

it('a fence file’s account must be a non-empty string', () => {
  expect(() => fence('', upstream())).toThrow(FenceConfigError);
});
