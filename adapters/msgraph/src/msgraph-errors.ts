import type { LookupResult, Outcome, ProviderRefs } from '@retrysafe/contract';
import { clipMessage, describeFailure, type NoAnswerOutcome, retryAfterOf } from '@retrysafe/contract/provider';

// Graph has delivered mail after a 503/504, so a 5xx is unknown; throttled requests fail, so a 429 is not-applied.

/** A Graph HTTP answer; `body` is null when there was none or it was not JSON. */
export interface GraphHttpAnswer {
  readonly status: number;
  readonly headers: Headers;
  readonly body: unknown;
}

type GraphErrorBody = { error?: { code?: unknown; message?: unknown; innerError?: Record<string, unknown> } };

const str = (v: unknown) => (typeof v === 'string' ? v : undefined);

/** Status, Graph error code and request id of an answer (request id from the header, else the error body). */
export function refsOf(answer: GraphHttpAnswer): ProviderRefs {
  const err = (answer.body as GraphErrorBody | null)?.error;
  const code = str(err?.code);
  const requestId = answer.headers.get('request-id') ?? str(err?.innerError?.['request-id']);
  return { status: answer.status, ...(code !== undefined ? { code } : {}), ...(requestId ? { requestId } : {}) };
}

function messageOf(answer: GraphHttpAnswer): string {
  return clipMessage(str((answer.body as GraphErrorBody | null)?.error?.message) || `HTTP ${answer.status}`);
}

/** The rejection reason of a refused status (any other 4xx is 'other'); 507 is the mailbox quota. */
const REJECTED: Partial<Record<number, Extract<Outcome, { kind: 'rejected' }>['reason']>> = {
  ...Object.fromEntries([400, 405, 413, 415, 422].map((s) => [s, 'validation' as const])),
  401: 'authentication',
  403: 'permission',
  404: 'not-found',
  409: 'conflict',
  507: 'other',
};

/** Classifies a non-2xx Graph answer; with `conflictMayMeanApplied` (events' transactionId) a 409 is unknown. */
export function outcomeFromErrorAnswer(
  answer: GraphHttpAnswer,
  options: { readonly conflictMayMeanApplied?: boolean } = {},
): Outcome {
  const refs = refsOf(answer);
  const message = messageOf(answer);
  const ra = retryAfterOf(answer.headers.get('retry-after'), answer.headers.get('date'));
  const s = answer.status;
  if (s === 429) return { kind: 'not-applied', message: `throttled: ${message}`, ...ra, ...refs };
  if (s === 409 && options.conflictMayMeanApplied) {
    const why = `409 may mean the first request already created it: ${message}`;
    return { kind: 'unknown', cause: 'other', message: why, ...ra, ...refs };
  }
  const reason = REJECTED[s] ?? (s >= 400 && s < 500 ? 'other' : undefined);
  if (reason) return { kind: 'rejected', reason, message, ...refs };
  if (s >= 500) return { kind: 'unknown', cause: 'server-error', message, ...ra, ...refs };
  // 1xx/3xx reaching here (redirects are not followed for POST by this chain): cannot tell.
  return { kind: 'unknown', cause: 'other', message: `unexpected HTTP ${s}`, ...ra, ...refs };
}

/** Nothing was sent: the token provider failed or returned no token. */
export function outcomeFromTokenError(error: unknown): NoAnswerOutcome {
  return {
    kind: 'not-applied',
    message: `no access token, nothing was sent: ${describeFailure(error)}`,
    neverSent: true,
  };
}

/** A lookup that failed or could not decide: never "not-found" (absence proves nothing while the delay is unknown). */
export function cannotTellFromAnswer(answer: GraphHttpAnswer, what: string): LookupResult {
  const reason = `${what} failed with HTTP ${answer.status}: ${messageOf(answer)}`;
  const wait = retryAfterOf(answer.headers.get('retry-after'), answer.headers.get('date'));
  return { kind: 'cannot-tell', reason, ...wait, ...refsOf(answer) };
}
