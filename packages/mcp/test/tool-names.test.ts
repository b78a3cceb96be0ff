import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { AdapterV1 } from '@retrysafe/contract';
import { createMemoryLedger, createRunner } from '@retrysafe/core';
import { agentTools, safeToolName } from '@retrysafe/core/agent';
import {
  asyncExportsCreate,
  clientTokenInstancesRun,
  createHttpAdapter,
  etagDocumentsUpdate,
  ietfOrdersCreate,
} from '@retrysafe/http';
import { createHubSpotAdapter } from '@retrysafe/hubspot';
import { createMsGraphAdapter } from '@retrysafe/msgraph';
import { createSandboxAdapter, createSandboxProvider, REPLAYING_BEHAVIOUR } from '@retrysafe/sandbox';
import { createSlackAdapter } from '@retrysafe/slack';
import { createStripeAdapter } from '@retrysafe/stripe';
import { describe, expect, it } from 'vitest';
import { createFenceAdapter, createRetrysafeMcpServer, parseFenceConfig } from '../src/index.js';

/** Function/tool names every big model API and MCP client accepts. */
const SAFE_TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

// Every operation the project ships, as an agent would be offered it.
function shipped(): AdapterV1[] {
  return [
    createStripeAdapter({ apiKey: 'sk_test_names', baseUrl: 'http://127.0.0.1:9' }),
    createHubSpotAdapter({ accessToken: 'pat-names', baseUrl: 'http://127.0.0.1:9' } as Parameters<
      typeof createHubSpotAdapter
    >[0]),
    createMsGraphAdapter({ accessToken: () => 'tok', baseUrl: 'http://127.0.0.1:9/' } as Parameters<
      typeof createMsGraphAdapter
    >[0]),
    createSlackAdapter({ token: 'xoxb-names', baseUrl: 'http://127.0.0.1:9' }),
    createHttpAdapter({
      provider: 'acme',
      baseUrl: 'http://127.0.0.1:9',
      timeoutMs: 1000,
      operations: {
        'orders.create': ietfOrdersCreate('acme'),
        'exports.create': asyncExportsCreate('acme'),
        'documents.update': etagDocumentsUpdate('acme'),
        'instances.run': clientTokenInstancesRun('acme'),
      },
    }),
    createSandboxAdapter({
      provider: createSandboxProvider(REPLAYING_BEHAVIOUR),
    }),
  ];
}

describe('one safe tool naming for MCP and the AI SDK (issue 16)', () => {
  it('every shipped operation’s tool name matches ^[a-zA-Z0-9_-]{1,64}$, unique, and MCP lists exactly those names', async () => {
    const adapters = shipped();
    const tools = agentTools(adapters);
    const count = adapters.reduce((n, a) => n + Object.keys(a.operations).length, 0);
    expect(tools).toHaveLength(count);
    for (const t of tools) {
      expect(t.name, t.qualifiedName).toMatch(SAFE_TOOL_NAME);
      expect(t.name).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
      // the description shows the normalisation rules and the way back after a timeout
      expect(t.description).toMatch(/Intent fields are compared (after normalisation|exactly)/);
      expect(t.description).toMatch(/businessOperationId/);
    }
    expect(new Set(tools.map((t) => t.name)).size).toBe(tools.length);
    const server = createRetrysafeMcpServer({
      runner: createRunner({ ledger: createMemoryLedger() }),
      ledger: createMemoryLedger(),
      adapters,
    });
    const [a, b] = InMemoryTransport.createLinkedPair();
    const client = new Client({ name: 'names', version: '1.0.0' });
    await Promise.all([server.connect(a), client.connect(b)]);
    const listed = (await client.listTools()).tools.map((t) => t.name).filter((n) => !n.startsWith('retrysafe_'));
    expect(listed.sort()).toEqual(tools.map((t) => t.name).sort());
    await client.close();
  });

  it('every shipped provider operation normalises only declared fields; each normalisation cites a source other than shared/providers.md', () => {
    for (const a of shipped().filter((x) => x.provider !== 'sandbox')) {
      for (const spec of Object.values(a.operations)) {
        const bo = spec.card.businessOperationId;
        for (const n of bo.normalize ?? []) {
          expect(n.source).not.toMatch(/providers\.md/);
          expect(bo.intentFields.some((f) => n.field === f || n.field.startsWith(`${f}.`))).toBe(true);
        }
      }
    }
  });

  it("an operation whose tool name is one of the server's own lookups is refused at start, never listed twice", () => {
    // An adapter of provider "retrysafe" with an operation "status" (a fence's, for brevity).
    const adapter = createFenceAdapter({
      config: parseFenceConfig({
        name: 'retrysafe',
        ledger: 'x.db',
        tools: { status: { kind: 'set', intent: ['id'] } },
      }),
      client: { callTool: async () => ({}) },
      tools: [{ name: 'status', inputSchema: { type: 'object' } }],
    });
    expect(agentTools([adapter]).map((t) => t.name)).toEqual(['retrysafe_status']);
    const ledger = createMemoryLedger();
    expect(() => createRetrysafeMcpServer({ runner: createRunner({ ledger }), ledger, adapters: [adapter] })).toThrow(
      /retrysafe_status/,
    );
  });

  it('a name past 64 characters is cut and keeps a digest, so two long names stay apart', () => {
    const long = 'x'.repeat(80);
    const a = safeToolName('acme', `${long}.a`);
    const b = safeToolName('acme', `${long}.b`);
    expect(a).toMatch(SAFE_TOOL_NAME);
    expect(a).toHaveLength(64);
    expect(a).not.toBe(b);
  });
});
