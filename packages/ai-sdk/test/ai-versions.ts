// One agent scenario, run against each major of the AI SDK the peer range admits (5, 6, 7): the
// package's own code (src/) is loaded with `ai` resolved to that major (vi.mock in each test file
// points 'ai' at the npm alias ai5 / ai6 / ai7), and a scripted model from that major's `ai/test`.

import { createRequire } from 'node:module';
import { createMemoryLedger, createRunner } from '@retrysafe/core';
import { createStripeAdapter } from '@retrysafe/stripe';
import { startStripeSandbox } from '@retrysafe/stripe/sandbox';
import { startFaultProxy } from '@retrysafe/testkit';
import { describe, expect, it } from 'vitest';

type AiModule = {
  generateText: (o: Record<string, unknown>) => Promise<{ steps: Array<{ toolResults: Array<{ output: unknown }> }> }>;
  stepCountIs: (n: number) => unknown;
};
type AiTest = Record<string, new (o: { doGenerate: unknown[] }) => unknown>;

/** A scripted model of the newest spec this major's `ai/test` offers that `generateText` takes. */
function scriptedModel(
  aiTest: AiTest,
  spec: 'v2' | 'v3',
  steps: Array<{ calls?: Array<{ id: string; name: string; input: unknown }>; text?: string }>,
) {
  const usage =
    spec === 'v2'
      ? { inputTokens: 1, outputTokens: 1, totalTokens: 2 }
      : {
          inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
          outputTokens: { total: 1, text: 1, reasoning: 0 },
        };
  const finish = (r: 'tool-calls' | 'stop') => (spec === 'v2' ? r : { unified: r, raw: r });
  const Mock = spec === 'v2' ? aiTest.MockLanguageModelV2! : aiTest.MockLanguageModelV3!;
  return new Mock({
    doGenerate: steps.map((s) =>
      s.calls
        ? {
            content: s.calls.map((c) => ({
              type: 'tool-call',
              toolCallId: c.id,
              toolName: c.name,
              input: JSON.stringify(c.input),
            })),
            finishReason: finish('tool-calls'),
            usage,
            warnings: [],
          }
        : { content: [{ type: 'text', text: s.text ?? '' }], finishReason: finish('stop'), usage, warnings: [] },
    ),
  });
}

/**
 * The model calls the charge tool, then calls it again with a new tool-call id and the arguments
 * re-ordered; the first response is dropped after Stripe committed. One PaymentIntent, the second
 * answer adopted, one idempotency key.
 */
export async function reissuedToolCall(
  ai: AiModule,
  aiTest: AiTest,
  spec: 'v2' | 'v3',
  version: string,
): Promise<void> {
  const { retrysafeTools } = await import('../src/index.js');
  // src/ sees this major: 'ai' is the alias under test, not the workspace's default devDependency.
  expect((await import('ai')).generateText).toBe(ai.generateText);
  const sandbox = await startStripeSandbox({ port: 0 });
  const proxy = await startFaultProxy({ target: sandbox.url, faults: ['drop-response'] });
  try {
    const runner = createRunner({ ledger: createMemoryLedger(), policy: { baseMs: 1, capMs: 5 } });
    const adapter = createStripeAdapter({ apiKey: 'sk_test_ai_sdk', baseUrl: proxy.url, timeoutMs: 500 });
    const tools = retrysafeTools({ runner, adapters: [adapter], operations: ['stripe.paymentIntents.create'] });
    const name = 'stripe_paymentIntents_create';
    const model = scriptedModel(aiTest, spec, [
      {
        calls: [
          {
            id: 'call_1',
            name,
            input: { customer: 'cus_fixture', amount: 2500, currency: 'eur', orderRef: `AI-${version}` },
          },
        ],
      },
      {
        calls: [
          {
            id: 'call_2',
            name,
            input: { orderRef: `AI-${version}`, currency: 'eur', amount: 2500, customer: 'cus_fixture' },
          },
        ],
      },
      { text: 'Charged once.' },
    ]);
    const out = await ai.generateText({ model, tools, prompt: 'charge the order', stopWhen: ai.stepCountIs(5) });
    const results = out.steps
      .flatMap((s) => s.toolResults)
      .map(
        (r) => r.output as { status: string; adopted?: boolean; providerRef?: string; businessOperationId?: string },
      );
    expect(results).toHaveLength(2);
    expect(results.map((r) => r.status)).toEqual(['done', 'done']);
    expect(results[1]!.adopted).toBe(true);
    expect(results[1]!.providerRef).toBe(results[0]!.providerRef);
    expect(results[1]!.businessOperationId).toBe(results[0]!.businessOperationId);
    expect(sandbox.count('payment_intent')).toBe(1);
    expect(new Set(proxy.requests.map((r) => r.headers['idempotency-key'])).size).toBe(1);
  } finally {
    await proxy.close();
    await sandbox.close();
  }
}

/** The peer range's majors (`^5.0.0 || ^6.0.0 || ^7.0.0` → [5, 6, 7]). */
export function peerMajors(range: string): number[] {
  return range.split('||').map((r) => Number(/^\s*\^(\d+)\./.exec(r)?.[1] ?? NaN));
}

/**
 * The WorkflowAgent recipe (README): each retrysafe tool runs inside a workflow step whose runtime
 * retries are off (`stepRetriesOff`), and the step id is the run id. Here the workflow runtime's part —
 * executing the same step again, with the same step id, after a worker died before the step's result
 * was recorded — is played by calling the step function twice; everything below it is real.
 */
export async function workflowStepRecipe(): Promise<void> {
  const { retrysafeTools, stepRetriesOff } = await import('../src/index.js');
  const sandbox = await startStripeSandbox({ port: 0 });
  const proxy = await startFaultProxy({ target: sandbox.url, faults: ['drop-response'] });
  try {
    const ledger = createMemoryLedger();
    const runner = createRunner({ ledger, policy: { baseMs: 1, capMs: 5 } });
    const adapter = createStripeAdapter({ apiKey: 'sk_test_ai_sdk', baseUrl: proxy.url, timeoutMs: 500 });
    let stepId = 'step_01JWORKFLOWSTEPA';
    const tools = retrysafeTools({
      runner,
      adapters: [adapter],
      operations: ['stripe.paymentIntents.create'],
      runId: () => stepId,
    });
    const name = 'stripe_paymentIntents_create';
    const execute = tools[name]!.execute!;
    const charge = stepRetriesOff(
      async (input: unknown, opts: { toolCallId: string; messages: [] }) =>
        (await execute(input, opts as never)) as {
          status: string;
          adopted?: boolean;
          businessOperationId?: string;
          providerRef?: string;
        },
    );
    expect(charge.maxRetries).toBe(0);

    const input = { customer: 'cus_fixture', amount: 900, currency: 'eur', orderRef: 'WF-1' };
    const first = await charge(input, { toolCallId: 'call_1', messages: [] });
    const again = await charge(input, { toolCallId: 'call_1', messages: [] }); // the runtime re-executes the same step
    expect(first).toMatchObject({ status: 'done' });
    expect(again).toMatchObject({
      status: 'done',
      adopted: true,
      businessOperationId: first.businessOperationId,
      providerRef: first.providerRef,
    });
    expect(sandbox.count('payment_intent')).toBe(1);
    const receipts = await ledger.receipts(first.businessOperationId as never);
    expect(receipts.length).toBeGreaterThan(0);
    expect(new Set(receipts.map((r) => r.runId))).toEqual(new Set([stepId]));

    // A later step (new step id) that asks for the same intent is still the same business operation.
    stepId = 'step_01JWORKFLOWSTEPB';
    const later = await charge(input, { toolCallId: 'call_2', messages: [] });
    expect(later).toMatchObject({ status: 'done', adopted: true, businessOperationId: first.businessOperationId });
    expect(sandbox.count('payment_intent')).toBe(1);
  } finally {
    await proxy.close();
    await sandbox.close();
  }
}

/** The tests every major runs: its installed version, and the re-issued tool call against its scripted model. */
export function describeAiMajor(
  major: '5' | '6' | '7',
  spec: 'v2' | 'v3',
  load: () => Promise<[unknown, unknown]>,
  more: () => void = () => undefined,
): void {
  describe.skipIf(major === '7' && Number(process.versions.node.split('.')[0]) < 22)(`AI SDK ${major}`, () => {
    it(`the installed major is ${major}`, () => {
      const { version } = createRequire(import.meta.url)(`ai${major}/package.json`);
      expect(version.split('.')[0]).toBe(major);
    });
    it('a re-issued tool call maps to the same business operation: one charge, the same result', async () => {
      const [ai, aiTest] = await load();
      await reissuedToolCall(ai as never, aiTest as never, spec, major);
    });
    more();
  });
}
