import { asBusinessOperationId, sha256Hex } from '@retrysafe/contract';
import { createRedactor } from '@retrysafe/core/internal';
import { executeContext, operationIdFor } from '@retrysafe/testkit/conformance';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createStripeAdapter, type StripeAdapter } from '../src/index.js';
import { type StripeSandbox, startStripeSandbox } from '../src/sandbox/index.js';
import { STRIPE_OPERATION_METADATA_KEY } from '../src/stripe-cards.js';
import { classifyStripeError } from '../src/stripe-errors.js';
import { API_KEY, startScriptedServer } from './helpers.js';

// Every case of the error mapping (src/stripe-errors.ts), through the real stripe SDK against the loopback sandbox.

let sandbox: StripeSandbox;
let adapter: StripeAdapter;

beforeEach(async () => {
  sandbox = await startStripeSandbox({ port: 0 });
  adapter = createStripeAdapter({ apiKey: API_KEY, baseUrl: sandbox.url, timeoutMs: 2000 });
});
afterEach(async () => {
  await sandbox.close();
});

const pi = (orderRef: string, extra: Record<string, unknown> = {}) => ({
  customer: 'cus_fixture',
  amount: 1200,
  currency: 'eur',
  orderRef,
  ...extra,
});

async function execute(operation: string, params: Record<string, unknown>, a: StripeAdapter = adapter) {
  const id = operationIdFor(a, operation, params);
  return { id, outcome: await a.doExecute(operation, params, executeContext(a, operation, id)) };
}

describe('2xx', () => {
  it('succeeded: keeps status, Request-Id and the object id; the key is derived from the business-operation id and the id is in metadata', async () => {
    const { id, outcome } = await execute('paymentIntents.create', pi('A-1'));
    expect(outcome.kind).toBe('succeeded');
    if (outcome.kind !== 'succeeded') return;
    expect(outcome.status).toBe(200);
    expect(outcome.requestId).toMatch(/^req_/);
    expect(outcome.providerRef).toMatch(/^pi_/);
    expect((outcome.result as { metadata: Record<string, string> }).metadata[STRIPE_OPERATION_METADATA_KEY]).toBe(id);
    const [req] = sandbox.requests();
    // Stripe does not document how it compares keys: an id with an upper-case letter travels as its digest.
    expect(req?.idempotencyKey).toBe(`rs-${sha256Hex(id)}`);
    expect(req?.idempotencyKey).not.toMatch(/stripe-node-retry/);
  });

  it('replayed: the same key and params again return the stored response with Idempotent-Replayed; still one object', async () => {
    const params = pi('A-2');
    const first = await execute('paymentIntents.create', params);
    const second = await execute('paymentIntents.create', params);
    expect(second.outcome.kind).toBe('replayed');
    expect(second.outcome.kind === 'replayed' && second.outcome.providerRef).toBe(
      first.outcome.kind === 'succeeded' && first.outcome.providerRef,
    );
    expect(sandbox.count('paymentIntents.create')).toBe(1);
  });

  it('a caller-supplied business-operation id of the maximum length still gives a readable key within 255 chars', async () => {
    const long = `order-${'x'.repeat(194)}`; // 200 chars: the contract's maximum
    const key = adapter.deriveProviderKey('customers.create', long as never);
    expect(key).toBe(`rs-${long}`);
    expect(key!.length).toBeLessThanOrEqual(255);
    const outcome = await adapter.doExecute(
      'customers.create',
      { customerRef: 'u-long' },
      executeContext(adapter, 'customers.create', asBusinessOperationId(long)),
    );
    expect(outcome.kind).toBe('succeeded');
    expect(sandbox.requests()[0]?.idempotencyKey).toBe(key);
  });
});

describe('idempotency layer', () => {
  it('StripeIdempotencyError (same key, other params) ⇒ rejected / conflict, not stored as a second object', async () => {
    const params = pi('A-3');
    const { id } = await execute('paymentIntents.create', params);
    const outcome = await adapter.doExecute(
      'paymentIntents.create',
      { ...params, description: 'changed' },
      executeContext(adapter, 'paymentIntents.create', id),
    );
    expect(outcome).toMatchObject({ kind: 'rejected', reason: 'conflict', status: 400, code: 'idempotency_error' });
    expect(sandbox.count('paymentIntents.create')).toBe(1);
  });

  it('409 idempotency_key_in_use (same key while the first is still running) ⇒ in-progress; one object', async () => {
    const release = sandbox.hold();
    const params = pi('A-4');
    const id = operationIdFor(adapter, 'paymentIntents.create', params);
    const first = adapter.doExecute(
      'paymentIntents.create',
      params,
      executeContext(adapter, 'paymentIntents.create', id),
    );
    await sandbox.waitFor((_log, s) => s.keys().length === 1); // the first is inside endpoint execution
    const second = await adapter.doExecute(
      'paymentIntents.create',
      params,
      executeContext(adapter, 'paymentIntents.create', id, { attempt: 2 }),
    );
    expect(second).toMatchObject({ kind: 'in-progress', status: 409, code: 'idempotency_key_in_use' });
    release();
    expect((await first).kind).toBe('succeeded');
    expect(sandbox.count('paymentIntents.create')).toBe(1);
  });

  it('429 ⇒ not-applied; it is not stored, so the same key later executes', async () => {
    sandbox.failNext('rate-limit');
    const params = pi('A-5');
    const first = await execute('paymentIntents.create', params);
    expect(first.outcome).toMatchObject({ kind: 'not-applied', status: 429, code: 'rate_limit' });
    expect(sandbox.count('paymentIntents.create')).toBe(0);
    const again = await execute('paymentIntents.create', params);
    expect(again.outcome.kind).toBe('succeeded');
  });

  it('5xx ⇒ unknown / server-error; Stripe stores it, so the same key replays the 500 (marked as stored)', async () => {
    sandbox.failNext('server-error');
    const params = pi('A-6');
    const first = await execute('paymentIntents.create', params);
    expect(first.outcome).toMatchObject({ kind: 'unknown', cause: 'server-error', status: 500 });
    const again = await execute('paymentIntents.create', params);
    expect(again.outcome).toMatchObject({ kind: 'unknown', cause: 'server-error', status: 500 });
    expect(again.outcome.kind === 'unknown' && again.outcome.message).toMatch(/stored 5xx replayed/);
    expect(sandbox.requests().map((r) => r.result)).toEqual(['executed', 'replayed']);
  });
});

describe('rejections (card, validation, auth, permission)', () => {
  it('402 card_error ⇒ rejected / card-declined (stored: the same key replays it)', async () => {
    const params = pi('A-7', { paymentMethod: 'pm_card_chargeDeclined', confirm: true });
    const { outcome } = await execute('paymentIntents.create', params);
    expect(outcome).toMatchObject({ kind: 'rejected', reason: 'card-declined', status: 402, code: 'card_declined' });
    // the declined PaymentIntent exists (requires_payment_method) and the rejection names it
    const [left] = sandbox.records('payment_intent').filter((r) => !r.fixture);
    expect(left?.object.status).toBe('requires_payment_method');
    expect(outcome.kind === 'rejected' && outcome.created).toBe(left?.id);
    await execute('paymentIntents.create', params);
    expect(sandbox.count('paymentIntents.create')).toBe(1);
    expect(sandbox.requests().map((r) => r.result)).toEqual(['executed', 'replayed']);
  });

  it("a 5xx is marked as the key's stored replay by the card's replay indicator, the same rule as a 2xx", () => {
    const error = (headers: Record<string, string>) => ({
      type: 'StripeAPIError',
      rawType: 'api_error',
      statusCode: 500,
      message: 'An unknown error occurred.',
      headers,
    });
    const other = { header: 'X-Replayed-From-Store', value: 'yes' };
    const marked = /^stored 5xx replayed for this key/;
    expect(classifyStripeError(error({ 'x-replayed-from-store': 'yes' }), undefined, other)).toMatchObject({
      kind: 'unknown',
      cause: 'server-error',
      message: expect.stringMatching(marked),
    });
    for (const indicator of [other, null])
      expect(classifyStripeError(error({ 'idempotent-replayed': 'true' }), undefined, indicator)).toMatchObject({
        kind: 'unknown',
        message: expect.not.stringMatching(marked),
      });
  });

  it('only the object the operation creates counts as created (a refund error naming its PaymentIntent created nothing)', () => {
    const error = {
      type: 'StripeInvalidRequestError',
      rawType: 'invalid_request_error',
      statusCode: 400,
      code: 'charge_not_refundable',
      payment_intent: { id: 'pi_given' },
    };
    expect(classifyStripeError(error, 'refund')).not.toHaveProperty('created');
    expect(classifyStripeError(error, 'payment_intent')).toMatchObject({ kind: 'rejected', created: 'pi_given' });
  });

  it('400 invalid_request_error ⇒ rejected / validation (not stored)', async () => {
    const { outcome } = await execute('invoices.create', {
      customer: 'cus_fixture',
      invoiceRef: 'INV-1',
      collectionMethod: 'send_invoice',
    });
    expect(outcome).toMatchObject({ kind: 'rejected', reason: 'validation', status: 400, code: 'parameter_missing' });
    expect(sandbox.keys()).toEqual([]);
  });

  it('404 resource_missing ⇒ rejected / not-found', async () => {
    const { outcome } = await execute('refunds.create', { paymentIntent: 'pi_nope', refundRef: 'R-1' });
    expect(outcome).toMatchObject({ kind: 'rejected', reason: 'not-found', status: 404, code: 'resource_missing' });
  });

  it('401 ⇒ rejected / authentication', async () => {
    const bad = createStripeAdapter({ apiKey: 'sk_live_wrong', baseUrl: sandbox.url });
    const { outcome } = await execute('customers.create', { customerRef: 'u-1' }, bad);
    expect(outcome).toMatchObject({ kind: 'rejected', reason: 'authentication', status: 401 });
  });

  it('403 ⇒ rejected / permission', async () => {
    const restricted = createStripeAdapter({ apiKey: 'rk_test_readonly', baseUrl: sandbox.url });
    const { outcome } = await execute('customers.create', { customerRef: 'u-2' }, restricted);
    expect(outcome).toMatchObject({ kind: 'rejected', reason: 'permission', status: 403 });
  });

  it("params that fail the adapter's own checks ⇒ rejected / validation with every field named, and nothing is sent", async () => {
    const outcome = await adapter.doExecute(
      'paymentIntents.create',
      { customer: 'x', amount: -1, orderRef: 'A', extra: 1 },
      executeContext(adapter, 'paymentIntents.create', asBusinessOperationId('op-invalid')),
    );
    expect(outcome).toMatchObject({ kind: 'rejected', reason: 'validation', code: 'retrysafe_invalid_params' });
    const message = outcome.kind === 'rejected' ? outcome.message : '';
    for (const field of ['customer', 'amount', 'currency', 'extra']) expect(message).toContain(field);
    expect(sandbox.requests()).toEqual([]);
  });
});

describe('metadata the adapter adds beside your own', () => {
  const own = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, 'v']));
  const cases: [string, Record<string, unknown>, string][] = [
    ['customers.create', { customerRef: 'u-md' }, 'customer_ref'],
    ['paymentIntents.create', pi('A-md'), 'order_ref'],
    ['invoices.create', { customer: 'cus_fixture', invoiceRef: 'I-md' }, 'invoice_ref'],
    ['refunds.create', { paymentIntent: 'pi_fixture', refundRef: 'R-md', amount: 1 }, 'refund_ref'],
  ];

  it.each(cases)(
    '%s: 49 own keys (Stripe allows 50 in all; the adapter adds the ref and the id) ⇒ refused before anything is sent',
    async (operation, params) => {
      const outcome = await adapter.doExecute(
        operation,
        { ...params, metadata: own(49) },
        executeContext(adapter, operation, asBusinessOperationId('op-md-49')),
      );
      expect(outcome).toMatchObject({ kind: 'rejected', reason: 'validation', code: 'retrysafe_invalid_params' });
      expect(sandbox.requests()).toEqual([]);
    },
  );

  it.each(cases)('%s: 48 own keys fit and are stored', async (operation, params) => {
    const { outcome } = await execute(operation, { ...params, metadata: own(48) });
    expect(outcome.kind).toBe('succeeded');
  });

  it.each(cases)(
    '%s: an own key named as the one the adapter writes the ref under would be overwritten ⇒ refused before anything is sent',
    async (operation, params, refKey) => {
      const outcome = await adapter.doExecute(
        operation,
        { ...params, metadata: { [refKey]: 'mine' } },
        executeContext(adapter, operation, asBusinessOperationId('op-md-ref')),
      );
      expect(outcome).toMatchObject({ kind: 'rejected', reason: 'validation', code: 'retrysafe_invalid_params' });
      expect(sandbox.requests()).toEqual([]);
    },
  );
});

describe('transport', () => {
  it('connection refused (never sent) ⇒ not-applied', async () => {
    const closed = await startScriptedServer(() => {});
    const url = closed.url;
    await closed.close();
    const a = createStripeAdapter({ apiKey: API_KEY, baseUrl: url, timeoutMs: 1000 });
    const { outcome } = await execute('customers.create', { customerRef: 'u-3' }, a);
    expect(outcome).toMatchObject({ kind: 'not-applied', code: 'ECONNREFUSED' });
  });

  it('timeout after the request left ⇒ unknown / timeout (the sandbox did commit it)', async () => {
    const release = sandbox.hold();
    const a = createStripeAdapter({ apiKey: API_KEY, baseUrl: sandbox.url, timeoutMs: 200 });
    const { outcome } = await execute('customers.create', { customerRef: 'u-4' }, a);
    expect(outcome).toMatchObject({ kind: 'unknown', cause: 'timeout', code: 'ETIMEDOUT' });
    expect(sandbox.count('customers.create')).toBe(0);
    release();
    await sandbox.waitFor((_log, s) => s.count('customers.create') === 1);
  });

  it("connection reset after sending ⇒ unknown / connection-reset, with exactly ONE request (the SDK's closed-connection retry is owned)", async () => {
    const server = await startScriptedServer((req) => req.socket.destroy());
    const a = createStripeAdapter({ apiKey: API_KEY, baseUrl: server.url, timeoutMs: 1000 });
    const { outcome } = await execute('customers.create', { customerRef: 'u-5' }, a);
    expect(outcome).toMatchObject({ kind: 'unknown', cause: 'connection-reset' });
    expect(server.count()).toBe(1);
    await server.close();
  });

  it('a body cut off after the headers ⇒ unknown / truncated-response', async () => {
    const server = await startScriptedServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '500', 'request-id': 'req_cut' });
      res.write('{"id":"cus_');
      setTimeout(() => res.socket?.destroy(), 20);
    });
    const a = createStripeAdapter({ apiKey: API_KEY, baseUrl: server.url, timeoutMs: 1000 });
    const { outcome } = await execute('customers.create', { customerRef: 'u-6' }, a);
    expect(outcome.kind).toBe('unknown');
    expect(['truncated-response', 'connection-reset']).toContain(
      outcome.kind === 'unknown' ? outcome.cause : outcome.kind,
    );
    expect(server.count()).toBe(1);
    await server.close();
  });

  it('a 200 whose body is not JSON ⇒ unknown (it may have been applied)', async () => {
    const server = await startScriptedServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'request-id': 'req_garbage' });
      res.end('<html>proxy error</html>');
    });
    const a = createStripeAdapter({ apiKey: API_KEY, baseUrl: server.url });
    const { outcome } = await execute('customers.create', { customerRef: 'u-7' }, a);
    expect(outcome).toMatchObject({ kind: 'unknown', requestId: 'req_garbage' });
    await server.close();
  });

  it('409 with code idempotency_key_in_use under another error type ⇒ still in-progress (the code names the in-flight key)', async () => {
    const server = await startScriptedServer((_req, res) => {
      res.writeHead(409, { 'content-type': 'application/json', 'request-id': 'req_409' });
      const error = { type: 'invalid_request_error', code: 'idempotency_key_in_use', message: 'in progress' };
      res.end(JSON.stringify({ error }));
    });
    const a = createStripeAdapter({ apiKey: API_KEY, baseUrl: server.url });
    const { outcome } = await execute('customers.create', { customerRef: 'u-9' }, a);
    expect(outcome).toMatchObject({ kind: 'in-progress', status: 409, code: 'idempotency_key_in_use' });
    await server.close();
  });

  it('503 with Retry-After ⇒ unknown / server-error keeping retryAfterMs; a 409 without idempotency_key_in_use ⇒ unknown', async () => {
    const server = await startScriptedServer((_req, res, n) => {
      if (n === 1) {
        res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '3', 'request-id': 'req_503' });
        res.end(JSON.stringify({ error: { type: 'api_error', message: 'unavailable' } }));
      } else {
        res.writeHead(409, { 'content-type': 'application/json', 'request-id': 'req_409' });
        res.end(
          JSON.stringify({ error: { type: 'invalid_request_error', code: 'resource_conflict', message: 'conflict' } }),
        );
      }
    });
    const a = createStripeAdapter({ apiKey: API_KEY, baseUrl: server.url });
    const first = await execute('customers.create', { customerRef: 'u-8' }, a);
    expect(first.outcome).toMatchObject({
      kind: 'unknown',
      cause: 'server-error',
      status: 503,
      retryAfterMs: 3000,
      requestId: 'req_503',
    });
    const second = await execute('customers.create', { customerRef: 'u-8' }, a);
    expect(second.outcome).toMatchObject({ kind: 'unknown', status: 409, code: 'resource_conflict' });
    expect(server.count()).toBe(2);
    await server.close();
  });
});

describe("transport: the contract's one rule", () => {
  const coded = (code: string) => Object.assign(new Error(code), { code });
  // Node's happy-eyeballs error: an AggregateError carrying its first error's code.
  const aggregate = (...codes: string[]) =>
    Object.assign(new AggregateError(codes.map(coded), 'connect failed'), { code: codes[0] });
  const connectionError = (detail: Error) =>
    classifyStripeError({ type: 'StripeConnectionError', message: 'An error occurred with our connection', detail });

  it('not-applied only when every code along the chain says the request was never sent', () => {
    expect(connectionError(aggregate('ECONNREFUSED', 'ECONNREFUSED'))).toMatchObject({
      kind: 'not-applied',
      code: 'ECONNREFUSED',
    });
    expect(connectionError(aggregate('ECONNREFUSED', 'ECONNRESET')).kind).toBe('unknown');
    expect(connectionError(aggregate('ECONNREFUSED', 'ETIMEDOUT')).kind).toBe('unknown');
  });
});

describe('a message longer than is kept', () => {
  it('is cut with …, so what the cut left of an address is still blanked in receipts', () => {
    const message = `${'x'.repeat(280)} customer jane.roe@example.com has no default payment method`;
    const outcome = classifyStripeError({ type: 'StripeInvalidRequestError', statusCode: 400, message });
    const kept = createRedactor().text((outcome as { message: string }).message);
    expect(kept).toMatch(/…$/);
    expect(kept).not.toContain('jane.roe');
  });
});
