import type { ConformanceOptions } from '@retrysafe/testkit/conformance';
import { startStripeSandbox } from '../src/sandbox/index.js';

// What the drill needs to know about Stripe: Stripe-shaped answers for the proxy, params per operation,
// and a sandbox on the runner's virtual clock. Shared by the conformance test and the negative control.
const stripeError = (status: number, error: Record<string, string>, retryAfterS?: number) =>
  ({ kind: 'status', status, body: { error }, ...(retryAfterS ? { retryAfterS } : {}) }) as const;
const faults = {
  permanent: stripeError(400, { type: 'invalid_request_error', code: 'parameter_invalid', message: 'Invalid request (drill)' }),
  transient: stripeError(429, { type: 'invalid_request_error', code: 'rate_limit', message: 'Too many requests (drill)' }),
  rateLimited: stripeError(429, { type: 'invalid_request_error', code: 'rate_limit', message: 'Too many requests (drill)' }, 2),
  inProgress: stripeError(409, { type: 'idempotency_error', code: 'idempotency_key_in_use', message: 'Another request with this key is in progress (drill)' }),
};
const change = (field: string) => (p: unknown) => ({ ...(p as Record<string, unknown>), [field]: `${String((p as Record<string, unknown>)[field])}-changed` });

export const drillOperations: ConformanceOptions['operations'] = {
  'customers.create': { params: (i) => ({ customerRef: `user-${i}`, email: `c${i}@example.test` }), changeIntent: change('customerRef'), faults },
  'paymentIntents.create': { params: (i) => ({ customer: 'cus_fixture', amount: 1000 + i, currency: 'eur', orderRef: `order-${i}` }), changeIntent: change('orderRef'), faults },
  'invoices.create': { params: (i) => ({ customer: 'cus_fixture', invoiceRef: `inv-${i}` }), changeIntent: change('invoiceRef'), faults },
  'refunds.create': { params: (i) => ({ paymentIntent: 'pi_fixture', refundRef: `rf-${i}`, amount: 100 }), changeIntent: change('refundRef'), faults },
};

export const startDrillSandbox: ConformanceOptions['startSandbox'] = async ({ clock }) => {
  const s = await startStripeSandbox({ port: 0, now: clock.now, sleep: clock.sleep });
  return { url: s.url, count: (op) => s.count(op), close: () => s.close(), expireKeys: () => void s.expireKeys() };
};
