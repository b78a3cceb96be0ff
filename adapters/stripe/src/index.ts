export { createStripeAdapter, type StripeAdapter, type StripeAdapterOptions } from './stripe-adapter.js';
export {
  stripeCards,
  customersCreateCard,
  paymentIntentsCreateCard,
  invoicesCreateCard,
  refundsCreateCard,
  STRIPE_KEY_RULE,
  STRIPE_KEY_RETENTION_MS,
  STRIPE_SEARCH_DELAY_MS,
  STRIPE_OPERATION_METADATA_KEY,
  STRIPE_SOURCES,
} from './stripe-cards.js';
export { classifyStripeError, classifyStripeResult, isReplayedHeaders, retryAfterMs, REPLAYED_HEADER } from './stripe-errors.js';
export { ClosedConnectionGuard, createGuardedHttpClient, CONNECTION_CLOSED_CODE, type ConnectionClosedError } from './stripe-http-client.js';
export { stripeOperations, metadataQuery, type StripeOperation } from './stripe-operations.js';
export type { StripeOperationTypes, CustomersCreateParams, PaymentIntentsCreateParams, InvoicesCreateParams, RefundsCreateParams } from './stripe-operations.js';
