// The sandbox answers as Slack documents, seen through the real WebClient (retries off).

import { createVirtualClock } from '@retrysafe/core';
import { closeAfterTest } from '@retrysafe/testkit/close-after-test';
import type { WebClient } from '@slack/web-api';
import { expect, it, onTestFinished } from 'vitest';
import { createSlackClient } from '../src/index.js';
import { type SlackSandbox, slackDrill, startSlackSandbox } from '../src/sandbox/index.js';
import { CHANNEL, TOKEN } from './helpers.js';

let sandbox: SlackSandbox;

const metadata = { event_type: 'retrysafe_operation', event_payload: { op: 'op-1' } };

async function posted(options: Parameters<typeof startSlackSandbox>[0] = {}): Promise<WebClient> {
  sandbox = closeAfterTest(await startSlackSandbox({ token: TOKEN, channels: [CHANNEL], ...options }));
  const client = createSlackClient(TOKEN, sandbox.url, 2000);
  await client.chat.postMessage({ channel: CHANNEL, text: 'hello', metadata });
  return client;
}

it("history returns a message's metadata only with include_all_metadata", async () => {
  const client = await posted();
  const without = await client.conversations.history({ channel: CHANNEL });
  expect(without.messages?.[0]).not.toHaveProperty('metadata');
  const withIt = await client.conversations.history({ channel: CHANNEL, include_all_metadata: true });
  expect(withIt.messages?.[0]?.metadata).toEqual(metadata);
});

it('a post shows in history only after historyDelayMs', async () => {
  const client = await posted({ historyDelayMs: 5_000 });
  expect((await client.conversations.history({ channel: CHANNEL })).messages).toEqual([]);
  sandbox.advance(5_000);
  expect((await client.conversations.history({ channel: CHANNEL })).messages).toHaveLength(1);
});

it('the history limit: a second call in the same minute is HTTP 429 with Retry-After, the next minute is fine', async () => {
  const client = await posted({ historyCallsPerMinute: 1 });
  await client.conversations.history({ channel: CHANNEL });
  await expect(client.conversations.history({ channel: CHANNEL })).rejects.toMatchObject({
    code: 'slack_webapi_rate_limited_error',
    retryAfter: 60,
  });
  sandbox.advance(60_000);
  expect((await client.conversations.history({ channel: CHANNEL })).ok).toBe(true);
  expect(sandbox.requests().map((r) => r.status)).toEqual([200, 200, 429, 200]);
});

it('refusals are HTTP 200 with ok: false', async () => {
  const client = await posted();
  await expect(client.chat.postMessage({ channel: 'C0UNKNOWN', text: 'x' })).rejects.toMatchObject({
    code: 'slack_webapi_platform_error',
    data: { ok: false, error: 'channel_not_found' },
  });
  expect(sandbox.requests().at(-1)).toMatchObject({ status: 200, error: 'channel_not_found' });
});

it("the drill's sandbox keeps conversations.history to Slack's non-Marketplace limit: one call a minute", async () => {
  const clock = createVirtualClock(0);
  const drillSandbox = await slackDrill.startSandbox({ clock });
  onTestFinished(() => drillSandbox.close());
  const history = () =>
    fetch(`${drillSandbox.url}/api/conversations.history`, {
      method: 'POST',
      headers: {
        authorization: 'Bearer xoxb-drill-token-not-a-secret',
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: 'channel=C0DRILL001',
    });
  expect((await history()).status).toBe(200);
  const second = await history();
  expect([second.status, second.headers.get('retry-after')]).toEqual([429, '60']);
  clock.advance(60_000);
  expect((await history()).status).toBe(200);
});

it("a message's ts is Slack's one spelling (ten digits) whatever the sandbox clock's start", async () => {
  const client = await posted({ now: () => 1_000 });
  const [message] = (await client.conversations.history({ channel: CHANNEL })).messages ?? [];
  expect(message?.ts).toBe('0000000001.000000');
});
