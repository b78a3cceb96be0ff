// What the README promises about repeats: one text in one channel is one operation, and a text posted again
// on purpose is a new one only with its own intent.

import { identityFields } from '@retrysafe/contract/ledger';
import { createMemoryLedger, createRunner, createVirtualClock } from '@retrysafe/core';
import { agentRunner, agentTools, callAgentTool } from '@retrysafe/core/agent';
import { closeAfterTest } from '@retrysafe/testkit/close-after-test';
import { packetOf } from '@retrysafe/testkit/ledger';
import { expect, it } from 'vitest';
import { createSlackAdapter } from '../src/index.js';
import { startSlackSandbox } from '../src/sandbox/index.js';
import { CHANNEL, TOKEN } from './helpers.js';

/** A sandbox workspace (closed after the test), the adapter on it, a runner and the params of one post. */
async function oneWorkspace() {
  const sandbox = closeAfterTest(await startSlackSandbox({ token: TOKEN, channels: [CHANNEL] }));
  const slack = createSlackAdapter({ token: TOKEN, baseUrl: sandbox.url });
  const runner = createRunner({ ledger: createMemoryLedger() });
  return { sandbox, slack, runner, params: { channel: CHANNEL, text: 'Backup finished' } };
}

it('a repeat of the same text answers with the first post; the same text with its own intent is posted again', async () => {
  const { sandbox, slack, runner, params } = await oneWorkspace();

  const first = await runner.run(slack, 'chat.postMessage', { params });
  const repeat = await runner.run(slack, 'chat.postMessage', { params });
  expect(first).toMatchObject({ status: 'done', adopted: false });
  expect(repeat).toMatchObject({
    status: 'done',
    adopted: true,
    providerRef: (first as { providerRef: string }).providerRef,
  });
  expect(sandbox.count('chat.postMessage')).toBe(1);

  const nextDay = await runner.run(slack, 'chat.postMessage', { params, intent: { ...params, day: '2026-12-07' } });
  expect(nextDay).toMatchObject({ status: 'done', adopted: false });
  expect(sandbox.count('chat.postMessage')).toBe(2);
});

it('a repeat with the channel id respelt in lower case is refused by the params schema before the claim, never a second post (no Slack page says c0… is C0…)', async () => {
  const { sandbox, slack, runner, params } = await oneWorkspace();

  expect(await runner.run(slack, 'chat.postMessage', { params })).toMatchObject({ status: 'done' });
  await expect(
    runner.run(slack, 'chat.postMessage', { params: { ...params, channel: CHANNEL.toLowerCase() } }),
  ).rejects.toThrow(/channel/);
  expect(sandbox.calls('chat.postMessage')).toBe(1);
  expect(sandbox.count('chat.postMessage')).toBe(1);
});

it('one ledger, two workspaces: the same text to the same channel id with another token (its own account) is posted there too', async () => {
  const workspaces = [
    closeAfterTest(await startSlackSandbox({ token: TOKEN, channels: [CHANNEL] })),
    closeAfterTest(await startSlackSandbox({ token: `${TOKEN}-2`, channels: [CHANNEL] })),
  ];
  const acme = createSlackAdapter({ token: TOKEN, baseUrl: workspaces[0]!.url, account: 'acme' });
  const globex = createSlackAdapter({ token: `${TOKEN}-2`, baseUrl: workspaces[1]!.url, account: 'globex' });
  const runner = createRunner({ ledger: createMemoryLedger() });
  const params = { channel: CHANNEL, text: 'Backup finished' };

  expect(await runner.run(acme, 'chat.postMessage', { params })).toMatchObject({ status: 'done', adopted: false });
  expect(await runner.run(globex, 'chat.postMessage', { params })).toMatchObject({ status: 'done', adopted: false });
  expect(workspaces.map((w) => w.count('chat.postMessage'))).toEqual([1, 1]);
});

it('a repeat that spells mrkdwn as Slack’s default (true) answers with the first post; mrkdwn false is a conflict, never a second post', async () => {
  const { sandbox, slack, runner, params } = await oneWorkspace();

  const first = await runner.run(slack, 'chat.postMessage', { params });
  const spelled = await runner.run(slack, 'chat.postMessage', { params: { ...params, mrkdwn: true } });
  expect(spelled).toMatchObject({ status: 'done', adopted: true, businessOperationId: first.businessOperationId });
  await expect(runner.run(slack, 'chat.postMessage', { params: { ...params, mrkdwn: false } })).rejects.toThrow(
    /mrkdwn/,
  );
  expect(sandbox.calls('chat.postMessage')).toBe(1);
  expect(sandbox.count('chat.postMessage')).toBe(1);
});

it('two posts of one fallback text with other blocks are two messages; the same blocks in another key order are the first; blocks: [] is refused', async () => {
  const { sandbox, slack, runner, params } = await oneWorkspace();
  const order = (n: number) => [{ type: 'section', text: { type: 'mrkdwn', text: `Order ${n} shipped` } }];

  const first = await runner.run(slack, 'chat.postMessage', { params: { ...params, blocks: order(1) } });
  const second = await runner.run(slack, 'chat.postMessage', { params: { ...params, blocks: order(2) } });
  expect(first).toMatchObject({ status: 'done', adopted: false });
  expect(second).toMatchObject({ status: 'done', adopted: false });
  const reordered = [{ text: { text: 'Order 1 shipped', type: 'mrkdwn' }, type: 'section' }];
  expect(await runner.run(slack, 'chat.postMessage', { params: { ...params, blocks: reordered } })).toMatchObject({
    status: 'done',
    adopted: true,
    businessOperationId: first.businessOperationId,
  });
  await expect(runner.run(slack, 'chat.postMessage', { params: { ...params, blocks: [] } })).rejects.toThrow(/blocks/);
  expect(sandbox.count('chat.postMessage')).toBe(2);
});

it('chat.update with the same text and other blocks sets them, never refused as a conflict', async () => {
  const { sandbox, slack, runner, params } = await oneWorkspace();
  const posted = await runner.run(slack, 'chat.postMessage', { params });
  const ts = (posted as { result: { ts: string } }).result.ts;
  const update = (text: string) => ({ ...params, ts, blocks: [{ type: 'section', text: { type: 'mrkdwn', text } }] });

  expect(await runner.run(slack, 'chat.update', { params: update('Backup 1 of 2') })).toMatchObject({ status: 'done' });
  expect(await runner.run(slack, 'chat.update', { params: update('Backup 2 of 2') })).toMatchObject({
    status: 'done',
    adopted: false,
  });
  expect(sandbox.calls('chat.update')).toBe(2);
});

it('a post Slack refused, corrected by resend-with, is one message of the same operation; a new text names another intent, which nothing posted yet lets go out as a new operation', async () => {
  const faults = { 'chat.postMessage': [{ kind: 'error', error: 'msg_too_long' }] } as const;
  const sandbox = closeAfterTest(await startSlackSandbox({ token: TOKEN, channels: [CHANNEL], faults }));
  const slack = createSlackAdapter({ token: TOKEN, baseUrl: sandbox.url });
  const runner = createRunner({ ledger: createMemoryLedger() });
  const params = { channel: CHANNEL, text: 'Backup finished', unfurl_links: true };

  const first = await runner.run(slack, 'chat.postMessage', { params });
  expect(first).toMatchObject({ status: 'handed-off' });
  const retext = { action: 'resend-with', params: { ...params, text: 'Backup done' } } as const;
  await expect(runner.resolve(first.businessOperationId, retext, { adapters: [slack] })).rejects.toMatchObject({
    field: 'intent',
    storedMayApply: false,
  });
  const fixed = { action: 'resend-with', params: { ...params, unfurl_links: false } } as const;
  const again = await runner.resolve(first.businessOperationId, fixed, { adapters: [slack] });
  expect(again).toMatchObject({ status: 'done', businessOperationId: first.businessOperationId });
  expect(sandbox.count('chat.postMessage')).toBe(1);
});

it('chat.update A, then B, then A again ends at A; A twice is one edit; a change while another is in flight is refused unsent, then goes next', async () => {
  const { sandbox, slack, runner, params } = await oneWorkspace();
  const ledger = createMemoryLedger();
  const clock = createVirtualClock(Date.now());
  const runs = createRunner({ ledger, clock });
  const posted = await runner.run(slack, 'chat.postMessage', { params });
  const ts = (posted as { result: { ts: string } }).result.ts;
  const set = (text: string) => runs.run(slack, 'chat.update', { params: { channel: CHANNEL, ts, text } });

  const first = await set('A');
  const businessOperationId = first.businessOperationId;
  expect(await set('A')).toMatchObject({ status: 'done', adopted: true });
  expect(sandbox.calls('chat.update')).toBe(1);
  expect(await set('B')).toMatchObject({ status: 'done', adopted: false, businessOperationId });
  expect(await set('A')).toMatchObject({ status: 'done', adopted: false });
  expect(sandbox.calls('chat.update')).toBe(3);
  expect(sandbox.messages().find((m) => m.ts === ts)?.text).toBe('A');

  /** Another worker (w2) claims `text` as the set's next revision, as its run of it would. */
  const holdElsewhere = async (text: string, revision: number) => {
    const stored = (await ledger.get(businessOperationId))!;
    const input = {
      ...identityFields(stored),
      params: { channel: CHANNEL, ts, text },
      paramsFingerprint: `sha256:${text}`,
    };
    const supersede = { fence: stored.fence, revision, done: true } as const;
    const held = await ledger.claim({ ...input, owner: 'w2', leaseMs: 600_000, now: clock.now(), supersede });
    if (held.kind !== 'claimed') throw new Error(held.kind);
    return { businessOperationId, fence: held.record.fence };
  };
  // w2 holds revision 4 (C): a change to D is refused at once, nothing sent (queued, it could land after a change made
  // later); C done, D is sent as the next.
  const c = await holdElsewhere('C', 4);
  await expect(set('D')).rejects.toMatchObject({ name: 'ConflictError', field: 'params', storedMayApply: true });
  expect(sandbox.calls('chat.update')).toBe(3);
  await ledger.markDispatched(c, clock.now());
  await ledger.setState(c, { state: 'succeeded', now: clock.now() });
  expect(await set('D')).toMatchObject({ status: 'done', adopted: false, businessOperationId });
  expect(sandbox.calls('chat.update')).toBe(4);
  expect(sandbox.messages().find((m) => m.ts === ts)?.text).toBe('D');

  // w2 holds revision 6 (E): F is refused as a conflict, never "in progress".
  const e = await holdElsewhere('E', 6);
  await expect(set('F')).rejects.toMatchObject({ name: 'ConflictError', field: 'params', storedMayApply: true });
  const tool = agentTools([slack]).find((t) => t.operation === 'chat.update')!;
  expect(await callAgentTool(agentRunner(runs), tool, { channel: CHANNEL, ts, text: 'F' })).toMatchObject({
    status: 'conflict',
    message: expect.stringMatching(/These arguments were not sent: call again with them/),
  });
  expect(sandbox.calls('chat.update')).toBe(4);
  // w2 stops after sending E, its lease runs out: E is finished first (the same content again is harmless), then F.
  await ledger.markDispatched(e, clock.now());
  clock.advance(600_001);
  expect(await set('F')).toMatchObject({ status: 'done', adopted: false });
  expect(sandbox.calls('chat.update')).toBe(6);
  expect(sandbox.messages().find((m) => m.ts === ts)?.text).toBe('F');

  // A change a person abandoned does not close the target: other values are still its next change, sent.
  const g = await holdElsewhere('G', 8);
  const { provider, operation, intentFingerprint, providerKey } = (await ledger.get(businessOperationId))!;
  const packet = packetOf(businessOperationId, { provider, operation, intentFingerprint, providerKey });
  await ledger.handOff(g, packet, clock.now());
  await ledger.resolve(businessOperationId, { action: 'abandon' }, clock.now());
  expect(await set('H')).toMatchObject({ status: 'done', adopted: false, businessOperationId });
  expect(sandbox.messages().find((m) => m.ts === ts)?.text).toBe('H');
});

it('the agent tool of chat.update says other content is its next change; of chat.postMessage, a conflict', () => {
  const slack = createSlackAdapter({ token: TOKEN, baseUrl: 'http://127.0.0.1:9' });
  const described = (op: string) => agentTools([slack]).find((t) => t.operation === op)!.description;
  expect(described('chat.update')).toMatch(/next change/);
  expect(described('chat.update')).toMatch(/in flight, "conflict": nothing of this call was sent/);
  expect(described('chat.update')).not.toMatch(/refused as a conflict/);
  expect(described('chat.postMessage')).toMatch(/refused as a conflict/);
});

it('a post Slack refused for its blocks (an intent field): the packet does not offer resend-with, the agent is told a corrected post is a new operation', async () => {
  const faults = { 'chat.postMessage': [{ kind: 'error', error: 'invalid_blocks' }] } as const;
  const sandbox = closeAfterTest(await startSlackSandbox({ token: TOKEN, channels: [CHANNEL], faults }));
  const slack = createSlackAdapter({ token: TOKEN, baseUrl: sandbox.url });
  const runner = createRunner({ ledger: createMemoryLedger() });
  const tool = agentTools([slack]).find((t) => t.operation === 'chat.postMessage')!;
  const args = { channel: CHANNEL, text: 'Backup finished', blocks: [{ type: 'section' }] };
  const first = await callAgentTool(agentRunner(runner), tool, args);
  expect(first).toMatchObject({ status: 'needs-human' });
  expect(first.message).toMatch(/blocks \(refused by Slack: invalid_blocks\)\. One is an intent field/);
  expect(first.message).not.toMatch(/sent as a corrected request/);
  expect(first).toMatchObject({
    handoff: {
      safeNextActions: expect.arrayContaining([
        { action: 'resend-with', safe: false, why: expect.stringMatching(/a new operation/) },
      ]),
    },
  });
});
