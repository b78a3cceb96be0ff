/**
 * A process that stops waits for the tool calls under way, then closes its upstream and ledger. A call that arrives in
 * that grace (a stdio host still writes after our SIGTERM; an HTTP host's open connection) is refused at once, nothing
 * claimed or sent, rather than run against a ledger about to close and left in flight.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { createMemoryLedger, createRunner } from '@retrysafe/core';
import { createStripeAdapter } from '@retrysafe/stripe';
import { expect, it } from 'vitest';
import { createCoalescer, createRetrysafeMcpServer, serveHttp } from '../src/index.js';
import { clientOf } from './fence-helpers.js';

it('a tool call that arrives once the process stops is a protocol error at once: nothing claimed, nothing sent', async () => {
  const ledger = createMemoryLedger();
  const coalescer = createCoalescer(ledger);
  const adapter = createStripeAdapter({ apiKey: 'sk_test_stopping', baseUrl: 'http://127.0.0.1:9', timeoutMs: 500 });
  const server = createRetrysafeMcpServer({ runner: createRunner({ ledger }), ledger, adapters: [adapter], coalescer });
  const client = await clientOf(server);
  await coalescer.settled(0); // the process stops
  const args = { customerRef: 'late-1', email: 'late@example.test' };
  const refused = await client.callTool({ name: 'stripe_customers_create', arguments: args }).catch((e: unknown) => e);
  expect(refused).toMatchObject({ code: -32603, message: expect.stringContaining('stopping') });
  expect(await ledger.list()).toEqual([]);
});

it('--http closed with a call still running past the grace: the close ends, its connection dropped, as a crash would', async () => {
  let called: () => void = () => {};
  const running = new Promise<void>((resolve) => (called = resolve));
  const make = () => {
    const server = new Server({ name: 'slow', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(CallToolRequestSchema, () => {
      called();
      return new Promise<never>(() => {}); // never ends
    });
    return server;
  };
  const http = await serveHttp(make);
  const client = new Client({ name: 'host', version: '1.0.0' });
  const requestInit = { headers: { authorization: `Bearer ${http.token}` } };
  await client.connect(new StreamableHTTPClientTransport(new URL(http.url), { requestInit }));
  const call = client.callTool({ name: 'slow', arguments: {} }).catch((e: Error) => e);
  await running;
  await http.close(); // else the process that stops never exits
  expect(await call).toBeInstanceOf(Error);
});
