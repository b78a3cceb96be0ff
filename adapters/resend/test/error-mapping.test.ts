import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createMemoryLedger, createRunner, createVirtualClock } from '@retrysafe/core';
import { closeAfterTest } from '@retrysafe/testkit/close-after-test';
import { describe, expect, it } from 'vitest';
import { createResendAdapter } from '../src/index.js';
import { classifyAnswer, fieldsOf } from '../src/resend-errors.js';
import { startResendSandbox } from '../src/sandbox/index.js';
import { API_KEY, emailParams, execute } from './helpers.js';

async function setup(apiKey = API_KEY) {
  const sandbox = closeAfterTest(await startResendSandbox());
  const clock = createVirtualClock(Date.UTC(2026, 11, 4));
  const adapter = createResendAdapter({ apiKey, baseUrl: sandbox.url, timeoutMs: 2000 });
  const runner = createRunner({ ledger: createMemoryLedger(), clock, random: () => 0.5 });
  return { sandbox, clock, adapter, runner };
}

describe('rate limit: retried by the runner only', () => {
  it('429 rate_limit_exceeded with Retry-After 3 ⇒ not-applied, the runner waits at least 3 s, one more request, one email', async () => {
    const { sandbox, clock, adapter, runner } = await setup();
    sandbox.failNext({ status: 429, name: 'rate_limit_exceeded', message: 'Too many requests.', retryAfterS: 3 });
    const direct = await execute(adapter, 'emails.send', emailParams('rl/0'), 'rl-0');
    expect(direct).toMatchObject({ kind: 'not-applied', status: 429, code: 'rate_limit_exceeded', retryAfterMs: 3000 });
    expect(sandbox.requestCount({ method: 'POST' })).toBe(1); // the SDK did not retry it

    sandbox.failNext({ status: 429, name: 'rate_limit_exceeded', message: 'Too many requests.', retryAfterS: 3 });
    const start = clock.now();
    const result = await runner.run(adapter, 'emails.send', { params: emailParams('rl/1') });
    expect(result.status).toBe('done');
    expect(clock.now() - start).toBeGreaterThanOrEqual(3000);
    expect(sandbox.requestCount({ method: 'POST' })).toBe(3); // the direct call, then exactly two attempts
    expect(sandbox.count('emails.send')).toBe(1);
  });

  it('a daily quota 429 is a rejection (it resets after hours, not within the retry budget): one request, handed off', async () => {
    const { sandbox, runner, adapter } = await setup();
    sandbox.failNext({
      status: 429,
      name: 'daily_quota_exceeded',
      message: 'You have reached your daily email sending quota.',
    });
    const result = await runner.run(adapter, 'emails.send', { params: emailParams('quota/1') });
    expect(result.status).toBe('handed-off');
    expect(sandbox.requestCount({ method: 'POST' })).toBe(1);
  });
});

describe('permanent errors are rejections naming the field', () => {
  it('Resend refuses the `to` address ⇒ rejected (validation) with the field `to`, one request, handed off', async () => {
    const { sandbox, runner, adapter } = await setup();
    const out = await execute(adapter, 'emails.send', emailParams('bad-to', { to: 'nobody' }), 'bad-to');
    expect(out).toMatchObject({ kind: 'rejected', reason: 'validation', status: 422, code: 'validation_error' });
    expect((out as { fields?: { path: string }[] }).fields?.map((f) => f.path)).toEqual(['to']);
    const result = await runner.run(adapter, 'emails.send', { params: emailParams('bad-to/2', { to: 'nobody' }) });
    expect(result.status).toBe('handed-off');
    expect(sandbox.requestCount({ method: 'POST' })).toBe(2);
    expect(sandbox.count()).toBe(0);
  });

  it('a batch with one bad email is refused whole (strict validation), naming that email', async () => {
    const { sandbox, adapter } = await setup();
    const params = {
      batchRef: 'bad-batch',
      emails: [emailParams('x'), { ...emailParams('y'), to: 'nobody' }].map(({ emailRef: _r, ...e }) => e),
    };
    const out = await execute(adapter, 'batch.send', params, 'bad-batch');
    expect(out).toMatchObject({ kind: 'rejected', reason: 'validation', status: 422 });
    expect((out as { message: string }).message).toContain('emails[1]');
    expect(sandbox.count()).toBe(0);
  });

  it('a bad API key ⇒ rejected (authentication)', async () => {
    const { adapter } = await setup('not-a-resend-key');
    const out = await execute(adapter, 'emails.send', emailParams('auth'), 'auth');
    expect(out).toMatchObject({ kind: 'rejected', reason: 'authentication', status: 403, code: 'invalid_api_key' });
  });

  it('params the schema refuses never reach Resend: the frame names the field', async () => {
    const { sandbox, adapter } = await setup();
    const { text: _text, ...noBody } = emailParams('no-body');
    const out = await execute(adapter, 'emails.send', noBody, 'no-body');
    expect(out).toMatchObject({
      kind: 'rejected',
      code: 'retrysafe_invalid_params',
      fields: [{ path: 'html', message: 'html or text is required' }],
    });
    const extra = await execute(adapter, 'emails.send', emailParams('extra', { attachments: [] }), 'extra');
    expect(extra).toMatchObject({ kind: 'rejected', fields: [{ path: 'attachments' }] });
    expect(sandbox.requestCount()).toBe(0);
  });
});

describe("an error body without Resend's statusCode (a gateway in front of the API)", () => {
  /** A loopback server answering every request with `status` and this JSON body, as a gateway does. */
  async function gateway(status: number, body: unknown) {
    const server = createServer((_req, res) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    closeAfterTest({ close: () => new Promise<void>((r) => server.close(() => r())) });
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  it.each([
    [504, { message: 'Endpoint request timed out' }],
    [502, { message: 'Internal server error' }],
    [503, { error: 'upstream unavailable' }],
  ])('HTTP %i with %j ⇒ unknown (the email may have been sent), never a rejection', async (status, body) => {
    const adapter = createResendAdapter({ apiKey: API_KEY, baseUrl: await gateway(status, body), timeoutMs: 2000 });
    const out = await execute(adapter, 'emails.send', emailParams('gw'), 'gw');
    expect(out).toMatchObject({ kind: 'unknown' });
  });
});

describe('classifyAnswer', () => {
  const read = (d: unknown) =>
    d && typeof (d as { id?: unknown }).id === 'string' ? { result: d, providerRef: (d as { id: string }).id } : null;
  const err = (statusCode: number | null, name: string, headers: Record<string, string> | null = null) => ({
    data: null,
    error: { statusCode, name, message: `${name} message` },
    headers,
  });

  it.each<[Parameters<typeof classifyAnswer>[0], boolean, Record<string, unknown>]>([
    [{ data: { id: 'e1' }, error: null, headers: {} }, false, { kind: 'succeeded', providerRef: 'e1' }],
    [{ data: {}, error: null, headers: {} }, false, { kind: 'unknown', cause: 'truncated-response' }],
    [err(null, 'application_error'), true, { kind: 'unknown', cause: 'timeout' }],
    [err(null, 'application_error'), false, { kind: 'unknown', cause: 'other' }],
    [
      err(409, 'concurrent_idempotent_requests', { 'retry-after': '1' }),
      false,
      { kind: 'in-progress', retryAfterMs: 1000 },
    ],
    [err(409, 'invalid_idempotent_request'), false, { kind: 'rejected', reason: 'conflict' }],
    [err(429, 'rate_limit_exceeded', { 'ratelimit-reset': '2' }), false, { kind: 'not-applied', retryAfterMs: 2000 }],
    [err(429, 'monthly_quota_exceeded'), false, { kind: 'rejected' }],
    [err(400, 'invalid_idempotency_key'), false, { kind: 'rejected', reason: 'configuration' }],
    [err(403, 'invalid_api_key'), false, { kind: 'rejected', reason: 'authentication' }],
    [err(403, 'invalid_from_address'), false, { kind: 'rejected', reason: 'validation' }],
    [err(404, 'not_found'), false, { kind: 'rejected', reason: 'not-found' }],
    [err(500, 'internal_server_error'), false, { kind: 'unknown', cause: 'server-error' }],
    [err(502, 'application_error'), false, { kind: 'unknown', cause: 'server-error' }],
  ])('maps every documented answer to one outcome: %j (timed out: %s)', (answer, timedOut, outcome) => {
    expect(classifyAnswer(answer, read, timedOut)).toMatchObject(outcome);
  });

  it("reads the fields Resend names in backticks, in this adapter's spelling", () => {
    expect(fieldsOf('Invalid `reply_to` field.').map((f) => f.path)).toEqual(['replyTo']);
    expect(fieldsOf('Missing `from` field.').map((f) => f.path)).toEqual(['from']);
    expect(fieldsOf('Something went wrong.')).toEqual([]);
  });
});
