import type { Outcome, ProviderRefs, RejectReason, UnknownCause } from '@retrysafe/contract';
import { noAnswerOutcome, retryAfterOf } from '@retrysafe/contract/provider';
import { isReplayedAnswer, type ReplayIndicatorValue } from '@retrysafe/contract/rules';
import type Stripe from 'stripe';

// A 5xx is stored and replayed by the key, so it is unknown; a 429 is answered before the idempotency layer, so it
// is not-applied (docs/evidence/stripe.md).

type Headers = Record<string, string | string[] | undefined>;

type StripeErrorLike = Partial<Stripe.errors.StripeError> & { readonly [field: string]: unknown };

/** Node hands headers over with lower-case names. */
function header(headers: Headers | undefined, name: string): string | undefined {
  const v = headers?.[name.toLowerCase()];
  return Array.isArray(v) ? v[0] : v;
}

/** Whether Stripe answered from the key's store: the card's replay indicator, by the contract's rule. */
export function replayedByCard(headers: Headers | undefined, indicator: ReplayIndicatorValue | null): boolean {
  return isReplayedAnswer(indicator ?? null, (name) => header(headers, name));
}

/** Short and single-line; the runner redacts it again before receipts. A cut ends with `…`, which tells the redactor
 * that a credential or an address may end there. */
function short(text: string | undefined, fallback: string): string {
  const t = (text ?? '').replace(/\s+/g, ' ').trim() || fallback;
  return t.length > 300 ? `${t.slice(0, 300)}…` : t;
}

/** A 2xx result: `replayed` when it carries the card's replay indicator. */
export function classifyStripeResult(
  result: { id?: unknown; lastResponse?: { headers?: Headers; requestId?: string; statusCode?: number } },
  indicator: ReplayIndicatorValue | null,
): Outcome {
  const last = result.lastResponse;
  const plain = JSON.parse(JSON.stringify(result)) as unknown;
  const requestId = last?.requestId ?? header(last?.headers, 'request-id');
  return {
    kind: replayedByCard(last?.headers, indicator) ? 'replayed' : 'succeeded',
    result: plain,
    status: typeof last?.statusCode === 'number' ? last.statusCode : 200,
    ...(requestId ? { requestId } : {}),
    ...(typeof result.id === 'string' ? { providerRef: result.id } : {}),
  };
}

const REJECTED: Partial<Record<number, RejectReason>> = {
  400: 'validation',
  401: 'authentication',
  402: 'card-declined',
  403: 'permission',
  404: 'not-found',
};

/**
 * Any error thrown for one attempt; never throws. An error body carrying a `creates` object (a declined confirm's
 * PaymentIntent) names it as created; a 5xx carrying the card's replay `indicator` is marked as the key's stored one.
 */
export function classifyStripeError(
  error: unknown,
  creates?: string,
  indicator: ReplayIndicatorValue | null = null,
): Outcome {
  const e = (typeof error === 'object' && error !== null ? error : { message: String(error) }) as StripeErrorLike;
  const stripeCode = e.code ?? e.rawType;
  const requestId = e.requestId ?? header(e.headers, 'request-id');
  const r: ProviderRefs = {
    ...(typeof e.statusCode === 'number' ? { status: e.statusCode } : {}),
    ...(stripeCode ? { code: stripeCode } : {}),
    ...(requestId ? { requestId } : {}),
  };
  const { statusCode: status, type, rawType } = e;
  const msg = (fallback: string) => short(e.message, fallback);
  const unknown = (cause: UnknownCause, message: string, extra: ProviderRefs & { retryAfterMs?: number } = {}) =>
    ({ kind: 'unknown', cause, message, ...r, ...extra }) as const;
  const waitRef = retryAfterOf(header(e.headers, 'retry-after'), header(e.headers, 'date'));

  if (
    type === 'StripeConnectionError' ||
    (status === undefined && e.detail !== undefined && type?.startsWith('Stripe'))
  ) {
    // A body that broke off after the headers (stripe-node's HttpClientResponseBodyError) is an answer cut short.
    const o = noAnswerOutcome(e.detail, e.message);
    const cut = (e.detail as Error | undefined)?.constructor?.name === 'HttpClientResponseBodyError';
    return { ...r, ...o, ...(cut && o.kind === 'unknown' && { cause: 'truncated-response' as const }) };
  }
  // Invalid JSON from the API, an HttpClientRuntimeError, or a bug around the SDK: the request may have been sent.
  if (status === undefined)
    return unknown(type === 'StripeAPIError' ? 'truncated-response' : 'other', msg('unclassified error'));
  // The code names the key in flight (docs.stripe.com/error-codes); the type does not: docs.stripe.com/api/errors
  // gives idempotency_error to a key reused with other parameters.
  if (status === 409 && (rawType === 'idempotency_error' || e.code === 'idempotency_key_in_use')) {
    const code = e.code ?? 'idempotency_key_in_use';
    return { kind: 'in-progress', message: msg('another request with this key is in progress'), ...r, code };
  }
  if (type === 'StripeIdempotencyError' || (rawType === 'idempotency_error' && status === 400)) {
    const message = msg('idempotency key reused with different parameters');
    return { kind: 'rejected', reason: 'conflict', message, ...r, code: e.code ?? 'idempotency_error' };
  }
  if (status === 429 || type === 'StripeRateLimitError')
    return { kind: 'not-applied', message: msg('rate limited before the idempotency layer'), ...r, ...waitRef };
  if (status === 409) return unknown('other', msg('conflict'));
  if (status >= 500) {
    const replayed = replayedByCard(e.headers, indicator) ? 'stored 5xx replayed for this key: ' : '';
    return unknown('server-error', `${replayed}${msg(`HTTP ${status}`)}`, waitRef);
  }
  const reason = REJECTED[status] ?? 'other';
  // Stripe names the offending parameter (error.param): passed on so a caller (or an agent) can correct it.
  const fields =
    typeof e.param === 'string' && e.param.length > 0
      ? { fields: [{ path: e.param, message: e.code ?? `rejected (${reason})` }] }
      : {};
  const left = creates === undefined ? undefined : (e[creates] as { id?: unknown } | undefined)?.id;
  const created = typeof left === 'string' && left.length > 0 ? { created: left } : {};
  return { kind: 'rejected', reason, message: short(e.message, `HTTP ${status}`), ...r, ...fields, ...created };
}
