// What Slack cannot post as given is refused before the claim, with nothing sent and no row.

import { InvalidParamsError } from '@retrysafe/contract';
import { operationParamsErrors } from '@retrysafe/contract/provider';
import { createMemoryLedger, createRunner } from '@retrysafe/core';
import { closeAfterTest } from '@retrysafe/testkit/close-after-test';
import { describe, expect, it } from 'vitest';
import { createSlackAdapter } from '../src/index.js';
import { startSlackSandbox } from '../src/sandbox/index.js';
import { CHANNEL, TOKEN } from './helpers.js';

describe('text over 40,000 characters', () => {
  // Slack posts it cut short (or split into several messages) with a message_truncated warning:
  // https://api.slack.com/changelog/2018-04-truncating-really-long-messages
  it.each([
    ['chat.postMessage', { channel: CHANNEL, text: 'x'.repeat(40_001) }],
    ['chat.update', { channel: CHANNEL, ts: '1700000000.000100', text: 'x'.repeat(40_001) }],
  ] as const)('%s: refused before the claim, nothing sent', async (op, params) => {
    const sandbox = closeAfterTest(await startSlackSandbox({ token: TOKEN, channels: [CHANNEL] }));
    const adapter = createSlackAdapter({ token: TOKEN, baseUrl: sandbox.url });
    const ledger = createMemoryLedger();
    await expect(createRunner({ ledger }).run(adapter, op, { params })).rejects.toSatisfy(
      (e) => InvalidParamsError.isInstance(e) && e.fields.some((f) => f.path === 'text'),
    );
    expect(sandbox.requests()).toHaveLength(0);
    expect(await ledger.list({})).toHaveLength(0);
    expect(operationParamsErrors(adapter.operations[op]!, { ...params, text: 'x'.repeat(40_000) })).toEqual([]);
  });
});

describe("chat.update's ts", () => {
  // The id digests ts as written: two spellings of one message would be two operations, and A, B, A again under the
  // first spelling would answer A from the ledger while the message shows B. Slack's own OpenAPI description
  // (defs_ts) writes a ts one way: ten digits, a point, six digits.
  it.each(['1700000000.0001', '1700000000.0001000', '01700000000.000100', '1700000000'])(
    '%s: refused before the claim, nothing sent',
    async (ts) => {
      const sandbox = closeAfterTest(await startSlackSandbox({ token: TOKEN, channels: [CHANNEL] }));
      const adapter = createSlackAdapter({ token: TOKEN, baseUrl: sandbox.url });
      const ledger = createMemoryLedger();
      const params = { channel: CHANNEL, ts, text: 'x' };
      await expect(createRunner({ ledger }).run(adapter, 'chat.update', { params })).rejects.toSatisfy(
        (e) => InvalidParamsError.isInstance(e) && e.fields.some((f) => f.path === 'ts'),
      );
      expect(sandbox.requests()).toHaveLength(0);
      expect(await ledger.list({})).toHaveLength(0);
      expect(operationParamsErrors(adapter.operations['chat.update']!, { ...params, ts: '1700000000.000100' })).toEqual(
        [],
      );
    },
  );
});
