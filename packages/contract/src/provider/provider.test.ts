import { request, validateHeaderName, validateHeaderValue } from 'node:http';
import { describe, expect, it } from 'vitest';
import { AdapterConfigurationError } from '../errors.js';
import {
  answeredAt,
  checkBaseUrl,
  classifyTransportFailure,
  clipMessage,
  isLoopbackHost,
  lookupFromOutcome,
  NEVER_SENT_CODES,
  noAnswerOutcome,
  parseRetryAfter,
  positiveInteger,
  retryAfterOf,
  saysMoreFollow,
} from './index.js';

const NOW = Date.parse('2026-12-01T10:00:00Z');

describe('parseRetryAfter: one reading for every adapter', () => {
  it.each<[string | undefined | null, number | undefined]>([
    ['0', 0],
    ['1', 1000],
    ['120', 120_000],
    ['  7 ', 7000],
    ['1.5', 1500], // fractions mean what they say (Date.parse('1.5') is a date in 2001: it used to be 0 ms)
    ['0.25', 250],
    ['0.0001', 1], // rounded up: never shorter than asked
    ['-1', undefined], // negatives are no hint, not "retry now"
    ['-0.5', undefined],
    ['1e3', undefined],
    ['Infinity', undefined],
    ['NaN', undefined],
    ['', undefined],
    ['   ', undefined],
    ['soon', undefined],
    [null, undefined],
    [undefined, undefined],
    ['Tue, 01 Dec 2026 10:00:30 GMT', 30_000], // IMF-fixdate
    ['Tuesday, 01-Dec-26 10:01:00 GMT', 60_000], // obsolete RFC 850
    ['Tue Dec  1 10:00:05 2026', Date.parse('Tue Dec  1 10:00:05 2026') - NOW], // asctime (read in local time by V8)
    ['Mon, 30 Nov 2026 10:00:00 GMT', 0], // a date in the past: retry now
  ])('%j → %j', (value, want) => {
    expect(parseRetryAfter(value, undefined, NOW)).toBe(want === undefined ? undefined : Math.max(0, want));
  });

  it('takes the longest of repeated header values: never sooner than any asked', () => {
    expect(parseRetryAfter(['2', '9'], undefined, NOW)).toBe(9000);
  });

  // fetch's Headers.get joins a header sent twice with ', ' (an HTTP-date has a comma of its own).
  it.each<[string, number]>([
    ['30, 30', 30_000],
    ['30,30', 30_000],
    ['Tue, 01 Dec 2026 10:00:30 GMT, Tue, 01 Dec 2026 10:00:30 GMT', 30_000],
    ['Tuesday, 01-Dec-26 10:01:00 GMT, Tuesday, 01-Dec-26 10:01:00 GMT', 60_000],
    ['soon, 30', 30_000], // an unreadable member is no hint; the readable one still is
  ])('a header sent twice and folded, %j → %j', (value, want) => {
    expect(parseRetryAfter(value, undefined, NOW)).toBe(want);
  });

  it("answeredAt: the provider's Date header, else now", () => {
    expect(answeredAt('Tue, 01 Dec 2026 09:58:00 GMT', NOW)).toBe(NOW - 120_000);
    expect(answeredAt('not a date', NOW)).toBe(NOW);
    expect(answeredAt(undefined, NOW)).toBe(NOW);
  });

  it("an HTTP-date is measured from the answer's Date (the provider's clock), not ours, when it carries one", () => {
    const date = 'Tue, 01 Dec 2026 09:00:00 GMT'; // the provider's clock, an hour behind ours
    expect(parseRetryAfter('Tue, 01 Dec 2026 09:00:30 GMT', date, NOW)).toBe(30_000);
    expect(parseRetryAfter('Tue, 01 Dec 2026 10:00:30 GMT', 'not a date', NOW)).toBe(30_000);
    expect(retryAfterOf('Tue, 01 Dec 2026 09:00:30 GMT', date)).toEqual({ retryAfterMs: 30_000 });
  });

  it('a wait too long for a number is a very long wait, never none', () => {
    const ms = parseRetryAfter('9'.repeat(400), undefined, NOW);
    expect(ms !== undefined && Number.isFinite(ms) && ms >= Number.MAX_SAFE_INTEGER).toBe(true);
  });

  it('retryAfterOf gives the field to spread into an outcome, or nothing', () => {
    expect(retryAfterOf('2', undefined)).toEqual({ retryAfterMs: 2000 });
    expect(retryAfterOf('soon', undefined)).toEqual({});
  });
});

describe('classifyTransportFailure: never-sent vs may-have-been-applied', () => {
  const err = (code: string, extra: object = {}) => Object.assign(new Error(`x ${code}`), { code }, extra);

  it.each([...NEVER_SENT_CODES])('%s ⇒ never sent', (code) => {
    expect(classifyTransportFailure(err(code))).toEqual({ sent: 'never', code });
  });

  it.each<[string, () => void]>([
    ['ERR_INVALID_CHAR', () => validateHeaderValue('Authorization', 'Bearer sk_test_x\r')], // a CRLF .env
    ['ERR_INVALID_HTTP_TOKEN', () => validateHeaderName('Idempotency Key')],
    ['ERR_HTTP_INVALID_HEADER_VALUE', () => validateHeaderValue('Authorization', undefined as unknown as string)],
    ['ERR_UNESCAPED_CHARACTERS', () => request({ host: '127.0.0.1', port: 9, path: '/orders/a b' })],
  ])("Node's own refusal of a header or path (%s) is thrown before a byte is written: never sent", (code, build) => {
    const thrown = (() => {
      try {
        build();
      } catch (e) {
        return e;
      }
    })();
    expect(classifyTransportFailure(thrown)).toEqual({ sent: 'never', code });
  });

  // fetch's own refusals, thrown by a real fetch: it builds the request before it connects (nothing listens on port 9).
  it.each<[string, RequestInit, string?]>([
    ['a line break in a header value (a token read with its newline)', { headers: { authorization: 'Bearer a\nb' } }],
    ['a character above U+00FF in a header value', { headers: { authorization: 'Bearer a€b' } }],
    ['a lone surrogate in a header value', { headers: { 'x-ref': 'a\ud800' } }],
    ['a space in a header name', { headers: { 'Idempotency Key': 'k' } }],
    ['a method that is no token', { method: 'PO ST' }],
    ['a body on GET', { method: 'GET', body: 'x' }],
    ['user-info in the URL', {}, 'http://user:pass@127.0.0.1:9/'],
  ])("fetch's refusal to build the request (%s) is thrown before it connects: never sent", async (_, init, url) => {
    const thrown = await fetch(url ?? 'http://127.0.0.1:9/', init).catch((e: unknown) => e);
    expect(classifyTransportFailure(thrown)).toEqual({ sent: 'never', code: 'REQUEST_NOT_BUILT' });
    // Octokit's RequestError (status 500) copies fetch's message and keeps its error as the cause.
    const message = (thrown as Error).message;
    const wrapped = Object.assign(new Error(message, { cause: thrown }), { name: 'HttpError', status: 500 });
    expect(noAnswerOutcome(wrapped)).toMatchObject({ kind: 'not-applied', neverSent: true, code: 'REQUEST_NOT_BUILT' });
    // fetch quotes the value it refused, which may be a credential: the outcome (and so the receipt) never does.
    expect(noAnswerOutcome(wrapped).message).toBe(
      'never sent: fetch refused to build the request: a header name or value it cannot carry (a line break, a character above U+00FF), the method, a body on GET or user-info in the URL',
    );
  });

  it('a TypeError that is no refusal to build the request may have been applied', () => {
    expect(classifyTransportFailure(new TypeError('fetch failed'))).toEqual({ sent: 'maybe', cause: 'other' });
    const parse = new TypeError("Cannot read properties of undefined (reading 'id')");
    expect(classifyTransportFailure(parse)).toEqual({ sent: 'maybe', cause: 'other' });
    const lookalike = new Error('Headers.append: "x" is an invalid header value.');
    expect(classifyTransportFailure(lookalike)).toEqual({ sent: 'maybe', cause: 'other' });
  });

  it.each<[string, string]>([
    ['ETIMEDOUT', 'timeout'],
    ['ECONNABORTED', 'timeout'],
    ['UND_ERR_HEADERS_TIMEOUT', 'timeout'],
    ['ECONNRESET', 'connection-reset'],
    ['EPIPE', 'connection-reset'],
    ['UND_ERR_SOCKET', 'connection-reset'],
    ['ERR_STREAM_PREMATURE_CLOSE', 'truncated-response'],
    ['Z_DATA_ERROR', 'truncated-response'],
    ['EWHATEVER', 'other'],
  ])('%s ⇒ may have been applied (%s)', (code, cause) => {
    expect(classifyTransportFailure(err(code))).toEqual({ sent: 'maybe', cause, code });
  });

  it("reads the code through fetch's cause chain", () => {
    const e = new TypeError('fetch failed', { cause: err('EHOSTUNREACH') });
    expect(classifyTransportFailure(e)).toEqual({ sent: 'never', code: 'EHOSTUNREACH' });
    const e2 = new TypeError('fetch failed', { cause: err('ECONNRESET') });
    expect(classifyTransportFailure(e2)).toMatchObject({ sent: 'maybe', cause: 'connection-reset' });
  });

  it('an AggregateError of refused connections to every address is never sent; one reset among them is not', () => {
    const all = Object.assign(new AggregateError([err('ECONNREFUSED'), err('ECONNREFUSED')], 'connect'), {
      code: 'ECONNREFUSED',
    });
    expect(classifyTransportFailure(all)).toEqual({ sent: 'never', code: 'ECONNREFUSED' });
    const mixed = new AggregateError([err('ECONNREFUSED'), err('ECONNRESET')], 'connect');
    expect(classifyTransportFailure(mixed)).toMatchObject({
      sent: 'maybe',
      cause: 'connection-reset',
      code: 'ECONNRESET',
    });
  });

  it('no code at all may have been applied; an AbortSignal.timeout is a timeout; a hang-up is a reset', () => {
    expect(classifyTransportFailure(new Error('boom'))).toEqual({ sent: 'maybe', cause: 'other' });
    expect(classifyTransportFailure(new DOMException('timed out', 'TimeoutError'))).toMatchObject({
      sent: 'maybe',
      cause: 'timeout',
    });
    expect(classifyTransportFailure(new DOMException('aborted', 'AbortError'))).toMatchObject({
      sent: 'maybe',
      cause: 'timeout',
    });
    expect(classifyTransportFailure(new Error('socket hang up'))).toMatchObject({
      sent: 'maybe',
      cause: 'connection-reset',
    });
    expect(classifyTransportFailure('a string')).toEqual({ sent: 'maybe', cause: 'other' });
    expect(classifyTransportFailure(null)).toEqual({ sent: 'maybe', cause: 'other' });
  });

  it("a timeout an SDK wraps (Octokit's RequestError keeps it as `cause`) is still a timeout", () => {
    const timedOut = new DOMException('The operation was aborted due to timeout', 'TimeoutError');
    const wrapped = Object.assign(new Error(timedOut.message, { cause: timedOut }), { name: 'HttpError', status: 500 });
    expect(classifyTransportFailure(wrapped)).toEqual({ sent: 'maybe', cause: 'timeout' });
  });

  it('an unreachable network on an established socket (read/write EHOSTUNREACH) may have been applied; at connect it was never sent', () => {
    const onSocket = (code: string, syscall: string) =>
      new TypeError('fetch failed', { cause: Object.assign(new Error(`${syscall} ${code}`), { code, syscall }) });
    for (const code of ['EHOSTUNREACH', 'ENETUNREACH', 'ENETDOWN', 'EHOSTDOWN'])
      for (const syscall of ['read', 'write'])
        expect(classifyTransportFailure(onSocket(code, syscall))).toMatchObject({ sent: 'maybe', code });
    expect(classifyTransportFailure(onSocket('EHOSTUNREACH', 'connect'))).toEqual({
      sent: 'never',
      code: 'EHOSTUNREACH',
    });
    expect(classifyTransportFailure(onSocket('ENOTFOUND', 'getaddrinfo'))).toEqual({
      sent: 'never',
      code: 'ENOTFOUND',
    });
  });

  it("a connect that timed out was never sent: Node's connect ETIMEDOUT, its happy-eyeballs AggregateError, ERR_SOCKET_CONNECTION_TIMEOUT", () => {
    const connectTimeout = () =>
      Object.assign(new Error('connect ETIMEDOUT 10.0.0.1:443'), { code: 'ETIMEDOUT', syscall: 'connect' });
    const all = Object.assign(new AggregateError([connectTimeout(), connectTimeout()]), { code: 'ETIMEDOUT' });
    expect(classifyTransportFailure(new TypeError('fetch failed', { cause: all }))).toEqual({
      sent: 'never',
      code: 'ETIMEDOUT',
    });
    expect(classifyTransportFailure(connectTimeout())).toEqual({ sent: 'never', code: 'ETIMEDOUT' });
    expect(classifyTransportFailure(err('ERR_SOCKET_CONNECTION_TIMEOUT'))).toEqual({
      sent: 'never',
      code: 'ERR_SOCKET_CONNECTION_TIMEOUT',
    });
    const viaAxios = Object.assign(new Error('connect ETIMEDOUT 10.0.0.1:443'), {
      code: 'ETIMEDOUT',
      cause: connectTimeout(),
    });
    expect(classifyTransportFailure(viaAxios)).toEqual({ sent: 'never', code: 'ETIMEDOUT' });
    const onSocket = Object.assign(new Error('read ETIMEDOUT'), { code: 'ETIMEDOUT', syscall: 'read' });
    const onSocketViaAxios = Object.assign(new Error('read ETIMEDOUT'), { code: 'ETIMEDOUT', cause: onSocket });
    expect(classifyTransportFailure(onSocketViaAxios)).toMatchObject({ sent: 'maybe', cause: 'timeout' });
    expect(classifyTransportFailure(onSocket)).toMatchObject({ sent: 'maybe', cause: 'timeout' });
    const mixed = Object.assign(new AggregateError([connectTimeout(), onSocket]), { code: 'ETIMEDOUT' });
    expect(classifyTransportFailure(mixed)).toMatchObject({ sent: 'maybe', cause: 'timeout' });
  });

  it('a cyclic cause chain does not loop', () => {
    const a = err('ECONNRESET') as Error & { cause?: unknown };
    a.cause = a;
    expect(classifyTransportFailure(a)).toMatchObject({ sent: 'maybe' });
  });
});

describe("noAnswerOutcome: every adapter's outcome for a call with no answer", () => {
  const fetchFailed = (code: string) =>
    Object.assign(new TypeError('fetch failed'), { cause: Object.assign(new Error(code.toLowerCase()), { code }) });
  it.each([
    ['ECONNREFUSED', 'not-applied'],
    ['ENOTFOUND', 'not-applied'],
    ['UND_ERR_CONNECT_TIMEOUT', 'not-applied'],
    ['ECONNRESET', 'unknown'],
    ['UND_ERR_SOCKET', 'unknown'],
    ['UND_ERR_HEADERS_TIMEOUT', 'unknown'],
    ['SOMETHING_NEW', 'unknown'],
  ])('%s ⇒ %s', (code, kind) => {
    expect(noAnswerOutcome(fetchFailed(code)).kind).toBe(kind);
  });
  it('a timeout signal ⇒ unknown (timeout)', () => {
    expect(noAnswerOutcome(new DOMException('The operation was aborted due to timeout', 'TimeoutError'))).toMatchObject(
      { kind: 'unknown', cause: 'timeout' },
    );
  });
  it('walks the cause chain', () => {
    expect(noAnswerOutcome(fetchFailed('ECONNRESET'))).toMatchObject({
      message: 'connection closed before the answer: fetch failed: econnreset (ECONNRESET)',
    });
  });
  // The HTTP adapter's table, from when it carried its own copy.
  it.each([
    ['ECONNREFUSED', 'not-applied', undefined],
    ['ENOTFOUND', 'not-applied', undefined],
    ['ECONNABORTED', 'unknown', 'timeout'],
    ['ETIMEDOUT', 'unknown', 'timeout'],
    ['ECONNRESET', 'unknown', 'connection-reset'],
    ['EPIPE', 'unknown', 'connection-reset'],
    ['ERR_SOMETHING_NEW', 'unknown', 'other'],
  ])('%s on the error itself ⇒ %s', (code, kind, cause) => {
    const out = noAnswerOutcome(Object.assign(new Error('x'), { code }));
    expect(out.kind).toBe(kind);
    if (cause) expect(out).toMatchObject({ cause });
  });
  it('never sent carries neverSent and the code; maybe sent the code it found; `what` leads the message', () => {
    expect(noAnswerOutcome(fetchFailed('ECONNREFUSED'), 'the SDK says so')).toEqual({
      kind: 'not-applied',
      code: 'ECONNREFUSED',
      neverSent: true,
      message: 'never sent: the SDK says so: fetch failed: econnrefused (ECONNREFUSED)',
    });
    expect(noAnswerOutcome(fetchFailed('UND_ERR_SOCKET'))).toMatchObject({ kind: 'unknown', code: 'UND_ERR_SOCKET' });
    expect(noAnswerOutcome(new Error('x'.repeat(400))).message).toMatch(/x…$/);
  });
});

describe('clipMessage', () => {
  it('cuts long text with …', () => {
    expect(clipMessage('x'.repeat(400))).toHaveLength(301);
  });
});

describe('checkBaseUrl: https, or http only to loopback, never user-info', () => {
  it.each([
    'https://api.example.com',
    'https://api.example.com/v1/',
    'http://127.0.0.1:4010',
    'http://127.9.9.9',
    'http://localhost:1',
    'http://sandbox.localhost',
    'http://[::1]:8080/',
    'http://[::ffff:127.0.0.1]/',
  ])('accepts %s', (url) => {
    expect(checkBaseUrl('p', url).href).toBe(new URL(url).href);
  });
  it.each([
    ['http://api.example.com', /plain http only for a loopback/],
    ['http://10.0.0.1', /plain http only for a loopback/],
    ['http://128.0.0.1', /plain http only for a loopback/],
    ['http://localhost.example.com', /plain http only for a loopback/],
    ['ftp://127.0.0.1', /must be https/],
    ['file:///etc/passwd', /must be https/],
    ['not a url', /not a URL/],
    ['/v1', /not a URL/],
    ['', /absolute URL string/],
    ['https://user:hunter2@api.example.com', /user-info/],
  ])('refuses %s', (url, why) => {
    const e = (() => {
      try {
        checkBaseUrl('p', url);
      } catch (x) {
        return x;
      }
      return undefined;
    })();
    expect(AdapterConfigurationError.isInstance(e)).toBe(true);
    expect((e as Error).message).toMatch(why);
    expect((e as Error).message).not.toContain('hunter2');
  });
  it('refuses a non-string', () => {
    expect(() => checkBaseUrl('p', 42)).toThrow(/absolute URL string/);
  });
  it('isLoopbackHost', () => {
    expect(['127.0.0.1', 'LOCALHOST', 'localhost.', '[::1]', '::1'].map(isLoopbackHost)).toEqual([
      true,
      true,
      true,
      true,
      true,
    ]);
    expect(['127.0.0.256', '0.0.0.0', '192.168.1.1', 'example.com', '::'].map(isLoopbackHost)).toEqual([
      false,
      false,
      false,
      false,
      false,
    ]);
  });
});

describe('saysMoreFollow', () => {
  it('a next cursor or has_more says more follow; absent, null, false, empty and 0 do not', () => {
    expect(['c_2', true, 1, { after: 'x' }].map(saysMoreFollow)).toEqual([true, true, true, true]);
    expect([undefined, null, false, '', 0].map(saysMoreFollow)).toEqual([false, false, false, false, false]);
  });
});

describe('lookupFromOutcome', () => {
  it('found for results, progress and persisted rejections; cannot-tell (never not-found) for the rest', () => {
    expect(lookupFromOutcome({ kind: 'succeeded', result: 1, providerRef: 'r' }, 'poll')).toEqual({
      kind: 'found',
      outcome: { kind: 'succeeded', result: 1, providerRef: 'r' },
    });
    expect(lookupFromOutcome({ kind: 'replayed', result: 1 }, 'poll').kind).toBe('found');
    expect(lookupFromOutcome({ kind: 'in-progress' }, 'poll').kind).toBe('found');
    expect(lookupFromOutcome({ kind: 'rejected', reason: 'validation', message: 'm' }, 'poll').kind).toBe('found');
    expect(
      lookupFromOutcome(
        { kind: 'unknown', cause: 'timeout', message: 'timed out', status: 504, retryAfterMs: 5 },
        'status poll',
      ),
    ).toEqual({ kind: 'cannot-tell', reason: 'status poll: timed out', status: 504, retryAfterMs: 5 });
    expect(
      lookupFromOutcome({ kind: 'not-applied', message: '429', status: 429, retryAfterMs: 1000 }, 're-send'),
    ).toEqual({ kind: 'cannot-tell', reason: 're-send: 429', status: 429, retryAfterMs: 1000 });
  });
});

describe('positiveInteger: an adapter option that counts something', () => {
  it('returns the value, or the default when it is missing', () => {
    expect(positiveInteger('p', 'timeoutMs', 250, 30_000)).toBe(250);
    expect(positiveInteger('p', 'timeoutMs', undefined, 30_000)).toBe(30_000);
  });

  it.each([0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY])(
    'refuses %s with a typed error naming the option',
    (v) => {
      let e: unknown;
      try {
        positiveInteger('p', 'lookupPages', v, 4);
      } catch (err) {
        e = err;
      }
      expect(AdapterConfigurationError.isInstance(e)).toBe(true);
      expect((e as Error).message).toContain(`lookupPages must be a positive integer, got ${String(v)}`);
    },
  );
});
