import {
  type AccountOption,
  AdapterConfigurationError,
  defineAdapter,
  type FramedLookupContext,
  type LookupResult,
  type Outcome,
  type TypedAdapter,
} from '@retrysafe/contract';
import {
  cannotTellFrom,
  checkBaseUrl,
  checkToken,
  lookupFromOutcome,
  operationParamsErrors,
  positiveInteger,
} from '@retrysafe/contract/provider';
import { absenceProvenFrom, notFoundIsAuthoritative } from '@retrysafe/contract/rules';
import Stripe from 'stripe';
import { classifyStripeError, classifyStripeResult, replayedByCard } from './stripe-errors.js';
import { ClosedConnectionGuard } from './stripe-http-client.js';
import {
  type StripeObject,
  type StripeOperation,
  type StripeOperationTypes,
  stripeOperations,
} from './stripe-operations.js';

export interface StripeAdapterOptions extends AccountOption {
  /** Secret or restricted key. Required unless `client` is given. */
  apiKey?: string;
  /** Where the API lives, e.g. `http://127.0.0.1:4242` for a loopback sandbox. Default: https://api.stripe.com. */
  baseUrl?: string;
  /** Client timeout per attempt. Default 30 000 ms (the SDK's own default is 80 000). */
  timeoutMs?: number;
  /** Stripe API version to pin; default: the SDK's. */
  apiVersion?: string;
  /** Your own client, built with `maxNetworkRetries: 0` and `httpClient: createGuardedHttpClient()` (else refused). */
  client?: Stripe;
}

/** Typed: `runner.run(stripe, 'paymentIntents.create', { params })` is checked against StripeOperationTypes. */
export interface StripeAdapter extends TypedAdapter<StripeOperationTypes> {
  readonly provider: 'stripe';
}

const PROVIDER = 'stripe';
/** The Search API is normally < 1 min behind: a miss inside its delay asks again in about a minute. */
const SEARCH_POLL_MS = 60_000;

function configError(message: string): never {
  throw new AdapterConfigurationError(PROVIDER, message);
}

function buildClient(options: StripeAdapterOptions, timeoutMs: number): Stripe {
  const client = options.client;
  if (client) {
    if (typeof client.getMaxNetworkRetries !== 'function') configError('`client` is not a stripe-node client');
    const retries = client.getMaxNetworkRetries();
    if (retries !== 0)
      configError(
        `the supplied Stripe client has maxNetworkRetries ${retries}; the runner must be the only retrying layer: build it with { maxNetworkRetries: 0, httpClient: createGuardedHttpClient() }`,
      );
    if (!ClosedConnectionGuard.isInstance(client.getApiField('httpClient')))
      configError(
        'the supplied Stripe client would still retry once on ECONNRESET/EPIPE (stripe-node RequestSender._shouldRetry, regardless of maxNetworkRetries): build it with { httpClient: createGuardedHttpClient() }',
      );
    return client;
  }
  const apiKey = checkToken(PROVIDER, 'apiKey', options.apiKey);
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
    if (url.pathname !== '/' && url.pathname !== '') configError('baseUrl must not carry a path (the SDK adds /v1/…)');
    config.host = url.hostname;
    config.protocol = url.protocol === 'http:' ? 'http' : 'https';
    config.port = url.port || (url.protocol === 'http:' ? '80' : '443');
  }
  return new Stripe(apiKey, config);
}

/** `replaysServerError`: keys Stripe answered with a replayed 5xx; such a key can only replay it, so a lookup searches. */
type Runtime = { readonly client: Stripe; readonly timeoutMs: number; readonly replaysServerError: Set<string> };

const replayValue = (op: StripeOperation) => op.card.storedResult.replayIndicator?.value ?? null;

/** One POST with the key; classified, never thrown. The SDK has no abort option: the frame races the signal. */
async function send(
  rt: Runtime,
  op: StripeOperation,
  params: unknown,
  ctx: Pick<FramedLookupContext, 'businessOperationId' | 'providerKey'>,
): Promise<Outcome> {
  const key = ctx.providerKey!; // Stripe's key rule is never null
  try {
    const body = op.toStripe(params as Record<string, unknown>, ctx.businessOperationId);
    const options = { idempotencyKey: key, maxNetworkRetries: 0, timeout: rt.timeoutMs } as const;
    return classifyStripeResult(await op.create(rt.client, body, options), replayValue(op));
  } catch (error) {
    const outcome = classifyStripeError(error, op.object, replayValue(op));
    if (
      outcome.kind === 'unknown' &&
      outcome.cause === 'server-error' &&
      replayedByCard((error as { headers?: Record<string, string> }).headers, replayValue(op))
    ) {
      if (rt.replaysServerError.size > 10_000) rt.replaysServerError.clear();
      rt.replaysServerError.add(key);
    }
    return outcome;
  }
}

/**
 * The one object carrying the id: a PaymentIntent this create confirmed, whose confirmation failed, is the 402 it
 * was, not a success; one created unconfirmed was created, whatever a later confirmation (Stripe.js) did. Two are a
 * duplicate already made: adopting one would hide the other from a person.
 */
function adoptFound(op: StripeOperation, found: StripeObject[], params: unknown): LookupResult {
  if (found.length > 1) {
    const ids = found.map((o) => String(o.id));
    const reason = `${found.length} objects carry this operation's id in metadata: ${ids.join(', ')}`;
    return { kind: 'cannot-tell', reason, duplicates: ids };
  }
  const object = found[0]!;
  const confirmed = (params as { confirm?: unknown } | null)?.confirm === true;
  const failed = confirmed
    ? (object.last_payment_error as { code?: string; message?: string } | null | undefined)
    : undefined;
  if (failed && typeof object.id === 'string') {
    const code = typeof failed.code === 'string' ? { code: failed.code } : {};
    const message = failed.message ?? 'the payment failed';
    const outcome = { kind: 'rejected', reason: 'card-declined', message, created: object.id, ...code } as const;
    return { kind: 'found', outcome };
  }
  const outcome = classifyStripeResult(object, replayValue(op));
  return { kind: 'found', outcome: { ...(outcome as Extract<Outcome, { kind: 'succeeded' }>), kind: 'succeeded' } };
}

/** Past the key's retention: find the object by the business-operation id in its metadata. */
async function findByMetadata(
  rt: Runtime,
  op: StripeOperation,
  ctx: FramedLookupContext,
  why: string,
  missIsCannotTell: boolean,
): Promise<LookupResult> {
  const how = op.pastRetention.kind;
  let found: StripeObject[];
  try {
    found = await op.pastRetention.find(rt.client, ctx);
  } catch (error) {
    const o = classifyStripeError(error) as Outcome & { message?: string };
    const reason = `${why}; the metadata ${how} failed (${o.kind}): ${o.message ?? ''}`.trim();
    return cannotTellFrom(o, reason);
  }
  if (found.length > 0) return adoptFound(op, found, ctx.params);
  if (missIsCannotTell)
    return {
      kind: 'cannot-tell',
      reason: `${why}; no object carries this operation's id in the metadata ${how} yet`,
      retryAfterMs: SEARCH_POLL_MS,
    };
  return {
    kind: 'not-found',
    reason: `${why}; no ${op.name.split('.')[0]} carries metadata.retrysafe_operation_id = this id (${how} asked past the card's late-apply and consistency bounds)`,
  };
}

/** Inside retention: re-send the identical request with the same key; Stripe replays what it stored. */
async function resendWithKey(rt: Runtime, op: StripeOperation, ctx: FramedLookupContext) {
  const problems = operationParamsErrors(op, ctx.params).map((f) => `${f.path} ${f.message}`);
  if (problems.length > 0) {
    const reason = `the recorded params are not valid now (${problems.join('; ')}), so they cannot be re-sent`;
    return { kind: 'cannot-tell', reason } as const;
  }
  const o = await send(rt, op, ctx.params, ctx);
  // The key now holds a 5xx and will replay it: only the metadata lookup can tell whether the object exists.
  if (o.kind === 'unknown' && o.cause === 'server-error')
    return findByMetadata(
      rt,
      op,
      ctx,
      `Stripe stored a ${o.status ?? '5xx'} for this key, which a re-send only replays`,
      true,
    );
  return lookupFromOutcome(o, `re-send with the same key${o.kind === 'not-applied' ? ' was not processed' : ''}`);
}

async function lookup(rt: Runtime, op: StripeOperation, ctx: FramedLookupContext): Promise<LookupResult> {
  if (ctx.firstDispatchedAt === null)
    return { kind: 'not-found', reason: 'never dispatched: nothing was sent to Stripe' };
  // The frame's answer (the runner's, else the card rule with the caller's margin): never one of our own.
  if (ctx.keyReusable && rt.replaysServerError.has(ctx.providerKey!))
    return findByMetadata(rt, op, ctx, 'Stripe stored a 5xx for this key, which a re-send only replays', true);
  if (ctx.keyReusable) return resendWithKey(rt, op, ctx);
  // Never rely on the key again: only the metadata lookup answers, and whether its miss proves absence is the card's
  // rule (the runner's too): today's cards bound no late apply, so never.
  const proof = absenceProvenFrom(op.card, ctx);
  const settled = notFoundIsAuthoritative(op.card, ctx);
  const age = Math.round((ctx.now - ctx.firstDispatchedAt) / 60_000);
  const retention = String(op.card.retention.minimum.value);
  const open =
    'never' in proof
      ? `; a miss proves nothing: ${proof.never}`
      : `; a miss proves nothing until ${new Date(proof.at).toISOString()}`;
  const why = `key is ${age} min old (past the card's ${retention} retention${settled ? '' : open})`;
  return findByMetadata(rt, op, ctx, why, !settled);
}

/** Stripe's creates, each with an Idempotency-Key and the business-operation id in metadata; the SDK never retries. */
export function createStripeAdapter(options: StripeAdapterOptions): StripeAdapter {
  if (typeof options !== 'object' || options === null) configError('options are required');
  const timeoutMs = positiveInteger(PROVIDER, 'timeoutMs', options.timeoutMs, 30_000);
  const rt: Runtime = { client: buildClient(options, timeoutMs), timeoutMs, replaysServerError: new Set() };
  // close: the guarded Node client uses the SDK's shared keep-alive agent; nothing of ours to release.
  return defineAdapter({
    provider: PROVIDER,
    account: options.account,
    operations: stripeOperations,
    execute: (op, params, ctx) => send(rt, op, params, ctx),
    lookup: (op, ctx) => lookup(rt, op, ctx),
  });
}
