import { type Outcome, UnsafeResumeError } from '@retrysafe/contract';
import { createMemoryLedger, type RunnerOptions } from '@retrysafe/core';
import { describe, expect, it } from 'vitest';
import { failingOnce, scripted, setup } from './helpers.js';

// An adapter may record a call not applied only because a same-key re-send folds it even if it had landed (a 429
// answered behind the key store: Resend's). Such a call is "not applied" only while the provider keeps the key: no
// re-send under it goes out, and no resume is offered as safe, once the provider may have forgotten it.

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;
const THROTTLED: Outcome = { kind: 'not-applied', message: 'rate limited', retryAfterMs: MINUTE };
const params = (amount: number) => ({ ref: 'key-age-1', amount });

/**
 * The sandbox behind an adapter whose first call reaches the provider under its key and is answered 429; later calls
 * are answered 429 while `answers.throttled` lasts, each taking `answers.takesMs`. `ageKey` moves the clock on until
 * the key is that old.
 */
function hiddenSend(runner: Partial<RunnerOptions>, behaviour: Parameters<typeof setup>[0] = {}) {
  const s = setup({ lookup: 'none', ...behaviour }, runner);
  const answers = { throttled: 0, takesMs: 0 };
  const adapter = scripted(s.adapter, (n, send) => {
    if (n === 0) return send().then(() => THROTTLED);
    s.clock.advance(answers.takesMs);
    return answers.throttled-- > 0 ? THROTTLED : undefined;
  });
  const sentAt = s.clock.now();
  const ageKey = (ms: number) => s.clock.advance(sentAt + ms - s.clock.now());
  return { ...s, adapter, answers, ageKey };
}

/** A first run of hiddenSend whose every call was answered 429: handed off, one record. */
async function afterHiddenSend(
  policy: { maxAttempts: number; maxElapsedMs?: number },
  behaviour: Parameters<typeof setup>[0] = {},
) {
  const s = hiddenSend({ policy }, behaviour);
  s.answers.throttled = policy.maxAttempts - 1;
  const first = await s.runner.run(s.adapter, 'records.create', { params: params(1) });
  expect(first).toMatchObject({ status: 'handed-off', packet: { reason: 'retry-exhausted' } });
  expect(s.provider.count()).toBe(1);
  return { ...s, first };
}

/** A resume of `id` is refused (UnsafeResumeError): nothing sent, still one record. */
async function expectResumeRefused(s: ReturnType<typeof hiddenSend>, id: string) {
  const resumed = await s.runner.resolve(id, { action: 'resume' }, { adapters: [s.adapter] }).catch((e: unknown) => e);
  expect(UnsafeResumeError.isInstance(resumed)).toBe(true);
  expect(s.provider.count()).toBe(1);
}

describe('a call recorded not applied under a key the provider may since have forgotten', () => {
  it('a correction throttled until past the key’s retention is not re-sent under it', async () => {
    // A caller who lets a throttled send wait up to 10 minutes
    const s = await afterHiddenSend({ maxAttempts: 4, maxElapsedMs: 10 * MINUTE });
    s.answers.throttled = 3;
    s.ageKey(DAY - 3 * MINUTE); // inside the retention less the margins: the correction goes out under the key
    const corrected = await s.runner.run(s.adapter, 'records.create', { params: params(2) });
    expect(corrected).toMatchObject({ status: 'handed-off', packet: { reason: 'key-past-retention' } });
    expect(s.provider.count()).toBe(1);
  });

  it('a slow 429 past the retention: the packet does not offer the resume as safe, and a resume is refused', async () => {
    const s = await afterHiddenSend({ maxAttempts: 1 });
    Object.assign(s.answers, { throttled: 1, takesMs: MINUTE });
    s.ageKey(DAY - 2 * MINUTE - 30_000);
    // The correction's answer takes a minute: by the time it says 429 the key may be gone
    const corrected = await s.runner.run(s.adapter, 'records.create', { params: params(2) });
    expect(corrected.status).toBe('handed-off');
    const packet = corrected.status === 'handed-off' ? corrected.packet : null;
    expect(packet?.safeNextActions.find((a) => a.action === 'resume')).toMatchObject({ safe: false });

    s.clock.advance(60 * MINUTE);
    await expectResumeRefused(s, corrected.businessOperationId);
  });

  it('a resume the packet offered as safe is refused once the key may be gone', async () => {
    // A concurrent duplicate is not folded, so no re-send is safe by the key: the packet calls the 429 not applied
    const s = await afterHiddenSend({ maxAttempts: 1 }, { concurrency: 'duplicates' });
    const { first } = s;
    const offered = first.status === 'handed-off' && first.packet.safeNextActions.find((a) => a.action === 'resume');
    expect(offered).toMatchObject({ safe: true });

    s.ageKey(DAY + 60 * MINUTE);
    await expectResumeRefused(s, first.businessOperationId);
  });

  it('a run that takes over a day after its worker stopped in a 429’s backoff does not re-send under the key', async () => {
    // The worker stops before its second call (the write before it fails): the row stays claimed after its 429
    const s = hiddenSend({ ledger: failingOnce(createMemoryLedger(), 'markDispatched') });
    await expect(s.runner.run(s.adapter, 'records.create', { params: params(1) })).rejects.toThrow(/disk full/);
    expect(s.provider.count()).toBe(1);

    s.ageKey(DAY + 60 * MINUTE);
    const again = await s.runner.run(s.adapter, 'records.create', { params: params(1) });
    expect(again).toMatchObject({ status: 'handed-off', packet: { reason: 'key-past-retention' } });
    expect(s.provider.count()).toBe(1);
  });

  it('a correction taken over a day after its worker stopped before sending it does not go out under the key', async () => {
    // The worker that claimed the correction stops before its first call (the write before it fails)
    const s = hiddenSend({ ledger: failingOnce(createMemoryLedger(), 'markDispatched'), policy: { maxAttempts: 1 } });
    expect(await s.runner.run(s.adapter, 'records.create', { params: params(1) })).toMatchObject({
      status: 'handed-off',
    });
    s.ageKey(DAY - 3 * MINUTE);
    await expect(s.runner.run(s.adapter, 'records.create', { params: params(2) })).rejects.toThrow(/disk full/);

    s.ageKey(DAY + 60 * MINUTE);
    const again = await s.runner.run(s.adapter, 'records.create', { params: params(2) });
    expect(again).toMatchObject({ status: 'handed-off', packet: { reason: 'key-past-retention' } });
    expect(s.provider.count()).toBe(1);
  });
});
