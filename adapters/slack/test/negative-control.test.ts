// Negative controls: what the adapter prevents, shown happening without it.
// 1. The SDK's default WebClient re-POSTs chat.postMessage after a lost answer: two messages for one intent.
// 2. The same operation without the history lookup, believing a re-post is harmless (what a retry loop
//    around chat.postMessage assumes): the runner re-posts and Slack holds two messages. With the shipped
//    card the lookup finds the first one. The explorer finds no second message under the shipped cards.
import { defineAdapter, defineCard, fact } from '@retrysafe/contract';
import { createMemoryLedger, createRunner, createVirtualClock } from '@retrysafe/core';
import { startFaultProxy } from '@retrysafe/testkit';
import { closeAfterTest } from '@retrysafe/testkit/close-after-test';
import { explore } from '@retrysafe/testkit/explorer';
import { LogLevel, WebClient } from '@slack/web-api';
import { describe, expect, it } from 'vitest';
import { createSlackAdapter } from '../src/index.js';
import { type SlackSandbox, startSlackSandbox } from '../src/sandbox/index.js';
import { postMessageCard, updateCard } from '../src/slack-cards.js';
import { CHANNEL, execute, postParams, TOKEN } from './helpers.js';

async function behindLostAnswer(): Promise<{ sandbox: SlackSandbox; url: string }> {
  const sandbox = closeAfterTest(await startSlackSandbox({ token: TOKEN, channels: [CHANNEL] }));
  const proxy = closeAfterTest(await startFaultProxy({ target: sandbox.url, faults: ['drop-response'] }));
  return { sandbox, url: proxy.url };
}

describe('negative control: the SDK default re-posts', () => {
  it('default WebClient (retries on), first answer lost ⇒ 2 posts, 2 messages for one intent', async () => {
    const { sandbox, url } = await behindLostAnswer();
    // The default retry policy, only its first wait shortened so the test does not sleep ~1 s.
    const client = new WebClient(TOKEN, {
      slackApiUrl: `${url}/api/`,
      retryConfig: { retries: 10, minTimeout: 10, maxTimeout: 20 },
      logLevel: LogLevel.ERROR,
    });
    await client.chat.postMessage({ channel: CHANNEL, text: 'Deploy 1 finished' });
    expect(sandbox.calls('chat.postMessage')).toBe(2);
    expect(sandbox.count('chat.postMessage')).toBe(2);
  });

  it('the adapter on the same lost answer ⇒ 1 post, 1 message, outcome unknown (look it up, do not re-post)', async () => {
    const { sandbox, url } = await behindLostAnswer();
    const adapter = createSlackAdapter({ token: TOKEN, baseUrl: url, timeoutMs: 2000 });
    const out = await execute(adapter, 'chat.postMessage', postParams(1), 'op-1');
    expect(out.kind).toBe('unknown');
    expect(sandbox.calls('chat.postMessage')).toBe(1);
    expect(sandbox.count('chat.postMessage')).toBe(1);
  });
});

describe('negative control: the same operation with the lookup removed', () => {
  // The belief a plain retry loop holds: no lookup, and a re-post is as good as the first post.
  const controlCard = defineCard({
    ...postMessageCard,
    sideEffect: {
      ...postMessageCard.sideEffect,
      idempotentByNature: fact(true, 'control: the belief that a re-post is harmless'),
    },
    lookup: { ...postMessageCard.lookup, method: fact('none', 'control: lookup removed') },
  });

  /** The shipped adapter's attempts, declared with the control card: the runner decides from it. */
  function controlAdapter(url: string) {
    const real = createSlackAdapter({ token: TOKEN, baseUrl: url, timeoutMs: 2000 });
    const op = { ...real.operations['chat.postMessage']!, card: controlCard, keyRule: null };
    return defineAdapter({
      provider: 'slack',
      operations: { 'chat.postMessage': op },
      execute: (_op, params, ctx) => real.doExecute('chat.postMessage', params, ctx),
      lookup: async () => ({ kind: 'cannot-tell', reason: 'control: no lookup' }),
    });
  }

  /** A runner on a memory ledger and a virtual clock, so the lost answer's retry waits no real time. */
  const memoryRunner = () =>
    createRunner({ ledger: createMemoryLedger(), clock: createVirtualClock(Date.now()), random: () => 0.5 });

  it('the runner re-posts after the lost answer: two messages for one intent', async () => {
    const { sandbox, url } = await behindLostAnswer();
    const runner = memoryRunner();
    const result = await runner.run(controlAdapter(url), 'chat.postMessage', { params: postParams(1) });
    expect(result.status).toBe('done');
    expect(sandbox.calls('chat.postMessage')).toBe(2);
    expect(sandbox.count('chat.postMessage')).toBe(2);
  });

  it('the shipped card on the same lost answer: one message (found in history)', async () => {
    const { sandbox, url } = await behindLostAnswer();
    const runner = memoryRunner();
    const result = await runner.run(
      createSlackAdapter({ token: TOKEN, baseUrl: url, timeoutMs: 2000 }),
      'chat.postMessage',
      { params: postParams(1) },
    );
    expect(result.status).toBe('done');
    expect(sandbox.calls('chat.postMessage')).toBe(1);
    expect(sandbox.count('chat.postMessage')).toBe(1);
  });
});

describe('the explorer over the shipped cards', () => {
  const world = { workers: 1, maxCrashes: 0, maxNetworkFaults: 2, maxStates: 40_000 } as const;

  it('no violation in any explored interleaving; chat.postMessage hands off where it cannot find the post', () => {
    const post = explore({ card: postMessageCard, ...world });
    expect(post.violation, post.violation?.story).toBeNull();
    expect(post.handsOff).toBe(true);
    const crash = explore({
      card: postMessageCard,
      workers: 2,
      maxCrashes: 1,
      maxNetworkFaults: 1,
      fates: ['delivered', 'lost-after', 'late'],
      maxStates: 100_000,
    });
    expect(crash.violation, crash.violation?.story).toBeNull();
    const update = explore({ card: updateCard, ...world });
    expect(update.violation, update.violation?.story).toBeNull();
  });
});
