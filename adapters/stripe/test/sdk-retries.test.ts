import { AdapterConfigurationError, asBusinessOperationId, UnknownOperationError } from '@retrysafe/contract';
import { executeContext, operationIdFor } from '@retrysafe/testkit/conformance';
import Stripe from 'stripe';
import { afterEach, describe, expect, it } from 'vitest';
import { createGuardedHttpClient, createStripeAdapter } from '../src/index.js';
import { startStripeSandbox } from '../src/sandbox/index.js';
import { API_KEY, startScriptedServer } from './helpers.js';

// One retrying layer: the runner. These tests count requests at the server to show that the adapter
// sends exactly one per attempt, and that the SDK left to itself would have sent more.

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (closers.length) await closers.pop()!();
});

function loopback(url: string) {
  const u = new URL(url);
  return { host: u.hostname, port: u.port, protocol: 'http' as const };
}

describe('negative controls: what stripe-node does on its own', () => {
  it('with maxNetworkRetries left at the SDK default (2), a stored 500 is sent 3 times under one key', async () => {
    const sandbox = await startStripeSandbox();
    closers.push(() => sandbox.close());
    sandbox.failNext('server-error');
    const client = new Stripe(API_KEY, { ...loopback(sandbox.url) });
    expect(client.getMaxNetworkRetries()).toBe(2);
    await expect(
      client.customers.create({ metadata: { a: 'b' } }, { idempotencyKey: 'k-default' }),
    ).rejects.toMatchObject({ statusCode: 500 });
    expect(sandbox.requestCount({ method: 'POST' })).toBe(3);
    expect(sandbox.requests().map((r) => r.result)).toEqual(['executed', 'replayed', 'replayed']);
  });

  it('with no key given, the SDK invents its own stripe-node-retry-<uuid> key, even with maxNetworkRetries 0', async () => {
    const sandbox = await startStripeSandbox();
    closers.push(() => sandbox.close());
    const client = new Stripe(API_KEY, { ...loopback(sandbox.url), maxNetworkRetries: 0 });
    await client.customers.create({});
    expect(sandbox.requests()[0]?.idempotencyKey).toMatch(/^stripe-node-retry-[0-9a-f-]{36}$/);
  });

  it('with maxNetworkRetries 0, a connection reset is still re-sent once by the SDK (RequestSender._shouldRetry)', async () => {
    const server = await startScriptedServer((req) => req.socket.destroy());
    closers.push(() => server.close());
    const client = new Stripe(API_KEY, { ...loopback(server.url), maxNetworkRetries: 0 });
    await expect(client.customers.create({}, { idempotencyKey: 'k-reset' })).rejects.toMatchObject({
      type: 'StripeConnectionError',
    });
    expect(server.count()).toBe(2);
  });
});

describe('the adapter owns both retry layers', () => {
  it('a stored 500 is one request per attempt', async () => {
    const sandbox = await startStripeSandbox();
    closers.push(() => sandbox.close());
    sandbox.failNext('server-error');
    const adapter = createStripeAdapter({ apiKey: API_KEY, baseUrl: sandbox.url });
    const params = { customerRef: 'u-1' };
    const outcome = await adapter.doExecute(
      'customers.create',
      params,
      executeContext(adapter, 'customers.create', operationIdFor(adapter, 'customers.create', params)),
    );
    expect(outcome).toMatchObject({ kind: 'unknown', cause: 'server-error' });
    expect(sandbox.requestCount({ method: 'POST' })).toBe(1);
  });

  it('a connection reset is one request; the guard keeps the SDK from re-sending it', async () => {
    const server = await startScriptedServer((req) => req.socket.destroy());
    closers.push(() => server.close());
    const adapter = createStripeAdapter({ apiKey: API_KEY, baseUrl: server.url });
    const outcome = await adapter.doExecute(
      'customers.create',
      { customerRef: 'u-2' },
      executeContext(adapter, 'customers.create', asBusinessOperationId('op-reset')),
    );
    expect(outcome).toMatchObject({ kind: 'unknown', cause: 'connection-reset' });
    expect(server.count()).toBe(1);
  });
});

describe('a client you bring', () => {
  it('is refused with AdapterConfigurationError when its SDK retries are on (default 2)', () => {
    const client = new Stripe(API_KEY, { httpClient: createGuardedHttpClient() });
    expect(() => createStripeAdapter({ client })).toThrow(AdapterConfigurationError);
    expect(() => createStripeAdapter({ client })).toThrow(/maxNetworkRetries 2/);
  });

  it('is refused when it would still make the closed-connection retry (no guarded httpClient)', () => {
    const client = new Stripe(API_KEY, { maxNetworkRetries: 0 });
    expect(() => createStripeAdapter({ client })).toThrow(/ECONNRESET\/EPIPE/);
  });

  it('is used when built with maxNetworkRetries 0 and the guarded httpClient: one request on a reset', async () => {
    const server = await startScriptedServer((req) => req.socket.destroy());
    closers.push(() => server.close());
    const client = new Stripe(API_KEY, {
      ...loopback(server.url),
      maxNetworkRetries: 0,
      httpClient: createGuardedHttpClient(),
    });
    const adapter = createStripeAdapter({ client });
    const outcome = await adapter.doExecute(
      'customers.create',
      { customerRef: 'u-3' },
      executeContext(adapter, 'customers.create', asBusinessOperationId('op-own-client')),
    );
    expect(outcome.kind).toBe('unknown');
    expect(server.count()).toBe(1);
  });
});

describe('configuration errors are typed', () => {
  it('missing apiKey, bad baseUrl, bad timeout, unknown operation', () => {
    expect(() => createStripeAdapter({})).toThrow(AdapterConfigurationError);
    expect(() => createStripeAdapter({ apiKey: API_KEY, baseUrl: 'not a url' })).toThrow(AdapterConfigurationError);
    expect(() => createStripeAdapter({ apiKey: API_KEY, baseUrl: 'ftp://127.0.0.1:1' })).toThrow(
      AdapterConfigurationError,
    );
    expect(() => createStripeAdapter({ apiKey: API_KEY, baseUrl: 'http://127.0.0.1:1/v1' })).toThrow(
      AdapterConfigurationError,
    );
    expect(() => createStripeAdapter({ apiKey: API_KEY, timeoutMs: 0 })).toThrow(AdapterConfigurationError);
    const adapter = createStripeAdapter({ apiKey: API_KEY });
    expect(() => adapter.deriveProviderKey('charges.create', 'x' as never)).toThrow(UnknownOperationError);
    expect(adapter.specificationVersion).toBe('v1');
    expect(Object.keys(adapter.operations).sort()).toEqual([
      'customers.create',
      'invoices.create',
      'paymentIntents.create',
      'refunds.create',
    ]);
  });
});
