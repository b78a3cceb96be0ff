import { markerGuard } from '@retrysafe/contract/provider';
import Stripe from 'stripe';

/** Error code the guard gives a closed connection, so stripe-node's closed-connection retry does not fire. */
export const CONNECTION_CLOSED_CODE = 'ERETRYSAFE_CONNECTION_CLOSED';

const GUARD = Symbol.for('retrysafe.stripe.ClosedConnectionGuard');

type HttpClientLike = InstanceType<typeof Stripe.HttpClient>;

/** stripe-node retries once on ECONNRESET/EPIPE whatever `maxNetworkRetries` says; re-coded, they reach the runner as unknown. */
export class ClosedConnectionGuard extends Stripe.HttpClient {
  readonly [GUARD] = true;
  readonly #inner: HttpClientLike;

  constructor(inner: HttpClientLike = Stripe.createNodeHttpClient()) {
    super();
    this.#inner = inner;
  }

  override getClientName(): string {
    return this.#inner.getClientName();
  }

  override makeRequest(...args: Parameters<HttpClientLike['makeRequest']>): ReturnType<HttpClientLike['makeRequest']> {
    return this.#inner.makeRequest(...args).catch((error: unknown) => {
      const code = (error as { code?: unknown } | null)?.code;
      if (typeof code === 'string' && Stripe.HttpClient.CONNECTION_CLOSED_ERROR_CODES.includes(code)) {
        const message = `connection closed (${code}) after the request may have been sent; not retried by the SDK`;
        throw Object.assign(new Error(message, { cause: error }), { code: CONNECTION_CLOSED_CODE, originalCode: code });
      }
      throw error;
    });
  }

  /** True for a guard from any copy of this package (checks a Symbol.for marker). */
  static readonly isInstance = markerGuard<ClosedConnectionGuard>(GUARD);
}

/** The HttpClient to give a Stripe client you build yourself and pass to `createStripeAdapter({ client })`. */
export function createGuardedHttpClient(inner?: HttpClientLike): ClosedConnectionGuard {
  return new ClosedConnectionGuard(inner);
}
