// The root entry: what a user of the adapter needs. The loopback sandbox and drill are in `./sandbox`.
export { createStripeAdapter, type StripeAdapter, type StripeAdapterOptions } from './stripe-adapter.js';
export { stripeCards } from './stripe-cards.js';
// For the `client` option: a stripe-node client of your own must use this transport (no closed-connection retry).
export { createGuardedHttpClient } from './stripe-http-client.js';
export type {
  CustomersCreateParams,
  InvoicesCreateParams,
  PaymentIntentsCreateParams,
  RefundsCreateParams,
  StripeOperationTypes,
} from './stripe-operations.js';
