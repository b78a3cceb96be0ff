// Every Slack answer the adapter can get, through the real WebClient against the sandbox, mapped into
// one outcome: refusals name the field, a 429 is retried by the runner only, one request per attempt.

import { outcomeProblem } from '@retrysafe/contract';
import { createMemoryLedger, createRunner, createVirtualClock } from '@retrysafe/core';
import { startFaultProxy } from '@retrysafe/testkit';
import { closeAfterTest } from '@retrysafe/testkit/close-after-test';
import { describe, expect, it } from 'vitest';
import { createSlackAdapter } from '../src/index.js';
import { type SandboxFault, type SlackSandbox, startSlackSandbox } from '../src/sandbox/index.js';
import { CHANNEL, execute, lookup, postParams, TOKEN } from './helpers.js';

let sandbox: SlackSandbox;

async function postWith(fault: SandboxFault, params: unknown = postParams(1)) {
  sandbox = closeAfterTest(
    await startSlackSandbox({ token: TOKEN, channels: [CHANNEL], faults: { 'chat.postMessage': [fault] } }),
  );
  const adapter = createSlackAdapter({ token: TOKEN, baseUrl: sandbox.url, timeoutMs: 2000 });
  return execute(adapter, 'chat.postMessage', params, 'op-1');
}

/** A sandbox holding one message ('old', ts 1700000000.000001) in CHANNEL, with `faults`; the adapter pointed at it. */
async function withOldMessage(faults: Record<string, SandboxFault[]> = {}) {
  const seed = [{ channel: CHANNEL, ts: '1700000000.000001', text: 'old' }];
  sandbox = closeAfterTest(await startSlackSandbox({ token: TOKEN, channels: [CHANNEL], seed, faults }));
  return createSlackAdapter({ token: TOKEN, baseUrl: sandbox.url });
}

/** For each [Slack error, reason, field]: a post Slack refuses so is rejected with that reason, naming the field; one request. */
function refusedOnce(cases: [string, string, string | undefined][]) {
  for (const [error, reason, field] of cases) {
    it(`${error} ⇒ rejected (${reason})${field ? `, field ${field}` : ''}; one request`, async () => {
      const out = await postWith({ kind: 'error', error });
      expect(out).toMatchObject({ kind: 'rejected', reason, code: error });
      if (out.kind !== 'rejected') return;
      expect(out.fields?.map((f) => f.path)).toEqual(field ? [field] : undefined);
      expect(sandbox.calls('chat.postMessage')).toBe(1);
    });
  }
}

describe('refusals are rejected outcomes that name the field', () => {
  const cases: [string, string, string | undefined][] = [
    ['channel_not_found', 'not-found', 'channel'],
    ['not_in_channel', 'permission', 'channel'],
    ['is_archived', 'permission', 'channel'],
    ['msg_too_long', 'validation', 'text'],
    ['no_text', 'validation', 'text'],
    ['invalid_blocks', 'validation', 'blocks'],
    ['invalid_auth', 'authentication', undefined],
    ['missing_scope', 'permission', undefined],
  ];
  refusedOnce(cases);

  it('the sandbox itself refuses an unknown channel and a wrong token the same way', async () => {
    sandbox = closeAfterTest(await startSlackSandbox({ token: TOKEN, channels: [CHANNEL] }));
    const good = createSlackAdapter({ token: TOKEN, baseUrl: sandbox.url });
    expect(await execute(good, 'chat.postMessage', { channel: 'C0NOPE', text: 'hi' }, 'a')).toMatchObject({
      kind: 'rejected',
      reason: 'not-found',
      fields: [{ path: 'channel' }],
    });
    const bad = createSlackAdapter({ token: 'xoxb-wrong', baseUrl: sandbox.url });
    expect(await execute(bad, 'chat.postMessage', postParams(1), 'b')).toMatchObject({
      kind: 'rejected',
      reason: 'authentication',
    });
    expect(sandbox.count('chat.postMessage')).toBe(0);
  });

  it('params the schema refuses are rejected by the frame, naming the field, and nothing is sent', async () => {
    const out = await postWith('pass', { channel: CHANNEL, text: '' });
    expect(out).toMatchObject({ kind: 'rejected', reason: 'validation', fields: [{ path: 'text' }] });
    const adapter = createSlackAdapter({ token: TOKEN, baseUrl: sandbox.url });
    const extra = await execute(adapter, 'chat.postMessage', { ...postParams(1), metadata: {} }, 'c');
    expect(extra).toMatchObject({ kind: 'rejected', fields: [{ path: 'metadata' }] });
    expect(sandbox.calls('chat.postMessage')).toBe(0);
  });
});

describe("the refusals Slack's method pages list for every method are rejected, not unknown", () => {
  // docs.slack.dev/reference/methods/chat.postMessage, "Errors": refusals of the token, the workspace or the request's form.
  const cases: [string, string, string | undefined][] = [
    ['two_factor_setup_required', 'authentication', undefined],
    ['not_allowed_token_type', 'authentication', undefined],
    ['access_denied', 'permission', undefined],
    ['ekm_access_denied', 'permission', undefined],
    ['team_access_not_granted', 'permission', undefined],
    ['restricted_action_read_only_channel', 'permission', 'channel'],
    ['method_deprecated', 'configuration', undefined],
    ['invalid_form_data', 'configuration', undefined],
    ['invalid_post_type', 'configuration', undefined],
  ];
  refusedOnce(cases);

  it('chat.update refused with two_factor_setup_required is handed off after one request, not re-sent', async () => {
    const adapter = await withOldMessage({ 'chat.update': [{ kind: 'error', error: 'two_factor_setup_required' }] });
    const clock = createVirtualClock(Date.UTC(2026, 11, 4));
    const runner = createRunner({ ledger: createMemoryLedger(), clock, random: () => 0.5 });
    const params = { channel: CHANNEL, ts: '1700000000.000001', text: 'new' };
    const result = await runner.run(adapter, 'chat.update', { params });
    expect(result.status).toBe('handed-off');
    expect(sandbox.calls('chat.update')).toBe(1);
  });
});

describe('answers Slack documents as not processed are not-applied: the runner sends once more', () => {
  // request_timeout: "the POST data was either missing or truncated"; team_added_to_org: the workspace is
  // migrating, "Wait until migration is complete, then try the request again".
  for (const error of ['request_timeout', 'team_added_to_org']) {
    it(`${error} ⇒ not-applied; the runner's second request posts the one message`, async () => {
      const clock = createVirtualClock(Date.UTC(2026, 11, 4));
      // A sandbox whose first post answers `error`: one for the adapter alone, one for the runner.
      const refusingOnce = async () =>
        closeAfterTest(
          await startSlackSandbox({
            token: TOKEN,
            channels: [CHANNEL],
            now: clock.now,
            faults: { 'chat.postMessage': [{ kind: 'error', error }] },
          }),
        );
      sandbox = await refusingOnce();
      const adapter = createSlackAdapter({ token: TOKEN, baseUrl: sandbox.url });
      expect(await execute(adapter, 'chat.postMessage', postParams(2), 'op-x')).toMatchObject({
        kind: 'not-applied',
        code: error,
      });
      const again = await refusingOnce();
      const runner = createRunner({ ledger: createMemoryLedger(), clock, random: () => 0.5 });
      const result = await runner.run(createSlackAdapter({ token: TOKEN, baseUrl: again.url }), 'chat.postMessage', {
        params: postParams(3),
      });
      expect(result.status).toBe('done');
      expect(again.calls('chat.postMessage')).toBe(2);
      expect(again.count('chat.postMessage')).toBe(1);
    });
  }

  it('service_unavailable stays unknown: Slack does not say whether the call was processed', async () => {
    const out = await postWith({ kind: 'error', error: 'service_unavailable' });
    expect(out).toMatchObject({ kind: 'unknown', code: 'service_unavailable' });
    if (out.kind === 'unknown') expect(out.message).not.toMatch(/documents that part/);
  });
});

describe('what may have happened is unknown, never rejected', () => {
  it('internal_error after Slack posted ⇒ unknown (server-error); the message exists', async () => {
    const out = await postWith({ kind: 'error', error: 'internal_error', commit: true });
    expect(out).toMatchObject({ kind: 'unknown', cause: 'server-error', code: 'internal_error' });
    expect(sandbox.count('chat.postMessage')).toBe(1);
  });

  it('HTTP 503 ⇒ unknown (server-error) with the status', async () => {
    const out = await postWith({ kind: 'status', status: 503 });
    expect(out).toMatchObject({ kind: 'unknown', cause: 'server-error', status: 503 });
  });

  it('HTTP 503 with Retry-After (seconds or an HTTP-date) ⇒ unknown, its wait kept for the runner; one request', async () => {
    sandbox = closeAfterTest(await startSlackSandbox({ token: TOKEN, channels: [CHANNEL] }));
    const inHalfAMinute = new Date(Date.now() + 30_000).toUTCString();
    const faults = [
      { kind: 'status', status: 503, retryAfterS: 30 },
      { kind: 'status', status: 503, headers: { 'retry-after': inHalfAMinute } },
    ] as const;
    const proxy = closeAfterTest(await startFaultProxy({ target: sandbox.url, faults }));
    const adapter = createSlackAdapter({ token: TOKEN, baseUrl: proxy.url });
    const seconds = await execute(adapter, 'chat.postMessage', postParams(1), 'op-1');
    expect(seconds).toMatchObject({ kind: 'unknown', cause: 'server-error', status: 503, retryAfterMs: 30_000 });
    const date = await execute(adapter, 'chat.postMessage', postParams(1), 'op-1');
    expect(date).toMatchObject({ kind: 'unknown', retryAfterMs: expect.toSatisfy((ms: number) => ms > 25_000) });
    expect(proxy.requests).toHaveLength(2);
  });

  it("HTTP 503 with an HTTP-date Retry-After ⇒ the wait measured from Slack's Date, not our clock (an hour ahead)", async () => {
    sandbox = closeAfterTest(await startSlackSandbox({ token: TOKEN, channels: [CHANNEL] }));
    const at = Math.floor(Date.now() / 1000) * 1000 - 3_600_000;
    const headers = { date: new Date(at).toUTCString(), 'retry-after': new Date(at + 30_000).toUTCString() };
    const proxy = closeAfterTest(
      await startFaultProxy({ target: sandbox.url, faults: [{ kind: 'status', status: 503, headers }] }),
    );
    const out = await execute(
      createSlackAdapter({ token: TOKEN, baseUrl: proxy.url }),
      'chat.postMessage',
      postParams(1),
      'op-1',
    );
    expect(out).toMatchObject({ kind: 'unknown', cause: 'server-error', retryAfterMs: 30_000 });
  });

  it('an error code Slack does not document for the method ⇒ unknown, so the lookup decides', async () => {
    const out = await postWith({ kind: 'error', error: 'something_new' });
    expect(out).toMatchObject({ kind: 'unknown', cause: 'other', code: 'something_new' });
  });

  it('connection refused ⇒ not-applied (nothing left the machine)', async () => {
    const closed = await startSlackSandbox({ token: TOKEN });
    const url = closed.url;
    await closed.close();
    const adapter = createSlackAdapter({ token: TOKEN, baseUrl: url });
    const out = await execute(adapter, 'chat.postMessage', postParams(1), 'd');
    expect(out.kind).toBe('not-applied');
  });
});

describe('rate limits: the runner is the only retrying layer', () => {
  it('HTTP 429 ratelimited with Retry-After ⇒ not-applied with retryAfterMs, exactly one request (the SDK neither retries nor pauses)', async () => {
    const out = await postWith({ kind: 'ratelimited', retryAfterS: 7 });
    expect(out).toMatchObject({ kind: 'not-applied', status: 429, code: 'ratelimited', retryAfterMs: 7000 });
    expect(sandbox.calls('chat.postMessage')).toBe(1);
    expect(sandbox.count('chat.postMessage')).toBe(0);
  });

  it('ratelimited in an HTTP 200 body ({ ok: false }) with Retry-After ⇒ not-applied with that wait, one request', async () => {
    sandbox = closeAfterTest(await startSlackSandbox({ token: TOKEN, channels: [CHANNEL] }));
    const body = { ok: false, error: 'ratelimited' };
    const faults = [{ kind: 'status', status: 200, retryAfterS: 30, body }] as const;
    const proxy = closeAfterTest(await startFaultProxy({ target: sandbox.url, faults }));
    const adapter = createSlackAdapter({ token: TOKEN, baseUrl: proxy.url });
    const out = await execute(adapter, 'chat.postMessage', postParams(1), 'op-1');
    expect(out).toMatchObject({ kind: 'not-applied', code: 'ratelimited', retryAfterMs: 30_000 });
    expect(proxy.requests).toHaveLength(1);
  });

  it('a Retry-After that asks no wait (negative) ⇒ still not-applied, an outcome the runner can act on', async () => {
    const out = await postWith({ kind: 'ratelimited', retryAfterS: -5 });
    expect(out).toMatchObject({ kind: 'not-applied', status: 429, code: 'ratelimited' });
    expect(outcomeProblem(out)).toBeNull();
  });

  it('the runner waits the Retry-After and sends once more: two requests, one per attempt, one message', async () => {
    const clock = createVirtualClock(Date.UTC(2026, 11, 4));
    sandbox = closeAfterTest(
      await startSlackSandbox({
        token: TOKEN,
        channels: [CHANNEL],
        now: clock.now,
        faults: { 'chat.postMessage': [{ kind: 'ratelimited', retryAfterS: 3 }] },
      }),
    );
    const adapter = createSlackAdapter({ token: TOKEN, baseUrl: sandbox.url });
    const runner = createRunner({ ledger: createMemoryLedger(), clock, random: () => 0.5 });
    const t0 = clock.now();
    const result = await runner.run(adapter, 'chat.postMessage', { params: postParams(4) });
    expect(result.status).toBe('done');
    if (result.status !== 'done') return;
    expect(result.attempts).toBe(2);
    expect(sandbox.calls('chat.postMessage')).toBe(2);
    expect(sandbox.count('chat.postMessage')).toBe(1);
    expect(clock.now() - t0).toBeGreaterThanOrEqual(3000);
  });

  it('a rate-limited history call is "cannot tell" with its Retry-After, never "not found"', async () => {
    sandbox = closeAfterTest(
      await startSlackSandbox({
        token: TOKEN,
        channels: [CHANNEL],
        faults: { 'conversations.history': [{ kind: 'ratelimited', retryAfterS: 60 }] },
      }),
    );
    const adapter = createSlackAdapter({ token: TOKEN, baseUrl: sandbox.url });
    const out = await lookup(adapter, 'chat.postMessage', postParams(1), 'op-1', {
      firstDispatchedAt: Date.now() - 1000,
    });
    expect(out).toMatchObject({ kind: 'cannot-tell', status: 429, retryAfterMs: 60_000 });
  });
});

describe('chat.update', () => {
  it('sets the content; the same call again leaves one edited message with that content', async () => {
    const adapter = await withOldMessage();
    const params = { channel: CHANNEL, ts: '1700000000.000001', text: 'new' };
    for (let i = 0; i < 2; i++)
      expect(await execute(adapter, 'chat.update', params, 'u')).toMatchObject({
        kind: 'succeeded',
        result: { channel: CHANNEL, ts: '1700000000.000001' },
      });
    expect(sandbox.count('chat.update')).toBe(1);
    expect(sandbox.messages()[0]!.text).toBe('new');
  });

  it('message_not_found ⇒ rejected, naming ts', async () => {
    sandbox = closeAfterTest(await startSlackSandbox({ token: TOKEN, channels: [CHANNEL] }));
    const adapter = createSlackAdapter({ token: TOKEN, baseUrl: sandbox.url });
    const out = await execute(adapter, 'chat.update', { channel: CHANNEL, ts: '1600000000.000001', text: 'x' }, 'v');
    expect(out).toMatchObject({ kind: 'rejected', reason: 'not-found', fields: [{ path: 'ts' }] });
  });
});
