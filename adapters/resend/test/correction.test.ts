import { ConflictError, UnsafeResumeError } from '@retrysafe/contract';
import { createMemoryLedger, createRunner, createVirtualClock, type RunResult } from '@retrysafe/core';
import { startFaultProxy } from '@retrysafe/testkit';
import { closeAfterTest } from '@retrysafe/testkit/close-after-test';
import { describe, expect, it } from 'vitest';
import { createResendAdapter } from '../src/index.js';
import { startResendSandbox } from '../src/sandbox/index.js';
import { API_KEY, emailParams } from './helpers.js';

// A 429 is not-applied here because a re-send carries the same key, so even a 429 that had sent folds into it
// (resend-errors.ts). A correction must keep that true: its request may not go out under a key of its own.

const HOUR = 3_600_000;
const MINUTE = 60_000;
const RATE_LIMITED = { statusCode: 429, name: 'rate_limit_exceeded', message: 'Too many requests.' };

/** `n` 429s from the rate limiter (nothing sent), each asking to wait `seconds`. */
const throttled = (n: number, seconds: number) =>
  Array.from({ length: n }, () => ({ kind: 'status', status: 429, retryAfterS: seconds, body: RATE_LIMITED }) as const);

async function setup(maxAttempts = 1) {
  const clock = createVirtualClock(Date.UTC(2026, 11, 6));
  const sandbox = closeAfterTest(await startResendSandbox({ now: clock.now }));
  // The first POST reaches Resend and is sent, but the answer is a 429; every later one passes.
  const proxy = closeAfterTest(
    await startFaultProxy({
      target: sandbox.url,
      faults: [{ kind: 'status', status: 429, forward: true, body: RATE_LIMITED }],
    }),
  );
  const adapter = createResendAdapter({ apiKey: API_KEY, baseUrl: proxy.url, timeoutMs: 2000 });
  const runner = createRunner({ ledger: createMemoryLedger(), clock, random: () => 0.5, policy: { maxAttempts } });
  return { sandbox, proxy, adapter, runner, clock };
}

/** A first run whose 429 hid an email Resend sent under its key (at the clock's start): handed off, retry-exhausted. */
async function afterHiddenSend(ref: string) {
  const rig = await setup();
  const first = await rig.runner.run(rig.adapter, 'emails.send', { params: emailParams(ref) });
  expect(first).toMatchObject({ status: 'handed-off', packet: { reason: 'retry-exhausted' } });
  expect(rig.sandbox.count('emails.send')).toBe(1);
  return rig;
}

/** A first run whose 429 hid a sent email and whose re-send got `refusal` (a status not forwarded): handed off, rejected. */
async function refusedAfterHiddenSend(ref: string, refusal: { statusCode: number; name: string; message: string }) {
  const rig = await setup(2);
  rig.proxy.setFaults([
    { kind: 'status', status: 429, forward: true, body: RATE_LIMITED },
    { kind: 'status', status: refusal.statusCode, body: refusal },
  ]);
  const first = await rig.runner.run(rig.adapter, 'emails.send', { params: emailParams(ref) });
  expect(first).toMatchObject({ status: 'handed-off', packet: { reason: 'rejected' } });
  expect(rig.sandbox.count('emails.send')).toBe(1);
  return { ...rig, first };
}

/** What the packet says of a correction: which key it goes out under. */
const resendWithWhy = (r: RunResult) =>
  r.status === 'handed-off' ? r.packet.safeNextActions.find((a) => a.action === 'resend-with')?.why : undefined;

describe('a corrected email after a 429 that had sent', () => {
  it("the correction goes out under the first request's key: never a second email", async () => {
    const { sandbox, proxy, adapter, runner } = await afterHiddenSend('corr/1');

    const corrected = await runner.run(adapter, 'emails.send', {
      params: emailParams('corr/1', { subject: 'Invoice corr/1 (corrected)' }),
    });
    expect(sandbox.count('emails.send')).toBe(1);
    expect(new Set(proxy.requests.map((r) => r.headers['idempotency-key'])).size).toBe(1);
    // Resend refuses the same key with another payload: handed off, saying the first request may have sent
    expect(corrected).toMatchObject({
      status: 'handed-off',
      packet: { lastKnown: { code: 'invalid_idempotent_request' } },
    });
  });

  it('a correction after a 429 that had not sent goes out once, under the same key', async () => {
    const { sandbox, proxy, adapter, runner } = await setup();
    proxy.setFaults([{ kind: 'status', status: 429, body: RATE_LIMITED }]);
    const first = await runner.run(adapter, 'emails.send', { params: emailParams('corr/2') });
    expect(first).toMatchObject({ status: 'handed-off', packet: { reason: 'retry-exhausted' } });
    expect(sandbox.count('emails.send')).toBe(0);
    expect(resendWithWhy(first)).toMatch(/under the same provider key/);

    const corrected = await runner.run(adapter, 'emails.send', {
      params: emailParams('corr/2', { subject: 'Invoice corr/2 (corrected)' }),
    });
    expect(corrected).toMatchObject({ status: 'done', adopted: false });
    expect(sandbox.emails().map((e) => e.subject)).toEqual(['Invoice corr/2 (corrected)']);
    expect(new Set(proxy.requests.map((r) => r.headers['idempotency-key'])).size).toBe(1);
  });

  it('a 401 after it (answered at the door, before the key store) does not prove the first request was not sent', async () => {
    const unauthorized = { statusCode: 401, name: 'missing_api_key', message: 'Missing API key.' };
    const { sandbox, adapter, runner, first } = await refusedAfterHiddenSend('corr/4', unauthorized);
    // The email was sent: the packet must not send a person to a new operation for it (a second email).
    const packet = first.status === 'handed-off' ? first.packet : undefined;
    expect(packet?.explanation).not.toMatch(/not applied and will not succeed/);
    expect(packet?.explanation).toMatch(/may have applied/);
    expect(packet?.safeNextActions.find((a) => a.action === 'resume')?.why).not.toMatch(/new operation/);

    const corrected = await runner.run(adapter, 'emails.send', {
      params: emailParams('corr/4', { subject: 'Invoice corr/4 (corrected)' }),
    });
    expect(corrected).toMatchObject({ status: 'handed-off' });
    expect(sandbox.count('emails.send')).toBe(1);
  });

  it('a quota refusal after it (which may come before the key store) does not prove the first request was not sent', async () => {
    const quota = { statusCode: 429, name: 'daily_quota_exceeded', message: 'You have reached your daily quota.' };
    // The first email used up the day's quota; its answer was lost as a 429, the re-send is refused for the quota
    const { sandbox, proxy, adapter, runner, first } = await refusedAfterHiddenSend('corr/7', quota);
    const actions = first.status === 'handed-off' ? first.packet.safeNextActions : [];
    expect(actions.map((a) => a.action)).not.toContain('resend-with');
    // the person reads that the first request may have sent the email
    expect(actions.find((a) => a.action === 'resume')?.why).toMatch(/recorded not applied.*second time/);

    // A key of its own (the quota error may be stored under the first) would send a second email
    const corrected = await runner
      .run(adapter, 'emails.send', { params: emailParams('corr/7', { subject: 'Invoice corr/7 (corrected)' }) })
      .catch((e: unknown) => e);
    expect(ConflictError.isInstance(corrected) && corrected.needsPerson).toBe(true);
    expect(sandbox.count('emails.send')).toBe(1);
    expect(proxy.requests).toHaveLength(2);
  });

  it('a correction after a 422 gets a key of its own (Resend may keep the error under the first)', async () => {
    const { sandbox, proxy, adapter, runner } = await setup();
    proxy.setFaults([]);
    const first = await runner.run(adapter, 'emails.send', { params: emailParams('corr/3', { to: 'nobody' }) });
    expect(first).toMatchObject({ status: 'handed-off', packet: { reason: 'rejected' } });
    expect(resendWithWhy(first)).toMatch(/under a provider key of its own/);
    const corrected = await runner.run(adapter, 'emails.send', { params: emailParams('corr/3') });
    expect(corrected).toMatchObject({ status: 'done', adopted: false });
    expect(sandbox.count('emails.send')).toBe(1);
    expect(new Set(proxy.requests.map((r) => r.headers['idempotency-key'])).size).toBe(2);
  });
});

describe('a correction keeps the age of the key it keeps', () => {
  it('a resume past the first call’s 24 h is refused: the key the 429 stored is gone, a re-send would be a second email', async () => {
    const { sandbox, proxy, adapter, runner, clock } = await afterHiddenSend('corr/5');

    clock.advance(23 * HOUR);
    // Resend refuses the other payload (409), and every answer is lost
    proxy.setFaults(['drop-response', 'drop-response', 'drop-response', 'drop-response']);
    const corrected = await runner.run(adapter, 'emails.send', {
      params: emailParams('corr/5', { subject: 'Invoice corr/5 (corrected)' }),
    });
    expect(corrected).toMatchObject({ status: 'handed-off' });

    clock.advance(2 * HOUR); // the key is 25 h old: Resend no longer folds a re-send under it
    proxy.setFaults([]);
    const resumed = await runner
      .resolve(corrected.businessOperationId, { action: 'resume' }, { adapters: [adapter] })
      .catch((e) => e);
    expect(sandbox.count('emails.send')).toBe(1);
    expect(UnsafeResumeError.isInstance(resumed)).toBe(true);
  });

  it('a correction throttled near the first call’s 24 h is held to the key: no re-send or resume past it, never a second email', async () => {
    const rig = await setup(4);
    rig.proxy.setFaults([{ kind: 'status', status: 429, forward: true, body: RATE_LIMITED }, ...throttled(3, 1)]);
    const first = await rig.runner.run(rig.adapter, 'emails.send', { params: emailParams('corr/8') });
    expect(first).toMatchObject({ status: 'handed-off', packet: { reason: 'retry-exhausted' } });
    expect(rig.sandbox.count('emails.send')).toBe(1);

    // Just inside the 24 h the kept key is trusted for (less the 10 min margin, twice): the correction goes out, and
    // Resend throttles it until the key may be forgotten
    rig.clock.advance(24 * HOUR - 20 * MINUTE - 15_000);
    rig.proxy.setFaults([...rig.proxy.requests.map(() => 'pass' as const), ...throttled(4, 10)]); // numbered on
    const corrected = await rig.runner.run(rig.adapter, 'emails.send', {
      params: emailParams('corr/8', { subject: 'Invoice corr/8 (corrected)' }),
    });
    expect(corrected.status).toBe('handed-off');

    rig.clock.advance(HOUR); // Resend has forgotten the key the hidden send stored
    rig.proxy.setFaults([]);
    const resumed = await rig.runner
      .resolve(corrected.businessOperationId, { action: 'resume' }, { adapters: [rig.adapter] })
      .catch((e: unknown) => e);
    expect(UnsafeResumeError.isInstance(resumed)).toBe(true);
    expect(rig.sandbox.count('emails.send')).toBe(1);
  });

  it('a correction past the first call’s 24 h is refused as a conflict a person resolves: the key no longer folds or refuses it', async () => {
    const { sandbox, proxy, adapter, runner, clock } = await afterHiddenSend('corr/6');

    clock.advance(25 * HOUR);
    const corrected = await runner
      .run(adapter, 'emails.send', { params: emailParams('corr/6', { subject: 'Invoice corr/6 (corrected)' }) })
      .catch((e: unknown) => e);
    expect(ConflictError.isInstance(corrected) && corrected.needsPerson).toBe(true);
    expect((corrected as Error).message).toMatch(/retention/);
    expect(sandbox.count('emails.send')).toBe(1);
    expect(proxy.requests).toHaveLength(1);
  });
});
