import { runConformance } from '@retrysafe/testkit/conformance';
import { createStripeAdapter } from '../src/index.js';
import { startStripeSandbox } from '../src/sandbox/index.js';

// The shared drill: real stripe SDK → fault proxy → loopback Stripe sandbox, on the runner's virtual clock.
const stripeError = (status: number, error: Record<string, string>, retryAfterS?: number) =>
  ({ kind: 'status', status, body: { error }, ...(retryAfterS ? { retryAfterS } : {}) }) as const;
const faults = {
  permanent: stripeError(400, { type: 'invalid_request_error', code: 'parameter_invalid', message: 'Invalid request (drill)' }),
  transient: stripeError(429, { type: 'invalid_request_error', code: 'rate_limit', message: 'Too many requests (drill)' }),
  rateLimited: stripeError(429, { type: 'invalid_request_error', code: 'rate_limit', message: 'Too many requests (drill)' }, 2),
  inProgress: stripeError(409, { type: 'idempotency_error', code: 'idempotency_key_in_use', message: 'Another request with this key is in progress (drill)' }),
};
const change = (field: string) => (p: unknown) => ({ ...(p as Record<string, unknown>), [field]: `${String((p as Record<string, unknown>)[field])}-changed` });

runConformance({
  name: 'stripe',
  createAdapter: ({ baseUrl, timeoutMs }) => createStripeAdapter({ apiKey: 'sk_test_drill', baseUrl, timeoutMs }),
  startSandbox: async ({ clock }) => {
    const s = await startStripeSandbox({ port: 0, now: clock.now, sleep: clock.sleep });
    return { url: s.url, count: (op) => s.count(op), close: () => s.close(), expireKeys: () => void s.expireKeys() };
  },
  operations: {
    'customers.create': { params: (i) => ({ customerRef: `user-${i}`, email: `c${i}@example.test` }), changeIntent: change('customerRef'), faults },
    'paymentIntents.create': { params: (i) => ({ customer: 'cus_fixture', amount: 1000 + i, currency: 'eur', orderRef: `order-${i}` }), changeIntent: change('orderRef'), faults },
    'invoices.create': { params: (i) => ({ customer: 'cus_fixture', invoiceRef: `inv-${i}` }), changeIntent: change('invoiceRef'), faults },
    'refunds.create': { params: (i) => ({ paymentIntent: 'pi_fixture', refundRef: `rf-${i}`, amount: 100 }), changeIntent: change('refundRef'), faults },
  },
});
