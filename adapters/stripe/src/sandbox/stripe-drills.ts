import type { DrillFault, DrillOperation, DrillSetup } from '@retrysafe/contract';
import { createStripeAdapter } from '../stripe-adapter.js';
import { startStripeSandbox } from './stripe-sandbox.js';

/**
 * Drill setups are the contract's `DrillSetup`: the conformance kit (`runConformance`) and the CLI's
 * `retrysafe drill` run what this file exports, and this package depends on the contract alone.
 */
export type StripeDrill = DrillSetup;
export type StripeDrillOperation = DrillOperation;
type StatusFault = Extract<DrillFault, { kind: 'status' }>;

const stripeError = (status: number, error: Record<string, string>, retryAfterS?: number): StatusFault => ({
  kind: 'status',
  status,
  body: { error },
  ...(retryAfterS ? { retryAfterS } : {}),
});

/** Stripe's wire format for the four answers the drill needs. */
export const stripeDrillFaults: StripeDrillOperation['faults'] = {
  permanent: stripeError(400, {
    type: 'invalid_request_error',
    code: 'parameter_invalid',
    message: 'Invalid request (drill)',
  }),
  transient: stripeError(429, {
    type: 'invalid_request_error',
    code: 'rate_limit',
    message: 'Too many requests (drill)',
  }),
  rateLimited: stripeError(
    429,
    { type: 'invalid_request_error', code: 'rate_limit', message: 'Too many requests (drill)' },
    2,
  ),
  inProgress: stripeError(409, {
    type: 'idempotency_error',
    code: 'idempotency_key_in_use',
    message: 'Another request with this key is in progress (drill)',
  }),
};

const change = (field: string) => (p: unknown) => ({
  ...(p as Record<string, unknown>),
  [field]: `${String((p as Record<string, unknown>)[field])}-changed`,
});

/** Params per operation (the sandbox's fixtures `cus_fixture` and `pi_fixture` are what they point at). */
export const stripeDrillOperations: Readonly<Record<string, StripeDrillOperation>> = {
  'customers.create': {
    params: (i) => ({ customerRef: `user-${i}`, email: `c${i}@example.test` }),
    changeIntent: change('customerRef'),
    faults: stripeDrillFaults,
  },
  'paymentIntents.create': {
    params: (i) => ({ customer: 'cus_fixture', amount: 1000 + i, currency: 'eur', orderRef: `order-${i}` }),
    changeIntent: change('orderRef'),
    faults: stripeDrillFaults,
    // The sandbox declines this card in a create+confirm and keeps the PaymentIntent, as Stripe does.
    rejectedCreates: {
      params: (i) => ({
        customer: 'cus_fixture',
        amount: 1000 + i,
        currency: 'eur',
        orderRef: `declined-${i}`,
        confirm: true,
        paymentMethod: 'pm_card_chargeDeclined',
      }),
      corrected: (p) => ({ ...(p as Record<string, unknown>), paymentMethod: 'pm_card_visa' }),
    },
  },
  'invoices.create': {
    params: (i) => ({ customer: 'cus_fixture', invoiceRef: `inv-${i}` }),
    changeIntent: change('invoiceRef'),
    faults: stripeDrillFaults,
  },
  'refunds.create': {
    params: (i) => ({ paymentIntent: 'pi_fixture', refundRef: `rf-${i}`, amount: 100 }),
    changeIntent: change('refundRef'),
    faults: stripeDrillFaults,
  },
};

/**
 * A fresh sandbox on the runner's clock, as the drill wants it. Its Search API lags a minute behind
 * writes, the delay Stripe calls normal (docs.stripe.com/search#data-freshness: "less than 1 minute",
 * up to an hour in outages): a lookup that trusted an immediate search miss would re-create.
 */
export const startStripeDrillSandbox: StripeDrill['startSandbox'] = async ({ clock }) => {
  const s = await startStripeSandbox({ port: 0, now: clock.now, sleep: clock.sleep, searchDelayMs: 60_000 });
  return { url: s.url, count: (op) => s.count(op), close: () => s.close(), expireKeys: () => void s.expireKeys() };
};

export const stripeDrill: StripeDrill = {
  name: 'stripe',
  createAdapter: ({ baseUrl, timeoutMs }) => createStripeAdapter({ apiKey: 'sk_test_drill', baseUrl, timeoutMs }),
  startSandbox: startStripeDrillSandbox,
  operations: stripeDrillOperations,
};

/** What `retrysafe drill --adapter stripe` runs. */
export const drills: readonly StripeDrill[] = [stripeDrill];
