/**
 * A process that stops waits for the tool calls under way, then closes its upstream and ledger. A call that arrives in
 * that grace (a stdio host still writes after our SIGTERM; an HTTP host's open connection) is refused at once, nothing
 * claimed or sent, rather than run against a ledger about to close and left in flight.
 */
import { createMemoryLedger, createRunner } from '@retrysafe/core';
import { createStripeAdapter } from '@retrysafe/stripe';
import { expect, it } from 'vitest';
import { createCoalescer, createRetrysafeMcpServer } from '../src/index.js';
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
