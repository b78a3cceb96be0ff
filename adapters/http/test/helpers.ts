import net from 'node:net';
import type { HandoffPacket, LookupContext } from '@retrysafe/contract';
import { callbackHandoffSink, createMemoryLedger, createRunner, createVirtualClock } from '@retrysafe/core';
import { executeContext, lookupContext, operationIdFor } from '@retrysafe/testkit/conformance';
import { afterEach, beforeEach, expect } from 'vitest';
import { ordersCreateCard } from '../src/http-cards.js';
import type { HttpOperationDeclaration } from '../src/http-declaration.js';
import { createHttpAdapter, type HttpAdapter, type HttpOperationSpec, ietfOrdersCreate } from '../src/index.js';

/** A runner on a memory ledger and a virtual clock, no jitter; the packets it hands off, in order. */
export function testRunner() {
  const packets: HandoffPacket[] = [];
  const ledger = createMemoryLedger();
  const runner = createRunner({
    ledger,
    clock: createVirtualClock(),
    random: () => 0.5,
    handoff: callbackHandoffSink((p) => void packets.push(p)),
  });
  return { runner, packets, ledger };
}

/**
 * For each test of the calling describe: a fresh sandbox and the HTTP adapter of one operation pointed
 * at it, both closed after the test (the adapter first).
 */
export function sandboxPerTest<
  S extends { readonly url: string; readonly requests: readonly unknown[]; close(): Promise<void> },
>(start: () => Promise<S>, provider: string, operation: string, spec: (provider: string) => HttpOperationSpec) {
  const env = {
    sb: undefined as unknown as S,
    adapter: undefined as unknown as HttpAdapter,
    execute: (params: Record<string, unknown>, attempt = 1) => executeOn(env.adapter, operation, params, attempt),
    lookup: (params: Record<string, unknown>, overrides: Partial<LookupContext> = {}) =>
      lookupOn(env.adapter, operation, params, overrides),
    /**
     * Params the declared schema refuses are rejected (validation) before anything reaches the sandbox; `loose`
     * then runs with an adapter whose schema lets any object through, so the provider's own validation answers.
     */
    expectRefused: async (params: Record<string, unknown>, loose: (adapter: HttpAdapter) => Promise<void>) => {
      expect(await env.execute(params)).toMatchObject({
        kind: 'rejected',
        reason: 'validation',
        code: 'retrysafe_invalid_params',
      });
      expect(env.sb.requests).toHaveLength(0);
      await withAdapter(env.sb.url, operation, { ...spec(provider), paramsSchema: { type: 'object' } }, loose);
    },
  };
  beforeEach(async () => {
    env.sb = await start();
    env.adapter = adapterAt(env.sb.url, operation, spec(provider));
  });
  afterEach(async () => {
    await env.adapter.close();
    await env.sb.close();
  });
  return env;
}

/** An adapter of one operation at `url`, for the provider its card names. */
export const adapterAt = (url: string, operation: string, spec: HttpOperationSpec, timeoutMs = 2000): HttpAdapter =>
  createHttpAdapter({ provider: spec.card.provider, baseUrl: url, timeoutMs, operations: { [operation]: spec } });

/** Runs `use` with an adapter of one operation at `url`, closed after. */
export async function withAdapter(
  url: string,
  operation: string,
  spec: HttpOperationSpec,
  use: (adapter: HttpAdapter) => Promise<void>,
): Promise<void> {
  const adapter = adapterAt(url, operation, spec);
  try {
    await use(adapter);
  } finally {
    await adapter.close();
  }
}

/** Test params: the defaults with `over` on top. */
export const paramsWith =
  (defaults: Record<string, unknown>) =>
  (over: Record<string, unknown> = {}): Record<string, unknown> => ({ ...defaults, ...over });

/** A mapped rejection as a matcher: reason, HTTP status and, when given, the provider's code. */
export const rejected = (reason: string, status: number, code?: string) => ({
  kind: 'rejected',
  reason,
  status,
  ...(code === undefined ? {} : { code }),
});

/**
 * Before the first request a lookup finds nothing (cannot-tell: the pattern cards bound no late apply, so a miss
 * proves nothing); after it, the request's success with `providerRef`.
 */
export async function expectFoundOnlyAfterExecute(
  env: ReturnType<typeof sandboxPerTest>,
  params: Record<string, unknown>,
  providerRef: string,
): Promise<void> {
  expect(await env.lookup(params)).toMatchObject({ kind: 'cannot-tell' });
  await env.execute(params);
  expect(await env.lookup(params)).toMatchObject({ kind: 'found', outcome: { kind: 'succeeded', providerRef } });
}

/** The operation executed with the context the runner would give this attempt. */
export const executeOn = (adapter: HttpAdapter, operation: string, params: Record<string, unknown>, attempt = 1) =>
  adapter.doExecute(
    operation,
    params,
    executeContext(adapter, operation, operationIdFor(adapter, operation, params), { attempt }),
  );

/** The operation looked up with the context the runner would give it. */
export const lookupOn = (
  adapter: HttpAdapter,
  operation: string,
  params: Record<string, unknown>,
  over: Partial<LookupContext> = {},
) =>
  adapter.doLookup(
    operation,
    lookupContext(adapter, operation, operationIdFor(adapter, operation, params), params, over),
  );

/** A loopback TCP server that accepts and reads but never answers (client timeout) or resets after reading (reset). */
export async function startSilentServer(
  mode: 'hang' | 'reset',
): Promise<{ url: string; received: () => number; close: () => Promise<void> }> {
  const sockets = new Set<net.Socket>();
  let received = 0;
  const server = net.createServer((s) => {
    sockets.add(s);
    s.on('data', () => {
      received++;
      if (mode === 'reset') s.resetAndDestroy();
    });
    s.on('error', () => {});
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as net.AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    received: () => received,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

/** A port nothing listens on. */
export async function closedPort(): Promise<string> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise<void>((r) => server.close(() => r()));
  return `http://127.0.0.1:${port}`;
}

/** The IETF orders operation pointed at the retrysafe sandbox's `/records` (its body and its ref), with `card` on top. */
export function sandboxRecords(card: Partial<HttpOperationSpec['card']>, spec: Partial<HttpOperationSpec> = {}) {
  const base = ietfOrdersCreate('acme');
  return {
    ...base,
    path: '/records',
    body: (p: Record<string, unknown>) => ({ ref: p.orderRef, customer: p.customer, sku: p.sku, quantity: p.quantity }),
    card: { ...base.card, ...card },
    refPath: 'record.id',
    ...spec,
  } as HttpOperationSpec;
}

/** The IETF-key sandbox's orders.create, declared with a list lookup of `lookupPath` that picks the item by `where`. */
export const searchedOrdersCreate = (
  description: string,
  where: Record<string, string>,
  lookupPath: string,
): HttpOperationDeclaration => ({
  description,
  method: 'POST',
  path: '/orders',
  key: { travels: 'header', encoding: 'sf-string', name: 'Idempotency-Key', rule: { maxLength: 64 } },
  card: ordersCreateCard('acme'),
  lookup: { method: 'search', path: lookupPath, match: { items: 'data', where } },
  body: { customer: '{customer}', sku: '{sku}', quantity: '{quantity}', reference: '{orderRef}' },
  refPath: 'id',
  paramsSchema: { type: 'object', properties: { sku: { type: 'string' }, quantity: { type: 'integer' } } },
  errors: {
    codePath: 'type',
    rules: [
      { status: 400, outcome: 'rejected', reason: 'validation' },
      { status: 422, outcome: 'rejected', reason: 'conflict' },
    ],
  },
});
