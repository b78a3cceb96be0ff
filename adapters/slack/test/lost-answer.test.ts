// The real @slack/web-api WebClient (inside the adapter) → the testkit fault proxy → the loopback Slack
// sandbox, driven by the runner on one virtual clock: a lost answer ends with exactly one message.

import { createMemoryLedger, createRunner, createVirtualClock } from '@retrysafe/core';
import { startFaultProxy } from '@retrysafe/testkit';
import { closeAfterTest } from '@retrysafe/testkit/close-after-test';
import { describe, expect, it } from 'vitest';
import { createSlackAdapter } from '../src/index.js';
import { type SlackSandboxOptions, startSlackSandbox } from '../src/sandbox/index.js';
import { CHANNEL, execute, lookup, postParams, TOKEN } from './helpers.js';

const MIN = 60_000;

async function setup(sandboxOptions: SlackSandboxOptions = {}, clockSkewMarginMs?: number) {
  const clock = createVirtualClock(Date.UTC(2026, 11, 4));
  const sandbox = closeAfterTest(
    await startSlackSandbox({ token: TOKEN, channels: [CHANNEL], now: clock.now, ...sandboxOptions }),
  );
  const proxy = closeAfterTest(await startFaultProxy({ target: sandbox.url, faults: ['drop-response'] }));
  const adapter = createSlackAdapter({ token: TOKEN, baseUrl: proxy.url, timeoutMs: 2000 });
  const policy = clockSkewMarginMs === undefined ? {} : { clockSkewMarginMs };
  const runner = createRunner({ ledger: createMemoryLedger(), clock, random: () => 0.5, policy });
  return { clock, sandbox, proxy, adapter, runner };
}

/** A sandbox whose history answers one call a minute (Slack's limit for apps outside the Marketplace), on a virtual clock. */
async function historyLimited() {
  const clock = createVirtualClock(Date.UTC(2026, 11, 4));
  const sandbox = closeAfterTest(
    await startSlackSandbox({ token: TOKEN, channels: [CHANNEL], now: clock.now, historyCallsPerMinute: 1 }),
  );
  const adapter = createSlackAdapter({ token: TOKEN, baseUrl: sandbox.url });
  const t0 = clock.now();
  /** The lookup of `ours`: cannot tell while the history limit refuses its next page, then its answer once read. */
  const lookedAgain = async () => {
    const look = () =>
      lookup(adapter, 'chat.postMessage', postParams(9), 'ours', { firstDispatchedAt: t0, now: clock.now() });
    const first = await look();
    expect(first).toMatchObject({ kind: 'cannot-tell', retryAfterMs: expect.any(Number) });
    clock.advance(first.kind === 'cannot-tell' ? (first.retryAfterMs ?? 0) : 0);
    return look();
  };
  return { clock, sandbox, adapter, t0, lookedAgain };
}

describe('a lost answer to chat.postMessage', () => {
  it("the policy's clock-skew margin reaches the lookup: Slack's clock 5 min behind ours, a 10 min margin ⇒ adopted, one message", async () => {
    let now = () => 0;
    const { clock, sandbox, runner, adapter } = await setup({ now: () => now() }, 10 * MIN);
    now = () => clock.now() - 5 * MIN;
    const result = await runner.run(adapter, 'chat.postMessage', { params: postParams(7) });
    expect(result).toMatchObject({ status: 'done', adopted: true });
    expect(sandbox.count('chat.postMessage')).toBe(1);
  });

  it('the post is not in history yet: the runner waits a minute per lookup (the history limit) and adopts it: one message, one post', async () => {
    const { clock, sandbox, proxy, adapter, runner } = await setup({
      historyDelayMs: 2 * MIN,
      historyCallsPerMinute: 1,
    });
    const t0 = clock.now();
    const result = await runner.run(adapter, 'chat.postMessage', { params: postParams(1) });
    expect(result.status).toBe('done');
    if (result.status !== 'done') return;
    expect(result.adopted).toBe(true);
    expect(sandbox.count('chat.postMessage')).toBe(1);
    expect(sandbox.calls('chat.postMessage')).toBe(1);
    expect(proxy.requests.filter((r) => r.path.endsWith('/chat.postMessage'))).toHaveLength(1);
    // "not found yet" answers came first; the post was adopted only once history showed it
    expect(sandbox.calls('conversations.history')).toBeGreaterThanOrEqual(2);
    expect(sandbox.requests().filter((r) => r.method === 'conversations.history' && r.status === 429)).toHaveLength(0);
    expect(clock.now() - t0).toBeGreaterThanOrEqual(2 * MIN);
    expect(result.providerRef).toBe(sandbox.messages()[0]!.ts);
    expect(sandbox.messages()[0]!.metadata).toEqual({
      event_type: 'retrysafe_operation',
      event_payload: { op: result.businessOperationId },
    });
  });

  it('a busy channel under the once-a-minute history limit: the post found on the first page is adopted, not handed off', async () => {
    const { sandbox, adapter, runner } = await setup({ historyCallsPerMinute: 1 });
    const direct = createSlackAdapter({ token: TOKEN, baseUrl: sandbox.url });
    for (let i = 0; i < 20; i++) await execute(direct, 'chat.postMessage', postParams(100 + i), `other-${i}`);
    const result = await runner.run(adapter, 'chat.postMessage', { params: postParams(4) });
    expect(result).toMatchObject({ status: 'done', adopted: true });
    expect(sandbox.calls('chat.postMessage')).toBe(21);
  });

  it('a busy channel under the once-a-minute history limit: the post on the second page is adopted after the wait, not handed off', async () => {
    const t0 = Date.UTC(2026, 11, 4);
    // 20 messages just after ours (as others post while our answer is lost): ours is on the second page of 15
    const seed = Array.from({ length: 20 }, (_, i) => ({
      channel: CHANNEL,
      ts: ((t0 + 1000 + i) / 1000).toFixed(6),
      text: `other ${i}`,
    }));
    const { sandbox, adapter, runner } = await setup({ historyCallsPerMinute: 1, seed });
    const result = await runner.run(adapter, 'chat.postMessage', { params: postParams(5) });
    expect(result).toMatchObject({ status: 'done', adopted: true });
    expect(sandbox.calls('chat.postMessage')).toBe(1);
  });

  it('the post never shows within the lookup window: handed off, still one message, never re-posted', async () => {
    const { sandbox, adapter, runner } = await setup({ historyDelayMs: 60 * MIN });
    const result = await runner.run(adapter, 'chat.postMessage', { params: postParams(2) });
    expect(result.status).toBe('handed-off');
    expect(sandbox.count('chat.postMessage')).toBe(1);
    expect(sandbox.calls('chat.postMessage')).toBe(1);
  });

  it('another message in the channel (other metadata, none at all) is not taken for this one', async () => {
    const { sandbox, adapter, runner } = await setup({ historyDelayMs: 0 });
    // someone else's message before ours, with and without metadata
    const other = createSlackAdapter({ token: TOKEN, baseUrl: sandbox.url });
    await execute(other, 'chat.postMessage', postParams(3), 'someone-else');
    const result = await runner.run(adapter, 'chat.postMessage', {
      params: postParams(3),
      businessOperationId: 'ours',
    });
    expect(result.status).toBe('done');
    if (result.status !== 'done') return;
    const ours = sandbox.messages().find((m) => m.metadata?.event_payload.op === 'ours')!;
    expect(result.providerRef).toBe(ours.ts);
    expect(sandbox.count('chat.postMessage')).toBe(2);
  });
});

describe('the history lookup window and its page bound', () => {
  async function busyChannel(others: number) {
    const clock = createVirtualClock(Date.UTC(2026, 11, 4));
    const sandbox = closeAfterTest(await startSlackSandbox({ token: TOKEN, channels: [CHANNEL], now: clock.now }));
    const direct = createSlackAdapter({ token: TOKEN, baseUrl: sandbox.url });
    const t0 = clock.now();
    await execute(direct, 'chat.postMessage', postParams(9), 'ours');
    for (let i = 0; i < others; i++) await execute(direct, 'chat.postMessage', postParams(100 + i), `other-${i}`);
    return { clock, sandbox, t0 };
  }

  it('ours under 20 newer messages: found on the second page of 15', async () => {
    const { clock, sandbox, t0 } = await busyChannel(20);
    const adapter = createSlackAdapter({ token: TOKEN, baseUrl: sandbox.url });
    const out = await lookup(adapter, 'chat.postMessage', postParams(9), 'ours', {
      firstDispatchedAt: t0,
      now: clock.now(),
    });
    expect(out).toMatchObject({
      kind: 'found',
      outcome: { kind: 'succeeded', providerRef: sandbox.messages()[0]!.ts },
    });
    expect(sandbox.calls('conversations.history')).toBe(2);
  });

  it('ours on the first page and the next page refused by the once-a-minute history limit: cannot tell until that page is read, then found', async () => {
    const { sandbox, adapter: direct, lookedAgain } = await historyLimited();
    for (let i = 0; i < 20; i++) await execute(direct, 'chat.postMessage', postParams(100 + i), `other-${i}`);
    await execute(direct, 'chat.postMessage', postParams(9), 'ours');
    // the refused page may hold a second post of ours
    const ours = sandbox.messages().find((m) => m.metadata?.event_payload.op === 'ours')!;
    expect(await lookedAgain()).toMatchObject({ kind: 'found', outcome: { kind: 'succeeded', providerRef: ours.ts } });
    expect(
      sandbox
        .requests()
        .filter((r) => r.method === 'conversations.history')
        .map((r) => r.status),
    ).toEqual([200, 429, 200]);
  });

  it('ours on the first page and a second post of ours on the page the history limit refused: cannot tell, naming both', async () => {
    const { sandbox, adapter, lookedAgain } = await historyLimited();
    await execute(adapter, 'chat.postMessage', postParams(9), 'ours');
    for (let i = 0; i < 20; i++) await execute(adapter, 'chat.postMessage', postParams(100 + i), `other-${i}`);
    await execute(adapter, 'chat.postMessage', postParams(9), 'ours');
    const ours = sandbox.messages().filter((m) => m.metadata?.event_payload.op === 'ours');
    expect(await lookedAgain()).toMatchObject({
      kind: 'cannot-tell',
      duplicates: ours.map((m) => m.ts).sort(),
      reason: `2 posts of this bot carry this id: ${ours
        .map((m) => m.ts)
        .sort()
        .join(', ')}`,
    });
  });

  it('ours on the second page under the once-a-minute history limit: the refused page is asked for again after the wait, not page 1', async () => {
    const { sandbox, adapter, lookedAgain } = await historyLimited();
    await execute(adapter, 'chat.postMessage', postParams(9), 'ours');
    for (let i = 0; i < 20; i++) await execute(adapter, 'chat.postMessage', postParams(100 + i), `other-${i}`);
    expect(await lookedAgain()).toMatchObject({ kind: 'found', outcome: { providerRef: sandbox.messages()[0]!.ts } });
    const statuses = sandbox.requests().filter((r) => r.method === 'conversations.history');
    expect(statuses.map((r) => r.status)).toEqual([200, 429, 200]);
  });

  it('more messages than the page bound: cannot tell (never not-found), asking again in a minute', async () => {
    const { clock, sandbox, t0 } = await busyChannel(20);
    const adapter = createSlackAdapter({ token: TOKEN, baseUrl: sandbox.url, lookupPages: 1 });
    const out = await lookup(adapter, 'chat.postMessage', postParams(9), 'ours', {
      firstDispatchedAt: t0,
      now: clock.now(),
    });
    expect(out).toMatchObject({ kind: 'cannot-tell', retryAfterMs: MIN });
    expect(sandbox.calls('conversations.history')).toBe(1);
  });

  it('a post applied long after the last dispatch is outside the window: cannot tell, never not-found', async () => {
    const { clock, sandbox } = await busyChannel(0);
    const dispatchedAt = clock.now() - 60 * MIN;
    const adapter = createSlackAdapter({ token: TOKEN, baseUrl: sandbox.url });
    const out = await lookup(adapter, 'chat.postMessage', postParams(9), 'ours', {
      firstDispatchedAt: dispatchedAt,
      now: clock.now(),
    });
    expect(out.kind).toBe('cannot-tell');
  });
});
