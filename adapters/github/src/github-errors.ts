import type { FieldError, LookupResult, Outcome, ProviderRefs } from '@retrysafe/contract';
import {
  answeredAt,
  cannotTellFrom,
  clipMessage,
  noAnswerOutcome,
  parseRetryAfter,
  retryAfterOf,
} from '@retrysafe/contract/provider';

/**
 * Maps every GitHub answer and every transport failure into exactly one Outcome, keeping the HTTP
 * status and the `x-github-request-id`; the table is in docs/adapters/github.md, "Outcomes".
 */

/** What the SDK threw or returned: a RequestError carries `status` and, when GitHub answered, `response`. */
export interface GitHubAnswer {
  readonly status: number;
  readonly headers: Record<string, unknown>;
  readonly data: unknown;
}

/** Without a documented wait, GitHub asks for at least a minute before retrying a rate-limited request, and
 * "an exponentially increasing amount of time" while it goes on: its n-th such answer in a row waits 2^(n-1) minutes. */
export const DEFAULT_RATE_LIMIT_WAIT_MS = 60_000;
const waitOf = (inARow: number) => DEFAULT_RATE_LIMIT_WAIT_MS * 2 ** inARow;

const header = (a: GitHubAnswer, name: string): string | undefined => {
  const v = a.headers[name];
  return typeof v === 'string' ? v : typeof v === 'number' ? String(v) : undefined;
};

export function refsOf(a: GitHubAnswer): ProviderRefs {
  const requestId = header(a, 'x-github-request-id');
  return { status: a.status, ...(requestId ? { requestId } : {}) };
}

function messageOf(a: GitHubAnswer): string {
  const m = typeof a.data === 'object' && a.data !== null ? (a.data as { message?: unknown }).message : undefined;
  return clipMessage(typeof m === 'string' && m ? m : `HTTP ${a.status}`);
}

/**
 * The wait a rate-limited answer names, null for a rate limit that names none, undefined when it is no rate limit:
 * retry-after first, then x-ratelimit-reset (epoch seconds) when x-ratelimit-remaining is 0; none for a 429, remaining 0
 * without a readable reset, a 403 whose message says it is a rate limit, or a 422 "was submitted too quickly".
 * A 403 with none of these is a permission refusal (docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api).
 */
function namedWaitMs(a: GitHubAnswer, now: number): number | null | undefined {
  // The content-creation limit answers 422 with this in errors[]; nothing was created (github.com/cli/cli/issues/4801).
  const tooQuickly =
    a.status === 422 && [messageOf(a), ...fieldErrors(a).map((f) => f.message)].some((m) => /too quickly/i.test(m));
  if (a.status !== 403 && a.status !== 429 && !tooQuickly) return undefined;
  const retryAfter = parseRetryAfter(header(a, 'retry-after'), header(a, 'date'), now);
  if (retryAfter !== undefined) return retryAfter;
  // GitHub's page: remaining 0 on a 403/429 is the primary rate limit, whatever the body says.
  const exhausted = header(a, 'x-ratelimit-remaining') === '0';
  const reset = header(a, 'x-ratelimit-reset');
  // The reset is an instant on GitHub's clock: measured from its Date header, a local clock running ahead still waits.
  if (exhausted && /^\d+$/.test(reset ?? ''))
    return Math.max(0, Number(reset) * 1000 - answeredAt(header(a, 'date'), now));
  // Secondary rate limits were once called abuse rate limits; older servers still answer in those words.
  if (exhausted || a.status === 429 || tooQuickly || /rate limit|abuse/i.test(messageOf(a))) return null;
  return undefined;
}

/** The wait a rate-limited answer asks for (undefined: no rate limit); `inARow`: the request's limits naming no wait just before. */
export function rateLimitWaitMs(a: GitHubAnswer, now: number = Date.now(), inARow = 0): number | undefined {
  const wait = namedWaitMs(a, now);
  return wait === null ? waitOf(inARow) : wait;
}

/** GitHub's 422 `errors[]`: each names a `field` (and `resource`, `code`, sometimes a `message`). */
export function fieldErrors(a: GitHubAnswer): FieldError[] {
  const errors = typeof a.data === 'object' && a.data !== null ? (a.data as { errors?: unknown }).errors : undefined;
  if (!Array.isArray(errors)) return [];
  return errors.map((e) => {
    if (typeof e === 'string') return { path: '(params)', message: e };
    const o = (typeof e === 'object' && e !== null ? e : {}) as Record<string, unknown>;
    const path = typeof o.field === 'string' ? o.field : '(params)';
    const detail = [o.code, o.message].filter((x): x is string => typeof x === 'string' && x.length > 0).join(': ');
    return { path, message: detail || 'invalid' };
  });
}

/** Classifies a non-2xx answer. */
export function outcomeFromAnswer(a: GitHubAnswer, now: number = Date.now(), inARow = 0): Outcome {
  const refs = refsOf(a);
  const message = messageOf(a);
  const wait = rateLimitWaitMs(a, now, inARow);
  if (wait !== undefined)
    return { kind: 'not-applied', message: `rate limited: ${message}`, retryAfterMs: wait, ...refs };
  const s = a.status;
  if (s === 422) {
    const fields = fieldErrors(a);
    const named = fields.length > 0 ? ` (${fields.map((f) => `${f.path}: ${f.message}`).join('; ')})` : '';
    return {
      kind: 'rejected',
      reason: 'validation',
      message: `${message}${named}`,
      ...(fields.length > 0 ? { fields } : {}),
      ...refs,
    };
  }
  if (s === 400) return { kind: 'rejected', reason: 'validation', message, ...refs };
  if (s === 401) return { kind: 'rejected', reason: 'authentication', message, ...refs };
  if (s === 403) return { kind: 'rejected', reason: 'permission', message, ...refs };
  if (s === 404) return { kind: 'rejected', reason: 'not-found', message, ...refs };
  if (s >= 400 && s < 500) return { kind: 'rejected', reason: 'other', message, ...refs };
  if (s >= 500)
    return {
      kind: 'unknown',
      cause: 'server-error',
      message,
      ...refs,
      ...retryAfterOf(header(a, 'retry-after'), header(a, 'date')),
    };
  return { kind: 'unknown', cause: 'other', message: `unexpected HTTP ${s}`, ...refs };
}

/** The answer of a thrown SDK error, or null when GitHub never answered. */
export function answerOf(error: unknown): GitHubAnswer | null {
  const e = error as { status?: unknown; response?: { status?: unknown; headers?: unknown; data?: unknown } } | null;
  const r = e?.response;
  if (!r || typeof r.status !== 'number') return null;
  return { status: r.status, headers: (r.headers ?? {}) as Record<string, unknown>, data: r.data };
}

/** Every thrown SDK error as one outcome. */
export function outcomeFromError(error: unknown, now: number = Date.now()): Outcome {
  const answer = answerOf(error);
  return answer ? outcomeFromAnswer(answer, now) : noAnswerOutcome(error);
}

/** A lookup call that failed (its outcome): never "not found" (a failed list proves nothing). */
export function cannotTell(o: Outcome, what: string): LookupResult {
  return cannotTellFrom(o, `${what}: ${'message' in o ? o.message : o.kind}`);
}

/**
 * "If your request continues to fail due to a secondary rate limit, wait for an exponentially increasing amount of time":
 * each request (a key: an operation's creates, a repository GET, ...) counts its own limits naming no wait, once per
 * answer however many callers share it; an answer GitHub processed (a pass, a refusal) ends the count. Times are
 * GitHub's (its Date header), as the waits it asks for are.
 */
export function secondaryLimits() {
  // Per key: the current wait is a minute doubled `inARow` times, and it ends at `until`.
  const rows = new Map<string, { inARow: number; until: number }>();
  const seen = new WeakMap<object, Outcome>();
  return {
    ok<T>(answer: T, key: string): T {
      rows.delete(key);
      return answer;
    },
    failed(error: unknown, key: string): Outcome {
      const answer = answerOf(error);
      if (!answer) return noAnswerOutcome(error);
      const known = seen.get(error as object);
      if (known) return known;
      const now = Date.now();
      const at = answeredAt(header(answer, 'date'), now);
      // A request not sent again within as long again as its wait has stopped (handed off, aborted): its count goes.
      for (const [k, r] of rows) if (at > r.until + waitOf(r.inARow)) rows.delete(k);
      const row = rows.get(key);
      // A request sent while an earlier one's wait runs (another caller's) gets that wait; one sent after, twice it.
      const during = row !== undefined && at < row.until;
      const inARow = row === undefined ? 0 : during ? row.inARow : row.inARow + 1;
      const o = outcomeFromAnswer(answer, now, inARow);
      if (namedWaitMs(answer, now) === null) {
        if (!during) rows.set(key, { inARow, until: at + waitOf(inARow) });
      } else if (o.kind === 'rejected') rows.delete(key);
      seen.set(error as object, o);
      return o;
    },
  };
}
