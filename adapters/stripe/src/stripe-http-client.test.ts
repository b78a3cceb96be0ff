import Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import { ClosedConnectionGuard, CONNECTION_CLOSED_CODE } from './stripe-http-client.js';

// The guard's contract with stripe-node: the codes RequestSender._shouldRetry re-sends on are re-coded;
// everything else passes through untouched.
class FailingClient extends Stripe.HttpClient {
  constructor(private readonly code: string) {
    super();
  }
  override getClientName() {
    return 'failing';
  }
  override makeRequest(): ReturnType<InstanceType<typeof Stripe.HttpClient>['makeRequest']> {
    return Promise.reject(Object.assign(new Error(`socket ${this.code}`), { code: this.code }));
  }
}

describe('ClosedConnectionGuard', () => {
  it('covers exactly the codes stripe-node retries on regardless of maxNetworkRetries', () => {
    expect(Stripe.HttpClient.CONNECTION_CLOSED_ERROR_CODES).toEqual(['ECONNRESET', 'EPIPE']);
  });

  for (const code of ['ECONNRESET', 'EPIPE']) {
    it(`re-codes ${code} so the SDK does not re-send, keeping the original code and cause`, async () => {
      const guard = new ClosedConnectionGuard(new FailingClient(code));
      const error = await guard
        .makeRequest('127.0.0.1', '1', '/v1/x', 'POST', {}, '', 'http', 1000)
        .catch((e: unknown) => e);
      expect(error).toMatchObject({ code: CONNECTION_CLOSED_CODE, originalCode: code });
      expect(Stripe.HttpClient.CONNECTION_CLOSED_ERROR_CODES).not.toContain((error as { code: string }).code);
      expect((error as Error).cause).toMatchObject({ code });
    });
  }

  it('passes other errors through unchanged (ECONNREFUSED stays "never sent", ETIMEDOUT stays a timeout)', async () => {
    for (const code of ['ECONNREFUSED', 'ETIMEDOUT']) {
      const error = await new ClosedConnectionGuard(new FailingClient(code))
        .makeRequest('127.0.0.1', '1', '/', 'POST', {}, '', 'http', 1)
        .catch((e: unknown) => e);
      expect((error as { code: string }).code).toBe(code);
    }
  });

  it('is recognised across copies by its Symbol.for marker, and names the inner client', () => {
    const guard = new ClosedConnectionGuard(new FailingClient('X'));
    expect(ClosedConnectionGuard.isInstance(guard)).toBe(true);
    expect(ClosedConnectionGuard.isInstance(new FailingClient('X'))).toBe(false);
    expect(guard.getClientName()).toBe('failing');
  });
});
