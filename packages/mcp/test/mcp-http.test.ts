import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createMemoryLedger, createRunner } from '@retrysafe/core';
import { createStripeAdapter } from '@retrysafe/stripe';
import { startStripeSandbox } from '@retrysafe/stripe/sandbox';
import { describe, expect, it } from 'vitest';
import { createRetrysafeMcpServer, serveHttp } from '../src/index.js';

describe('retrysafe MCP server over streamable HTTP', () => {
  it('binds to loopback only', async () => {
    await expect(serveHttp(() => { throw new Error('unused'); }, { host: '0.0.0.0' })).rejects.toThrow(/loopback only/);
  });

  it('serves the operation tools on 127.0.0.1: a repeated call is the same charge', async () => {
    const sandbox = await startStripeSandbox({ port: 0 });
    const ledger = createMemoryLedger();
    const runner = createRunner({ ledger });
    const adapter = createStripeAdapter({ apiKey: 'sk_test_mcp_http', baseUrl: sandbox.url, timeoutMs: 2000 });
    const http = await serveHttp(() => createRetrysafeMcpServer({ runner, ledger, adapters: [adapter], operations: ['stripe.customers.create'] }));
    const client = new Client({ name: 'http-agent', version: '1.0.0' });
    try {
      expect(http.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
      await client.connect(new StreamableHTTPClientTransport(new URL(http.url)));
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual(['retrysafe_handoffs', 'retrysafe_status', 'stripe_customers_create']);
      const args = { customerRef: 'user-77', email: 'u77@example.test' };
      const a = (await client.callTool({ name: 'stripe_customers_create', arguments: args })).structuredContent as { status: string; providerRef: string; adopted: boolean };
      const b = (await client.callTool({ name: 'stripe.customers.create', arguments: { email: 'u77@example.test', customerRef: 'user-77' } })).structuredContent as { status: string; providerRef: string; adopted: boolean };
      expect(a).toMatchObject({ status: 'done', adopted: false });
      expect(b).toMatchObject({ status: 'done', adopted: true, providerRef: a.providerRef });
      expect(sandbox.count('customer')).toBe(1);
    } finally {
      await client.close();
      await http.close();
      await sandbox.close();
    }
  });
});
