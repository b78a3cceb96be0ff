import type { LookupContext } from '../adapter.js';
import { definedFields } from '../canonical.js';
import type { RetrySafetyCard } from '../card.js';
import { absenceProvenFrom, notFoundIsAuthoritative } from '../card-rules.js';
import { IntentLookupError, InvalidIntentError } from '../errors.js';
import type { LookupResult, Outcome, RejectReason, UnknownCause } from '../outcome.js';

// Codes that prove the request never reached the provider's HTTP layer. Not ETIMEDOUT: an established socket
// raises it too (only a `connect ETIMEDOUT` proves it, below).
export const NEVER_SENT_CODES: ReadonlySet<string> = new Set([
  // name resolution; routing / addressing
  ...['ENOTFOUND', 'EAI_AGAIN', 'EAI_NONAME', 'EAI_FAIL', 'ENETUNREACH', 'EHOSTUNREACH', 'ENETDOWN', 'EHOSTDOWN'],
  // the address, the connection refused or never completed (Node's autoSelectFamily connect cancelled too)
  ...['EADDRNOTAVAIL', 'ECONNREFUSED', 'UND_ERR_CONNECT_TIMEOUT', 'ERR_SOCKET_CONNECTION_TIMEOUT'],
  // the TLS handshake failed: no request byte was written
  ...['ERR_TLS_CERT_ALTNAME_INVALID', 'CERT_HAS_EXPIRED', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN'],
  ...['UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'ERR_SSL_WRONG_VERSION_NUMBER'],
  // the request could not be built; node:http refuses a header (a credential with a CR from a .env file) when it is
  // set, and a path with a space, a control character or one above U+00FF when the request is made
  ...['ERR_INVALID_URL', 'ERR_INVALID_PROTOCOL', 'ERR_INVALID_CHAR', 'ERR_INVALID_HTTP_TOKEN'],
  ...['ERR_HTTP_INVALID_HEADER_VALUE', 'ERR_UNESCAPED_CHARACTERS'],
]);

const TIMEOUT_CODES = new Set([
  ...['ETIMEDOUT', 'ESOCKETTIMEDOUT', 'ECONNABORTED', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT'],
]);
const RESET_CODES = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED']);
const TRUNCATED_CODES = new Set([
  ...['ERR_STREAM_PREMATURE_CLOSE', 'ERR_BAD_RESPONSE', 'Z_BUF_ERROR', 'Z_DATA_ERROR'],
  'UND_ERR_RES_CONTENT_LENGTH_MISMATCH',
]);

export type TransportFailure =
  | { readonly sent: 'never'; readonly code: string }
  | { readonly sent: 'maybe'; readonly cause: UnknownCause; readonly code?: string };

type CodedError = { readonly code: string; readonly syscall?: unknown };

/** Along the `cause` chain and inside an AggregateError (fetch and happy-eyeballs wrap them). */
function codedErrors(e: unknown, seen = new Set<unknown>(), depth = 0): CodedError[] {
  if (depth > 6 || e === null || typeof e !== 'object' || seen.has(e)) return [];
  seen.add(e);
  const o = e as { code?: unknown; syscall?: unknown; cause?: unknown; errors?: unknown };
  // A wrapper repeating the code of what it wraps (Node's AggregateError: its first error's; axios: its cause's),
  // without the syscall: the wrapped error speaks for it.
  const inner = (Array.isArray(o.errors) ? o.errors[0] : o.cause) as { code?: unknown } | null | undefined;
  const mirrors = typeof inner === 'object' && inner !== null && inner.code === o.code;
  const own = typeof o.code === 'string' && !mirrors ? [{ code: o.code, syscall: o.syscall }] : [];
  const wrapped = [o.cause, ...(Array.isArray(o.errors) ? o.errors : [])];
  return [...own, ...wrapped.flatMap((w) => codedErrors(w, seen, depth + 1))];
}

// A routing code (EHOSTUNREACH, ENETDOWN…) also ends an established socket, raised by `read` or `write` after the
// request went out: it proves "never sent" only from connecting or name resolution (or with no syscall named).
// ETIMEDOUT proves it only from `connect`: the TCP handshake never completed.
const provesNeverSent = ({ code, syscall }: CodedError) =>
  (code === 'ETIMEDOUT' && syscall === 'connect') ||
  (NEVER_SENT_CODES.has(code) &&
    (syscall === undefined ||
      syscall === 'connect' ||
      (typeof syscall === 'string' && /^(getaddrinfo|query)/.test(syscall))));

/** The error and its `cause`s, outermost first (fetch and SDKs wrap the socket error, a timeout or an abort). */
function causeChain(error: unknown): Partial<Error>[] {
  const chain: Partial<Error>[] = [];
  for (let e = error; e !== null && typeof e === 'object' && !chain.includes(e) && chain.length < 6; ) {
    chain.push(e);
    e = (e as Partial<Error>).cause;
  }
  return chain;
}

// fetch refuses a request it cannot build with a bare TypeError (no code) before it connects: a header name or value
// (a line break, a character above U+00FF), the method, a body on GET, user-info in the URL.
const NOT_BUILT_BY_FETCH =
  /is an invalid header (name|value)|convert argument to a ByteString|is not a valid HTTP method|HTTP method is unsupported|method cannot have body|URL that includes credentials/;

const NOT_BUILT =
  'fetch refused to build the request: a header name or value it cannot carry (a line break, a character above U+00FF), the method, a body on GET or user-info in the URL';

/** Classifies a failure without a response: `never` only when every code found proves it was not sent. */
export function classifyTransportFailure(error: unknown): TransportFailure {
  const coded = codedErrors(error);
  const codes = coded.map((e) => e.code);
  const chain = causeChain(error);
  if (chain.some((e) => e.name === 'TypeError' && NOT_BUILT_BY_FETCH.test(String(e.message))))
    return { sent: 'never', code: 'REQUEST_NOT_BUILT' };
  const names = chain.map((e) => e.name);
  const text = typeof chain[0]?.message === 'string' ? chain[0].message : '';
  const first = codes[0];
  if (coded.length > 0 && coded.every(provesNeverSent)) return { sent: 'never', code: first! };
  const code = coded.find((e) => !provesNeverSent(e))?.code ?? first;
  let cause: UnknownCause = 'other';
  // An abort (the runner's deadline, a caller's signal) while in flight is a timeout: the request may have landed.
  if (codes.some((c) => TIMEOUT_CODES.has(c)) || names.includes('TimeoutError') || names.includes('AbortError'))
    cause = 'timeout';
  else if (codes.some((c) => RESET_CODES.has(c)) || /socket hang up/i.test(text)) cause = 'connection-reset';
  else if (codes.some((c) => TRUNCATED_CODES.has(c)) || /premature|terminated/i.test(text))
    cause = 'truncated-response';
  return code !== undefined ? { sent: 'maybe', cause, code } : { sent: 'maybe', cause };
}

/** What a call with no answer comes to. */
export type NoAnswerOutcome = Extract<Outcome, { kind: 'not-applied' | 'unknown' }>;

const NO_ANSWER: Partial<Record<UnknownCause, string>> = {
  timeout: 'no answer within the timeout',
  'connection-reset': 'connection closed before the answer',
  'truncated-response': 'the answer broke off',
};

/** Cut short with `…`, which tells the redactor that a credential or an address may end at the cut. */
export const clipMessage = (text: string) => (text.length > 300 ? `${text.slice(0, 300)}…` : text);

/** The messages along the `cause` chain, each once, then the codes, clipped. */
export function describeFailure(error: unknown, what?: string): string {
  const messages = new Set(what ? [what] : []);
  for (const { message } of causeChain(error)) if (typeof message === 'string' && message !== '') messages.add(message);
  const codes = codedErrors(error).map((e) => e.code);
  return clipMessage(([...messages].join(': ') || String(error)) + (codes.length > 0 ? ` (${codes.join(', ')})` : ''));
}

/** A call that got no answer, by classifyTransportFailure: never sent ⇒ not-applied (neverSent), else unknown.
 * `what`: the SDK's own words for the failure, when they are not on the error's `cause` chain. */
export function noAnswerOutcome(error: unknown, what?: string): NoAnswerOutcome {
  const t = classifyTransportFailure(error);
  // fetch's words (and an SDK's copy of them) quote the value refused, which may be a credential.
  const detail =
    t.code === 'REQUEST_NOT_BUILT' ? [what, NOT_BUILT].filter(Boolean).join(': ') : describeFailure(error, what);
  if (t.sent === 'never')
    return { kind: 'not-applied', code: t.code, message: `never sent: ${detail}`, neverSent: true };
  const code = t.code === undefined ? {} : { code: t.code };
  return { kind: 'unknown', cause: t.cause, message: `${NO_ANSWER[t.cause] ?? 'no answer'}: ${detail}`, ...code };
}

/** The provider's `Date` header, else `now`: an instant it names is measured from it. */
export function answeredAt(date: string | null | undefined, now = Date.now()): number {
  const at = typeof date === 'string' ? Date.parse(date) : Number.NaN;
  return Number.isNaN(at) ? now : at;
}

/** One Retry-After value in ms: fractions of seconds round up; a date needs a letter (`Date.parse('1.5')` is one). */
function oneRetryAfter(v: string, from: number): number | undefined {
  // A number too long for a double is a very long wait, never none.
  if (/^\d+(\.\d+)?$/.test(v)) return Math.min(Math.ceil(Number(v) * 1000), Number.MAX_SAFE_INTEGER);
  const at = /[a-z]/i.test(v) ? Date.parse(v) : Number.NaN;
  return Number.isNaN(at) ? undefined : Math.max(0, at - from);
}

/** Retry-After in ms, or `undefined`; sent twice (a list, or folded as '30, 30'): the longest wait. `date`, the answer's
 * `Date` header, is required: an HTTP-date is measured from the provider's clock (RFC 9110 §10.2.3), not ours. */
export function parseRetryAfter(
  value: string | readonly string[] | null | undefined,
  date: string | null | undefined,
  now = Date.now(),
) {
  const from = answeredAt(date, now);
  const values = typeof value === 'string' ? [value] : Array.isArray(value) ? value : [];
  const members: string[] = [];
  for (const part of values.flatMap((v) => (typeof v === 'string' ? v.split(',') : []))) {
    const last = members.length - 1;
    if (last >= 0 && /^(mon|tue|wed|thu|fri|sat|sun)[a-z]*$/i.test(members[last]!)) members[last] += `, ${part.trim()}`;
    else members.push(part.trim());
  }
  const waits = members.map((m) => oneRetryAfter(m, from)).filter((ms) => ms !== undefined);
  return waits.length > 0 ? Math.max(...waits) : undefined;
}

/** What a 401 or 403 refuses, else undefined: the caller, never the operation, so it is a rejection (nothing applied). */
export function callerRefusal(status: number | undefined): RejectReason | undefined {
  return status === 401 ? 'authentication' : status === 403 ? 'permission' : undefined;
}

export function retryAfterOf(
  value: Parameters<typeof parseRetryAfter>[0],
  date: string | null | undefined,
): { retryAfterMs?: number } {
  const retryAfterMs = parseRetryAfter(value, date);
  return retryAfterMs === undefined ? {} : { retryAfterMs };
}

/** A list answer's marker (a next cursor, `has_more`). */
export function saysMoreFollow(marker: unknown): boolean {
  return marker !== undefined && marker !== null && marker !== false && marker !== '' && marker !== 0;
}

/** How many items of `first`'s pages before its last a second walk (`again`) no longer lists: a list paged by number or
 * offset moves the item behind a deleted one onto a page already read, unread (a second item of ours hidden). */
export function goneDuringWalk<T>(
  first: readonly (readonly T[])[],
  again: readonly (readonly T[])[],
  idOf: (item: T) => unknown,
): number {
  const seen = new Set(again.flat().map(idOf));
  const beforeLast = first.slice(0, -1).flat();
  return beforeLast.filter((i) => !seen.has(idOf(i))).length;
}

/** An outcome seen while reconciling, as a lookup result: never `not-found` (the runner decides absence from the card). */
export function lookupFromOutcome(outcome: Outcome, how: string): LookupResult {
  if (outcome.kind !== 'not-applied' && outcome.kind !== 'unknown') return { kind: 'found', outcome };
  return cannotTellFrom(outcome, `${how}: ${outcome.message}`);
}

/** Keeps what the outcome seen says of the answer. */
export function cannotTellFrom(outcome: Outcome, reason: string): Extract<LookupResult, { kind: 'cannot-tell' }> {
  const o = outcome as Outcome & { readonly retryAfterMs?: number };
  return { kind: 'cannot-tell', reason, ...definedFields(o, ['status', 'code', 'requestId', 'retryAfterMs']) };
}

/** Not authoritative: cannot-tell, with the wait left when the card bounds it. `extra`: status, request id, ref. */
export function lookupMiss(card: RetrySafetyCard, ctx: LookupContext, miss: string, extra: object = {}): LookupResult {
  if (notFoundIsAuthoritative(card, ctx)) return { kind: 'not-found', reason: miss, ...extra };
  const proof = absenceProvenFrom(card, ctx);
  if ('never' in proof)
    return { kind: 'cannot-tell', reason: `${miss}; a miss never proves absence: ${proof.never}`, ...extra };
  const reason = `${miss} yet: inside the card's late-apply bound and consistency delay after the last dispatch`;
  return { kind: 'cannot-tell', reason, retryAfterMs: Math.max(1, proof.at - ctx.now), ...extra };
}

/** What doResolveIntent throws for a look-up of `path` that failed as `outcome` (the adapter's classification of it):
 * a refusal (404, 403) is the caller's to correct; anything else (no answer, a 429, a 5xx) asking again may cure, and
 * the runner does, within its retry policy: a read changes nothing at the provider. */
export function intentLookupFailure(path: string, what: string, outcome: Outcome) {
  const why = 'message' in outcome && outcome.message ? `${what}: ${outcome.message}` : what;
  if (outcome.kind === 'rejected') return new InvalidIntentError(path, why);
  return new IntentLookupError(path, why, (outcome as { retryAfterMs?: number }).retryAfterMs);
}
