import type { LookupResult, Outcome, ProviderRefs, RejectReason } from '@retrysafe/contract';
import {
  cannotTellFrom as cannotTellFromOutcome,
  clipMessage,
  noAnswerOutcome,
  parseRetryAfter,
  retryAfterOf,
} from '@retrysafe/contract/provider';
import type { WireRecord } from './hubspot-http.js';

// HubSpot does not document a 5xx as "not processed", so it is unknown; its rate limiters answer before the write,
// so a 429 is not-applied.

/** A HubSpot answer from the wire record: lower-case header names; the body parsed when JSON, else its text. */
export interface HubSpotResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: unknown;
}

const DAY_MS = 86_400_000;
const LOCK_MS = 2_000;

function field(body: unknown, name: string): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const v = (body as Record<string, unknown>)[name];
  return typeof v === 'string' && v.length > 0 ? v : undefined;
}

/** Status, code and request id of an answer: the error body's correlationId, else X-HubSpot-Correlation-Id. */
export function refs(res: HubSpotResponse, code?: string): ProviderRefs {
  const requestId = field(res.body, 'correlationId') ?? res.headers['x-hubspot-correlation-id'];
  return { status: res.status, ...(code ? { code } : {}), ...(requestId ? { requestId } : {}) };
}

/** The wait a 429 implies: Retry-After if sent, else what the policy and the rate-limit headers say. */
export function rateLimitWaitMs(res: HubSpotResponse): number {
  const retryAfter = parseRetryAfter(res.headers['retry-after'], res.headers.date);
  if (retryAfter !== undefined) return retryAfter;
  const interval = Number(res.headers['x-hubspot-ratelimit-interval-milliseconds']);
  const policy = field(res.body, 'policyName');
  const message = field(res.body, 'message') ?? '';
  if (policy === 'DAILY' || /daily limit/i.test(message))
    return Number.isFinite(interval) && interval >= DAY_MS ? interval : DAY_MS;
  if (policy === 'SECONDLY' || /secondly limit/i.test(message)) return 1000;
  return Number.isFinite(interval) && interval > 0 ? interval : 10_000;
}

/**
 * A unique-value collision: the shape HubSpot documents for contacts (409, category CONFLICT, "… already exists.
 * Existing ID: N"), or the 400 it also answers ("Cannot set PropertyValueCoordinates{…} on M. N already has that value.").
 */
export function uniqueConflictOf(res: HubSpotResponse): { readonly existingId: string | null } | null {
  if (res.status < 400 || res.status >= 500) return null;
  const category = field(res.body, 'category');
  const message = field(res.body, 'message') ?? '';
  const taken = /(\d+) already has that value/i.exec(message);
  if (res.status !== 409 && category !== 'CONFLICT' && !taken) return null;
  const m = /Existing ID:\s*(\d+)/i.exec(message) ?? taken;
  return { existingId: m ? m[1]! : null };
}

/** The rejection reason of a 4xx status (any other 4xx is 'other'). */
const REJECTED: Partial<Record<number, RejectReason>> = {
  400: 'validation',
  401: 'authentication',
  403: 'permission',
  404: 'not-found',
};

function outcomeFromResponse(res: HubSpotResponse): Outcome {
  const category = field(res.body, 'category');
  const message = clipMessage(
    field(res.body, 'message') ?? (typeof res.body === 'string' && res.body ? res.body : `HTTP ${res.status}`),
  );
  const s = res.status;
  const wait = retryAfterOf(res.headers['retry-after'], res.headers.date);
  if (s === 429) {
    const code = field(res.body, 'policyName') ?? field(res.body, 'errorType') ?? 'RATE_LIMIT';
    return { kind: 'not-applied', message, retryAfterMs: rateLimitWaitMs(res), ...refs(res, code) };
  }
  // Refusals HubSpot's error page tells callers to retry: a 423 lock "will last for 2 seconds"; a 477 sends Retry-After.
  if (s === 423) {
    const retryAfterMs = Math.max(wait.retryAfterMs ?? 0, LOCK_MS);
    return { kind: 'not-applied', message, retryAfterMs, ...refs(res, category) };
  }
  if (s === 477) return { kind: 'not-applied', message, ...wait, ...refs(res, category) };
  const conflict = uniqueConflictOf(res);
  if (conflict) {
    return {
      kind: 'rejected',
      reason: 'conflict',
      message,
      ...refs(res, category ?? 'CONFLICT'),
      ...(conflict.existingId ? { providerRef: conflict.existingId } : {}),
    };
  }
  if (s >= 400 && s < 500) return { kind: 'rejected', reason: REJECTED[s] ?? 'other', message, ...refs(res, category) };
  const cause = s >= 500 ? 'server-error' : 'other';
  return { kind: 'unknown', cause, message, ...refs(res, category), ...wait };
}

/** Maps a failure with no HTTP answer (fetch's `TypeError: fetch failed` and its cause, a timeout, an abort). */
export function outcomeFromNetworkError(err: unknown, wire: WireRecord): Outcome {
  if (!wire.started) {
    // The SDK refused to build the request: nothing was sent, and the same input would fail the same way.
    return {
      kind: 'rejected',
      reason: 'validation',
      message: clipMessage(`the SDK could not build the request: ${err instanceof Error ? err.message : String(err)}`),
    };
  }
  return noAnswerOutcome(err);
}

/** The whole HTTP answer behind a failed SDK call, if one arrived: every answer passes our transport, which records it. */
export function responseOf(wire: WireRecord): HubSpotResponse | null {
  if (wire.status === undefined || !wire.headers || wire.bodyError !== undefined) return null;
  const text = wire.bodyText || undefined;
  let body: unknown = text;
  if (text && wire.headers['content-type']?.includes('json'))
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON after all: the text
    }
  return { status: wire.status, headers: wire.headers, body };
}

/** One failed SDK call → one Outcome; a 2xx the SDK could not process was applied but is unreadable (unknown). */
export function outcomeFromFailure(err: unknown, wire: WireRecord): Outcome {
  if (wire.status !== undefined && wire.bodyError !== undefined) {
    return {
      kind: 'unknown',
      cause: 'truncated-response',
      message: 'the answer broke off while its body was read',
      status: wire.status,
    };
  }
  const res = responseOf(wire);
  if (res) {
    if (res.status >= 200 && res.status < 300) {
      const why = err instanceof Error ? err.message : String(err);
      const message = clipMessage(`HubSpot answered ${res.status} but the SDK could not read it: ${why}`);
      return { kind: 'unknown', cause: 'truncated-response', message, ...refs(res) };
    }
    return outcomeFromResponse(res);
  }
  return outcomeFromNetworkError(err, wire);
}

/** A lookup request that failed (`o`, a refusal too): never "absent", only "cannot tell", keeping its refs and wait. */
export function cannotTellFrom(o: Outcome, what: string): LookupResult {
  return cannotTellFromOutcome(o, `${what} failed (${o.kind}): ${'message' in o ? o.message : o.kind}`);
}
