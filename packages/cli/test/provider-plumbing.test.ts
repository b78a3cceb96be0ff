/**
 * The generic provider rules agree across every adapter (issue 17's table, re-measured as a test): each
 * adapter goes through the contract's provider module for Retry-After, "never sent" network codes and the
 * base-URL rule, so the same input gets the same answer whichever provider it is.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { AdapterConfigurationError, type Outcome } from '@retrysafe/contract';
import { noAnswerOutcome, parseRetryAfter as sandboxRetryAfter } from '@retrysafe/contract/provider';
import { createGitHubAdapter } from '@retrysafe/github';
import { createHttpAdapter, ietfOrdersCreate } from '@retrysafe/http';
import { createHubSpotAdapter } from '@retrysafe/hubspot';
import { createMsGraphAdapter } from '@retrysafe/msgraph';
import { createResendAdapter } from '@retrysafe/resend';
import { createSandboxAdapter, FORGETFUL_BEHAVIOUR } from '@retrysafe/sandbox';
import { createSlackAdapter } from '@retrysafe/slack';
import { createStripeAdapter } from '@retrysafe/stripe';
import { describe, expect, it } from 'vitest';
// Each adapter's own classifier, read from source: the root entries export only what a user needs
// (factory, options, cards), not these internals. The sandbox reads Retry-After with the contract's parser itself.
import {
  outcomeFromAnswer as gitHubAnswer,
  outcomeFromError as gitHubError,
} from '../../../adapters/github/src/github-errors.js';
import { classifyResponse } from '../../../adapters/http/src/http-errors.js';
import {
  outcomeFromNetworkError as hubspotNetwork,
  rateLimitWaitMs,
} from '../../../adapters/hubspot/src/hubspot-errors.js';
import { outcomeFromErrorAnswer as graphAnswer } from '../../../adapters/msgraph/src/msgraph-errors.js';
import { retryAfterMsOf as resendRetryAfter } from '../../../adapters/resend/src/resend-errors.js';
import { outcomeFromError as slackError } from '../../../adapters/slack/src/slack-errors.js';
import { classifyStripeError } from '../../../adapters/stripe/src/stripe-errors.js';

const netErr = (code: string) =>
  new TypeError('fetch failed', { cause: Object.assign(new Error(`connect ${code}`), { code }) });

// http, sandbox, msgraph and the MCP fence hand the raw error to the contract's noAnswerOutcome themselves.
const classifiers: Record<string, (error: Error) => Outcome> = {
  contract: (error) => noAnswerOutcome(error),
  // Octokit's RequestError (status 500, no response) copies the fetch error's message and keeps it as `cause`.
  github: (error) => gitHubError(Object.assign(new Error(error.message), { status: 500, cause: error })),
  hubspot: (error) => hubspotNetwork(error, { started: true }),
  // @slack/web-api wraps the fetch error as a WebAPIRequestError with the cause in `original`.
  slack: (error) =>
    slackError(
      Object.assign(new Error('A request error occurred'), { code: 'slack_webapi_request_error', original: error }),
    ),
  stripe: (error) =>
    classifyStripeError({
      type: 'StripeConnectionError',
      message: 'An error occurred with our connection to Stripe.',
      detail: error,
    }),
};

/** The wait an outcome carries, where the adapter's own classifier read the header. */
const waitOf = (o: Outcome) => (o as { retryAfterMs?: number }).retryAfterMs;
/** An answer's Retry-After `v`, with its `Date` header when given. */
const headersOf = (v: string, date?: string): Record<string, string> =>
  date === undefined ? { 'retry-after': v } : { 'retry-after': v, date };
const retryAfterReaders: Record<string, (v: string, date?: string) => number | undefined> = {
  http: (v, date) =>
    waitOf(
      classifyResponse(ietfOrdersCreate('acme'), { status: 429, headers: headersOf(v, date), data: null, url: '' }, 1),
    ),
  sandbox: (v, date) => sandboxRetryAfter(v, date),
  msgraph: (v, date) => waitOf(graphAnswer({ status: 429, headers: new Headers(headersOf(v, date)), body: null })),
  // stripe-node's headers are a plain object.
  stripe: (v, date) =>
    waitOf(
      classifyStripeError({
        type: 'StripeRateLimitError',
        statusCode: 429,
        message: 'Too many requests',
        headers: headersOf(v, date),
      }),
    ),
  resend: (v, date) => resendRetryAfter(headersOf(v, date)), // the resend SDK's headers are a plain object too
  github: (v, date) => waitOf(gitHubAnswer({ status: 503, headers: headersOf(v, date), data: {} })),
};

describe('"never sent" network codes: one list, every adapter', () => {
  for (const [adapter, classify] of Object.entries(classifiers)) {
    it.each(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT', 'ENOTFOUND', 'EADDRNOTAVAIL'])(
      `${adapter}: %s ⇒ not-applied, never sent`,
      (code) => {
        expect(classify(netErr(code))).toMatchObject({ kind: 'not-applied', neverSent: true, code });
      },
    );
    it.each(['ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'UND_ERR_SOCKET'])(`${adapter}: %s ⇒ unknown`, (code) => {
      expect(classify(netErr(code)).kind).toBe('unknown');
    });
    it(`${adapter}: a request fetch refused to build (a token with a line break) ⇒ not-applied, never sent, the token not repeated`, async () => {
      const refused = await fetch('http://127.0.0.1:9/', { headers: { authorization: 'Bearer hunter2\nx' } }).catch(
        (e: Error) => e,
      );
      const outcome = classify(refused as Error);
      expect(outcome).toMatchObject({ kind: 'not-applied', neverSent: true, code: 'REQUEST_NOT_BUILT' });
      expect(JSON.stringify(outcome)).not.toContain('hunter2');
    });
  }
});

describe('Retry-After: one reading, every adapter', () => {
  for (const [adapter, read] of Object.entries(retryAfterReaders)) {
    it(`${adapter}: 1.5 ⇒ 1500 ms, -1 ⇒ no hint, 3 ⇒ 3000 ms`, () => {
      expect(read('1.5')).toBe(1500);
      expect(read('-1')).toBeUndefined();
      expect(read('3')).toBe(3000);
    });
    it(`${adapter}: a header sent twice, folded by fetch to "30, 30" ⇒ 30 000 ms; too long for a number ⇒ a wait`, () => {
      expect(read('30, 30')).toBe(30_000);
      expect(read('9'.repeat(400))).toBeGreaterThan(30_000);
    });
    it(`${adapter}: an HTTP-date is measured from the answer's Date, not our clock (an hour ahead of it)`, () => {
      expect(read('Tue, 01 Dec 2026 09:00:30 GMT', 'Tue, 01 Dec 2026 09:00:00 GMT')).toBe(30_000);
    });
  }
  it('hubspot: a 429 honours Retry-After 1.5 as 1500 ms, and -1 is no hint (the rate-limit headers decide)', () => {
    expect(rateLimitWaitMs({ status: 429, headers: { 'retry-after': '1.5' }, body: {} })).toBe(1500);
    expect(
      rateLimitWaitMs({
        status: 429,
        headers: { 'retry-after': '-1', 'x-hubspot-ratelimit-interval-milliseconds': '10000' },
        body: {},
      }),
    ).toBe(10_000);
  });
});

describe('base URL: https, or plain http only to loopback, for every adapter', () => {
  const factories: Record<string, (baseUrl: string) => unknown> = {
    stripe: (baseUrl) => createStripeAdapter({ apiKey: 'sk_test_canary', baseUrl }),
    msgraph: (baseUrl) => createMsGraphAdapter({ accessToken: 'canary-token', baseUrl }),
    hubspot: (baseUrl) => createHubSpotAdapter({ accessToken: 'pat-canary', baseUrl }),
    slack: (baseUrl) => createSlackAdapter({ token: 'xoxb-canary', baseUrl }),
    http: (baseUrl) =>
      createHttpAdapter({
        provider: 'acme',
        baseUrl,
        timeoutMs: 1000,
        operations: { 'orders.create': ietfOrdersCreate('acme') },
      }),
    sandbox: (baseUrl) => createSandboxAdapter({ baseUrl, behaviour: FORGETFUL_BEHAVIOUR }),
    resend: (baseUrl) => createResendAdapter({ apiKey: 're_canary', baseUrl }),
  };
  const refusal = (f: () => unknown) => {
    try {
      f();
    } catch (e) {
      return e;
    }
    return undefined;
  };
  for (const [adapter, make] of Object.entries(factories)) {
    it(`${adapter}: refuses plain http to a non-loopback host and user-info, accepts loopback`, () => {
      for (const bad of ['http://api.example.com', 'http://10.1.2.3:8080', 'https://user:hunter2@api.example.com']) {
        const e = refusal(() => make(bad));
        expect(AdapterConfigurationError.isInstance(e), `${adapter} ${bad}`).toBe(true);
        expect(String((e as Error).message)).not.toContain('hunter2');
      }
      expect(refusal(() => make('http://127.0.0.1:4010'))).toBeUndefined();
    });
  }
});

describe('a credential no header carries is refused when the adapter is built, for every adapter', () => {
  const LOOPBACK = 'http://127.0.0.1:4010';
  const factories: Record<string, (secret: string) => unknown> = {
    stripe: (apiKey) => createStripeAdapter({ apiKey, baseUrl: LOOPBACK }),
    msgraph: (accessToken) => createMsGraphAdapter({ accessToken, baseUrl: LOOPBACK }),
    hubspot: (accessToken) => createHubSpotAdapter({ accessToken, baseUrl: LOOPBACK }),
    slack: (token) => createSlackAdapter({ token, baseUrl: LOOPBACK }),
    github: (auth) => createGitHubAdapter({ auth, baseUrl: LOOPBACK }),
    resend: (apiKey) => createResendAdapter({ apiKey, baseUrl: LOOPBACK }),
    http: (secret) =>
      createHttpAdapter({
        provider: 'acme',
        baseUrl: LOOPBACK,
        timeoutMs: 1000,
        headers: { Authorization: `Bearer ${secret}` },
        operations: { 'orders.create': ietfOrdersCreate('acme') },
      }),
  };
  // Each would have made every request fail before it left (fetch's TypeError, Node's ERR_INVALID_CHAR), after the claim.
  it.each(Object.keys(factories))('%s: a line break, a CR from a CRLF file, a character above U+00FF', (adapter) => {
    for (const secret of ['hunter2\nx', 'hunter2\r', 'hunter2€']) {
      let thrown: unknown;
      try {
        factories[adapter]!(secret);
      } catch (e) {
        thrown = e;
      }
      expect(AdapterConfigurationError.isInstance(thrown), `${adapter} ${JSON.stringify(secret)}`).toBe(true);
      expect(String((thrown as Error).message)).not.toContain('hunter2');
    }
    expect(() => factories[adapter]!('canary-token')).not.toThrow();
  });
});

describe('one owner: no adapter keeps a private copy of the generic rules', () => {
  const root = join(import.meta.dirname, '..', '..', '..', 'adapters');
  const files = (dir: string): string[] =>
    readdirSync(dir).flatMap((n) => {
      const p = join(dir, n);
      if (statSync(p).isDirectory()) return n === 'node_modules' || n === 'dist' ? [] : files(p);
      return p.endsWith('.ts') && !p.endsWith('.test.ts') ? [p] : [];
    });
  const sources = readdirSync(root).flatMap((a) => files(join(root, a, 'src')));
  it('reads every adapter', () => {
    expect(sources.length).toBeGreaterThan(20);
  });
  it.each(sources.map((p) => [p.slice(root.length + 1), p]))(
    '%s has no own Retry-After parser or never-sent code set',
    (_name, path) => {
      const text = readFileSync(path, 'utf8');
      expect(text).not.toMatch(/Date\.parse\(/);
      expect(text).not.toMatch(/new Set\(\[[^\]]*'(ECONNREFUSED|EHOSTUNREACH|ENOTFOUND)'/);
      // A call with no answer becomes an outcome in one place, the contract's noAnswerOutcome.
      expect(text).not.toMatch(/classifyTransportFailure/);
    },
  );
});
