import {
  AdapterConfigurationError,
  type BusinessOperationId,
  defineAdapter,
  type FrameOperation,
  type LookupContext,
  type LookupResult,
  type Outcome,
  type ProviderKey,
  type TypedAdapter,
} from '@retrysafe/contract';
import { checkBaseUrl, operationParamsErrors } from '@retrysafe/contract/provider';
import { resendSafety } from '@retrysafe/contract/rules';
import Stripe from 'stripe';
import { STRIPE_KEY_RETENTION_MS, STRIPE_KEY_RULE, STRIPE_SEARCH_DELAY_MS } from './stripe-cards.js';
import { classifyStripeError, classifyStripeResult, isReplayedHeaders } from './stripe-errors.js';
import { ClosedConnectionGuard } from './stripe-http-client.js';
import {
  metadataQuery,
  type StripeObject,
  type StripeOperation,
  type StripeOperationTypes,
  stripeOperations,
} from './stripe-operations.js';

export interface StripeAdapterOptions {
  /** Secret or restricted key. Required unless `client` is given. */
  apiKey?: string;
  /** Where the API lives, e.g. `http://127.0.0.1:4242` for a loopback sandbox. Default: https://api.stripe.com. */
  baseUrl?: string;
  /** Client timeout per attempt. Default 30 000 ms (the SDK's own default is 80 000). */
  timeoutMs?: number;
  /** Stripe API version to pin; default: the SDK's. */
  apiVersion?: string;
  /**
   * Your own client. It must have `maxNetworkRetries: 0` and `httpClient: createGuardedHttpClient()`
   * (so the SDK's closed-connection retry is off); anything else is refused with AdapterConfigurationError.
   */
  client?: Stripe;
}

/** Typed: `runner.run(stripe, 'paymentIntents.create', { params })` is checked against StripeOperationTypes. */
export interface StripeAdapter extends TypedAdapter<StripeOperationTypes> {
  readonly provider: 'stripe';
}

const PROVIDER = 'stripe';
const DEFAULT_TIMEOUT_MS = 30_000;
/** Suggested wait between metadata searches that miss inside the consistency delay (typical lag: < 1 min). */
const SEARCH_POLL_MS = 60_000;

function buildClient(options: StripeAdapterOptions, timeoutMs: number): Stripe {
  if (options.client) {
    const client = options.client;
    if (typeof client.getMaxNetworkRetries !== 'function')
      throw new AdapterConfigurationError(PROVIDER, '`client` is not a stripe-node client');
    const retries = client.getMaxNetworkRetries();
    if (retries !== 0) {
      throw new AdapterConfigurationError(
        PROVIDER,
        `the supplied Stripe client has maxNetworkRetries ${retries}; the runner must be the only retrying layer: build it with { maxNetworkRetries: 0, httpClient: createGuardedHttpClient() }`,
      );
    }
    if (!ClosedConnectionGuard.isInstance(client.getApiField('httpClient'))) {
      throw new AdapterConfigurationError(
        PROVIDER,
        'the supplied Stripe client would still retry once on ECONNRESET/EPIPE (stripe-node RequestSender._shouldRetry, regardless of maxNetworkRetries): build it with { httpClient: createGuardedHttpClient() }',
      );
    }
    return client;
  }
  if (typeof options.apiKey !== 'string' || options.apiKey.length === 0) {
    throw new AdapterConfigurationError(PROVIDER, 'apiKey is required when no client is given');
  }
  const config: Stripe.StripeConfig = {
    maxNetworkRetries: 0,
    timeout: timeoutMs,
    httpClient: new ClosedConnectionGuard(),
    telemetry: false,
  };
  if (options.apiVersion) (config as { apiVersion?: string }).apiVersion = options.apiVersion;
  if (options.baseUrl !== undefined) {
    // https, or plain http only to a loopback sandbox: the secret key never travels in clear.
    const url = checkBaseUrl(PROVIDER, options.baseUrl);
    if (url.pathname !== '/' && url.pathname !== '')
      throw new AdapterConfigurationError(PROVIDER, 'baseUrl must not carry a path (the SDK adds /v1/…)');
    config.host = url.hostname;
    config.protocol = url.protocol === 'http:' ? 'http' : 'https';
    config.port = url.port || (url.protocol === 'http:' ? '80' : '443');
  }
  return new Stripe(options.apiKey, config);
}

/**
 * The retrysafe adapter for Stripe: customers.create, paymentIntents.create, invoices.create,
 * refunds.create. Every write carries an Idempotency-Key derived from the business-operation id and
 * writes that id to `metadata.retrysafe_operation_id`; the SDK never retries on its own.
 */
export function createStripeAdapter(options: StripeAdapterOptions): StripeAdapter {
  if (typeof options !== 'object' || options === null)
    throw new AdapterConfigurationError(PROVIDER, 'options are required');
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0)
    throw new AdapterConfigurationError(
      PROVIDER,
      `timeoutMs must be a positive integer, got ${String(options.timeoutMs)}`,
    );
  const client = buildClient(options, timeoutMs);

  const operations: Record<string, StripeOperation & FrameOperation> = {};
  for (const op of Object.values(stripeOperations)) operations[op.name] = { ...op, keyRule: STRIPE_KEY_RULE };

  /**
   * Keys Stripe has answered with a REPLAYED 5xx: for the rest of the retention that key can only replay
   * the same 5xx, so a lookup goes straight to the metadata search instead of re-sending. Per process;
   * after a restart one re-send rediscovers it.
   */
  const replaysServerError = new Set<string>();

  /** One POST with the key; classified, never thrown. The SDK has no abort option: the frame races the signal. */
  async function send(
    op: StripeOperation,
    params: Record<string, unknown>,
    id: BusinessOperationId,
    key: ProviderKey,
  ): Promise<Outcome> {
    try {
      const result = await op.create(client, op.toStripe(params, id), {
        idempotencyKey: key,
        maxNetworkRetries: 0,
        timeout: timeoutMs,
      });
      return classifyStripeResult(result, op.card.storedResult.replayIndicator?.value ?? null);
    } catch (error) {
      const outcome = classifyStripeError(error, op.object);
      if (
        outcome.kind === 'unknown' &&
        outcome.cause === 'server-error' &&
        isReplayedHeaders((error as { headers?: Record<string, string> }).headers)
      ) {
        if (replaysServerError.size > 10_000) replaysServerError.clear();
        replaysServerError.add(key);
      }
      return outcome;
    }
  }

  /** Past the key's retention: find the object by the business-operation id in its metadata. */
  async function findByMetadata(
    op: StripeOperation,
    ctx: LookupContext,
    why: string,
    missIsCannotTell: boolean,
  ): Promise<LookupResult> {
    let found: StripeObject[];
    try {
      found =
        op.pastRetention.kind === 'search'
          ? await op.pastRetention.find(client, metadataQuery(ctx.businessOperationId))
          : await op.pastRetention.find(client, (ctx.params ?? {}) as Record<string, unknown>, ctx.businessOperationId);
    } catch (error) {
      const o = classifyStripeError(error);
      const { kind: _k, ...rest } = o as Outcome & { message?: string; retryAfterMs?: number };
      return {
        kind: 'cannot-tell',
        reason: `${why}; the metadata ${op.pastRetention.kind} failed (${o.kind}): ${rest.message ?? ''}`.trim(),
        ...(rest.status !== undefined ? { status: rest.status } : {}),
        ...(rest.code !== undefined ? { code: rest.code } : {}),
        ...(rest.requestId !== undefined ? { requestId: rest.requestId } : {}),
        ...(rest.retryAfterMs !== undefined ? { retryAfterMs: rest.retryAfterMs } : {}),
      };
    }
    if (found.length > 0) {
      const oldest = [...found].sort((a, b) => (a.created ?? 0) - (b.created ?? 0))[0]!;
      // A PaymentIntent whose confirmation failed is the rejection it was (402), not a success to adopt.
      const failed = oldest.last_payment_error as { code?: string; message?: string } | null | undefined;
      if (failed && typeof oldest.id === 'string') {
        const code = typeof failed.code === 'string' ? { code: failed.code } : {};
        return {
          kind: 'found',
          outcome: {
            kind: 'rejected',
            reason: 'card-declined',
            message: failed.message ?? 'the payment failed',
            created: oldest.id,
            ...code,
          },
        };
      }
      const outcome = classifyStripeResult(oldest, op.card.storedResult.replayIndicator?.value ?? null);
      return { kind: 'found', outcome: { ...(outcome as Extract<Outcome, { kind: 'succeeded' }>), kind: 'succeeded' } };
    }
    if (missIsCannotTell) {
      // The Search API is normally < 1 min behind: ask again in about a minute rather than hammering it.
      return {
        kind: 'cannot-tell',
        reason: `${why}; not found by metadata ${op.pastRetention.kind}`,
        retryAfterMs: SEARCH_POLL_MS,
      };
    }
    return {
      kind: 'not-found',
      reason: `${why}; no ${op.name.split('.')[0]} carries metadata.retrysafe_operation_id = this id (${op.pastRetention.kind} is past its consistency delay)`,
    };
  }

  return defineAdapter({
    provider: PROVIDER,
    operations,

    async execute(op, params, ctx) {
      return send(op, params as Record<string, unknown>, ctx.businessOperationId, ctx.providerKey!);
    },

    async lookup(op, ctx) {
      const key = ctx.providerKey!;
      if (ctx.firstDispatchedAt === null)
        return { kind: 'not-found', reason: 'never dispatched: nothing was sent to Stripe' };
      const age = ctx.now - ctx.firstDispatchedAt;
      // Whether the key is still safe to rely on is the card rule (retention minus the clock-skew margin and the
      // late-apply allowance): the runner's answer with its policy's margin, else the rule with the card's margin.
      const keyReusable = ctx.keyReusable ?? resendSafety(op.card, ctx.firstDispatchedAt, ctx.now).safe;

      if (keyReusable && replaysServerError.has(key)) {
        return findByMetadata(op, ctx, 'the key replays a stored 5xx', true);
      }
      if (keyReusable) {
        // Inside retention: re-send the identical request with the same key; Stripe replays what it stored.
        const problems = operationParamsErrors(op, ctx.params);
        if (problems.length > 0)
          return {
            kind: 'cannot-tell',
            reason: `the recorded params are not valid now (${problems.map((f) => `${f.path} ${f.message}`).join('; ')}), so they cannot be re-sent`,
          };
        const o = await send(op, ctx.params as Record<string, unknown>, ctx.businessOperationId, key);
        switch (o.kind) {
          case 'succeeded':
          case 'replayed':
          case 'in-progress':
          case 'rejected':
            return { kind: 'found', outcome: o };
          case 'not-applied':
            return {
              kind: 'cannot-tell',
              reason: `re-send with the same key was not processed: ${o.message}`,
              ...(o.status !== undefined ? { status: o.status } : {}),
              ...(o.code !== undefined ? { code: o.code } : {}),
              ...(o.requestId !== undefined ? { requestId: o.requestId } : {}),
              ...(o.retryAfterMs !== undefined ? { retryAfterMs: o.retryAfterMs } : {}),
            };
          case 'unknown':
            if (o.cause === 'server-error') {
              // The key now holds a 5xx and will replay it: only the metadata lookup can tell whether the object exists.
              return findByMetadata(op, ctx, `the key replays a stored ${o.status ?? '5xx'}`, true);
            }
            return {
              kind: 'cannot-tell',
              reason: `re-send with the same key: ${o.message}`,
              ...(o.status !== undefined ? { status: o.status } : {}),
              ...(o.code !== undefined ? { code: o.code } : {}),
              ...(o.requestId !== undefined ? { requestId: o.requestId } : {}),
            };
        }
      }

      // Past retention (counting the clock-skew margin): never rely on the key. The last send under it happened before
      // firstDispatchedAt + 24 h, so a search miss is authoritative only after that plus the search delay.
      const delay = op.pastRetention.kind === 'search' ? STRIPE_SEARCH_DELAY_MS : 0;
      const authoritativeAt = ctx.firstDispatchedAt + STRIPE_KEY_RETENTION_MS + delay;
      const inWindow = ctx.now < authoritativeAt;
      return findByMetadata(
        op,
        ctx,
        `key is ${Math.round(age / 60_000)} min old (past Stripe's 24 h retention${inWindow ? `; inside the ${op.pastRetention.kind} consistency delay until ${new Date(authoritativeAt).toISOString()}` : ''})`,
        inWindow,
      );
    },

    // close: the guarded Node client uses the SDK's shared keep-alive agent; nothing of ours to release.
  });
}
