// What the README promises about repeats: one text in one channel is one operation, and a text posted again
// on purpose is a new one only with its own intent.

import { createMemoryLedger, createRunner } from '@retrysafe/core';
import { closeAfterTest } from '@retrysafe/testkit/close-after-test';
import { expect, it } from 'vitest';
import { createSlackAdapter } from '../src/index.js';
import { startSlackSandbox } from '../src/sandbox/index.js';
import { CHANNEL, TOKEN } from './helpers.js';

it('a repeat of the same text answers with the first post; the same text with its own intent is posted again', async () => {
  const sandbox = closeAfterTest(await startSlackSandbox({ token: TOKEN, channels: [CHANNEL] }));
  const slack = createSlackAdapter({ token: TOKEN, baseUrl: sandbox.url });
  const runner = createRunner({ ledger: createMemoryLedger() });
  const params = { channel: CHANNEL, text: 'Backup finished' };

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
