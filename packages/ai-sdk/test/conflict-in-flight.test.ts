import { createMemoryLedger, createRunner } from '@retrysafe/core';
import { createStripeAdapter } from '@retrysafe/stripe';
import { type StripeSandbox, startStripeSandbox } from '@retrysafe/stripe/sandbox';
import { generateText, stepCountIs } from 'ai';
import { MockLanguageModelV2 } from 'ai/test';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { gated } from '../../core/test/helpers.js';
import { type AgentToolResult, retrysafeTools } from '../src/index.js';

let sandbox: StripeSandbox;
beforeEach(async () => {
  sandbox = await startStripeSandbox({ port: 0 });
});
afterEach(async () => {
  await sandbox.close();
});

const usage = { inputTokens: 1, outputTokens: 1, totalTokens: 2 };
const name = 'stripe_paymentIntents_create';
const original = {
  customer: 'cus_fixture',
  amount: 2500,
  currency: 'eur',
  orderRef: 'AI-9',
  description: 'Order AI-9',
};

// The agent's first call got no answer in time, while worker A still holds it before Stripe; the agent re-issues it
// with a reworded description. Following the conflict answer must not charge twice: the first call still lands.
it('a conflict with a call still in flight in another worker: do not redo it under other intent fields, call again with the original arguments', async () => {
  const ledger = createMemoryLedger();
  const adapter = createStripeAdapter({ apiKey: 'sk_test_ai_sdk', baseUrl: sandbox.url, timeoutMs: 5000 });
  const { held, atGate, gate } = gated(adapter);
  const toolsOf = (a: typeof adapter) =>
    retrysafeTools({ runner: createRunner({ ledger }), adapters: [a], operations: [name] });
  const first = Promise.resolve(toolsOf(held)[name]!.execute!(original, { toolCallId: 'call_1', messages: [] }));
  await atGate.promise;

  const model = new MockLanguageModelV2({
    doGenerate: [
      {
        content: [
          {
            type: 'tool-call' as const,
            toolCallId: 'call_2',
            toolName: name,
            input: JSON.stringify({ ...original, description: 'Payment for order AI-9' }),
          },
        ],
        finishReason: 'tool-calls' as const,
        usage,
        warnings: [],
      },
      { content: [{ type: 'text' as const, text: 'ok' }], finishReason: 'stop' as const, usage, warnings: [] },
    ],
  });
  const tools = toolsOf(adapter);
  const out = await generateText({ model, tools, prompt: 'charge order AI-9', stopWhen: stepCountIs(3) });
  const [conflict] = out.steps.flatMap((s) => s.toolResults).map((r) => r.output as AgentToolResult);
  expect(conflict).toMatchObject({ status: 'conflict', paths: ['description'], storedMayApply: true });
  expect(conflict!.message).toMatch(/do not redo it under other intent fields/i);
  expect(conflict!.message).toMatch(/call again with the original arguments/);
  expect(conflict!.message).not.toMatch(/If you meant a different operation/);
  expect(conflict!.message).not.toMatch(/a person must resolve/i);

  gate.resolve();
  const done = (await first) as Extract<AgentToolResult, { status: 'done' }>;
  expect(done.status).toBe('done');
  const again = await tools[name]!.execute!(original, { toolCallId: 'call_3', messages: [] });
  expect(again).toMatchObject({ status: 'done', adopted: true, providerRef: done.providerRef });
  expect(sandbox.count('payment_intent')).toBe(1);
});

// The user stops the agent while its call waits for the worker that holds the same operation: the wait ends with the
// abort (as the abort, not an error of its own), not after policy.waitForOtherMs; the first call still lands once.
it('an abort of the agent loop ends a call waiting for another worker at once', async () => {
  const ledger = createMemoryLedger();
  const adapter = createStripeAdapter({ apiKey: 'sk_test_ai_sdk', baseUrl: sandbox.url, timeoutMs: 5000 });
  const { held, atGate, gate } = gated(adapter);
  const workerA = retrysafeTools({ runner: createRunner({ ledger }), adapters: [held], operations: [name] });
  const first = Promise.resolve(workerA[name]!.execute!(original, { toolCallId: 'call_1', messages: [] }));
  await atGate.promise;

  const stop = new AbortController();
  const logger = (e: { event: string }) => void (e.event === 'busy' && stop.abort());
  const runner = createRunner({ ledger, logger, policy: { waitForOtherMs: 600_000 } });
  const tools = retrysafeTools({ runner, adapters: [adapter], operations: [name] });
  const call = { type: 'tool-call' as const, toolCallId: 'call_2', toolName: name, input: JSON.stringify(original) };
  const model = new MockLanguageModelV2({
    doGenerate: [{ content: [call], finishReason: 'tool-calls' as const, usage, warnings: [] }],
  });
  const out = await generateText({ model, tools, prompt: 'charge order AI-9', abortSignal: stop.signal });
  const [stopped] = out.steps.flatMap((s) => s.content).filter((c) => c.type === 'tool-error');
  expect(stopped?.error).toMatchObject({ name: 'AbortError' });

  gate.resolve();
  expect(await first).toMatchObject({ status: 'done' });
  expect(sandbox.count('payment_intent')).toBe(1);
});
