import { createMemoryLedger, createRunner, RunnerConfigurationError } from '@retrysafe/core';
import { toAgentResult } from '@retrysafe/core/agent';
import { createStripeAdapter } from '@retrysafe/stripe';
import { type StripeSandbox, startStripeSandbox } from '@retrysafe/stripe/sandbox';
import { type FaultProxy, startFaultProxy } from '@retrysafe/testkit';
import { generateText, stepCountIs } from 'ai';
import { MockLanguageModelV2 } from 'ai/test';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type AgentToolResult, retrysafeTools } from '../src/index.js';

// An AI SDK agent loop (generateText with tools) whose model is scripted: it calls the charge tool,
// then — as models do — calls it again with a new tool-call id and the arguments re-ordered.
let sandbox: StripeSandbox;
let proxy: FaultProxy;

beforeEach(async () => {
  sandbox = await startStripeSandbox({ port: 0 });
  proxy = await startFaultProxy({ target: sandbox.url, faults: ['drop-response'] });
});
afterEach(async () => {
  await proxy.close();
  await sandbox.close();
});

const usage = { inputTokens: 1, outputTokens: 1, totalTokens: 2 };
const toolStep = (id: string, name: string, input: unknown) => ({
  content: [{ type: 'tool-call' as const, toolCallId: id, toolName: name, input: JSON.stringify(input) }],
  finishReason: 'tool-calls' as const,
  usage,
  warnings: [],
});

describe('retrysafeTools for the Vercel AI SDK', () => {
  it('refuses a wrapped runner that lost its redaction when the tools are built', () => {
    const runner = createRunner({ ledger: createMemoryLedger() });
    const wrapped = {
      run: runner.run,
      recover: runner.recover,
      resolve: runner.resolve,
      checkResolve: runner.checkResolve,
    };
    const adapter = createStripeAdapter({ apiKey: 'sk_test_ai_sdk', baseUrl: sandbox.url });
    expect(() => retrysafeTools({ runner: wrapped, adapters: [adapter] })).toThrow(RunnerConfigurationError);
  });

  it('a re-issued tool call maps to the same business operation: one charge, the same result', async () => {
    const runner = createRunner({ ledger: createMemoryLedger(), policy: { baseMs: 1, capMs: 5 } });
    const adapter = createStripeAdapter({ apiKey: 'sk_test_ai_sdk', baseUrl: proxy.url, timeoutMs: 500 });
    const tools = retrysafeTools({ runner, adapters: [adapter], operations: ['stripe.paymentIntents.create'] });
    const name = 'stripe_paymentIntents_create';
    expect(Object.keys(tools)).toEqual([name]);

    const model = new MockLanguageModelV2({
      doGenerate: [
        toolStep('call_1', name, { customer: 'cus_fixture', amount: 2500, currency: 'eur', orderRef: 'AI-1' }),
        toolStep('call_2', name, { orderRef: 'AI-1', currency: 'eur', amount: 2500, customer: 'cus_fixture' }),
        {
          content: [{ type: 'text' as const, text: 'Charged once.' }],
          finishReason: 'stop' as const,
          usage,
          warnings: [],
        },
      ],
    });
    const out = await generateText({ model, tools, prompt: 'charge order AI-1', stopWhen: stepCountIs(5) });
    const results = out.steps.flatMap((s) => s.toolResults).map((r) => r.output as AgentToolResult);
    expect(results).toHaveLength(2);
    const [first, second] = results as [
      Extract<AgentToolResult, { status: 'done' }>,
      Extract<AgentToolResult, { status: 'done' }>,
    ];
    expect(first.status).toBe('done');
    expect(second.status).toBe('done');
    expect(second.adopted).toBe(true);
    expect(second.providerRef).toBe(first.providerRef);
    expect(second.businessOperationId).toBe(first.businessOperationId);
    expect(sandbox.count('payment_intent')).toBe(1);
    // the first call's response was dropped after Stripe committed: the runner re-sent with the same key once, the agent's retry sent nothing
    expect(proxy.requests.filter((r) => r.method === 'POST')).toHaveLength(2);
    expect(new Set(proxy.requests.map((r) => r.headers['idempotency-key'])).size).toBe(1);
  });

  it("the agent loop's abortSignal stops the runner: no re-send after the caller gave up, the operation kept for later", async () => {
    const ledger = createMemoryLedger();
    const runner = createRunner({ ledger, policy: { baseMs: 300, capMs: 300 } });
    // The answer is held, not dropped: a dropped one is re-sent after a backoff that full jitter may make ~0 ms, which a
    // loaded machine let happen before the abort below. A client timeout far longer than the test: the abort, not a
    // timeout, must end the call however loaded the machine.
    await proxy.close();
    proxy = await startFaultProxy({ target: sandbox.url, faults: [{ kind: 'delay', ms: 60_000 }] });
    const adapter = createStripeAdapter({ apiKey: 'sk_test_ai_sdk', baseUrl: proxy.url, timeoutMs: 60_000 });
    const tools = retrysafeTools({ runner, adapters: [adapter], operations: ['stripe.paymentIntents.create'] });
    const posts = () => proxy.requests.filter((r) => r.method === 'POST').length;
    const aborting = new AbortController();
    const args = { customer: 'cus_fixture', amount: 900, currency: 'eur', orderRef: 'AI-ABORT' };
    const execute = tools.stripe_paymentIntents_create!.execute!;
    const call = Promise.resolve(execute(args, { toolCallId: 'c1', messages: [], abortSignal: aborting.signal }));
    while (posts() === 0) await new Promise((r) => setTimeout(r, 10));
    aborting.abort(new Error('the user stopped the agent'));
    await expect(call).rejects.toThrow();
    await new Promise((r) => setTimeout(r, 1000));
    expect(posts()).toBe(1);
    expect((await ledger.list())[0]?.state).not.toBe('succeeded');
  });

  it('describes the retry contract to the model', () => {
    const runner = createRunner({ ledger: createMemoryLedger() });
    const adapter = createStripeAdapter({ apiKey: 'sk_test_ai_sdk', baseUrl: 'http://127.0.0.1:9', timeoutMs: 500 });
    const tools = retrysafeTools({ runner, adapters: [adapter] });
    expect(Object.keys(tools).sort()).toEqual([
      'stripe_customers_create',
      'stripe_invoices_create',
      'stripe_paymentIntents_create',
      'stripe_refunds_create',
    ]);
    expect(tools.stripe_refunds_create!.description).toMatch(/call again with the same arguments/);
  });

  it('arguments the schema refuses go nowhere: invalid-input with the field errors, in the agent loop (issue 16)', async () => {
    const runner = createRunner({ ledger: createMemoryLedger(), policy: { baseMs: 1, capMs: 5 } });
    const adapter = createStripeAdapter({ apiKey: 'sk_test_ai_sdk', baseUrl: proxy.url, timeoutMs: 500 });
    const tools = retrysafeTools({ runner, adapters: [adapter], operations: ['stripe_paymentIntents_create'] });
    const model = new MockLanguageModelV2({
      doGenerate: [
        toolStep('call_1', 'stripe_paymentIntents_create', {
          customer: 'cus_fixture',
          amount: '2500',
          currency: 'eur',
          orderRef: 'AI-2',
        }),
        { content: [{ type: 'text' as const, text: 'Fixing.' }], finishReason: 'stop' as const, usage, warnings: [] },
      ],
    });
    const out = await generateText({ model, tools, prompt: 'charge order AI-2', stopWhen: stepCountIs(3) });
    const [r] = out.steps.flatMap((s) => s.toolResults).map((x) => x.output as AgentToolResult);
    expect(r).toMatchObject({ status: 'invalid-input', fields: [{ path: 'amount', message: 'must be integer' }] });
    expect(typeof (r as { businessOperationId: unknown }).businessOperationId).toBe('string');
    expect(proxy.requests).toHaveLength(0);
  });

  it('an argument larger than every ledger stores goes nowhere: invalid-input naming the limit, nothing claimed or sent (issue 40)', async () => {
    const ledger = createMemoryLedger();
    const runner = createRunner({ ledger, policy: { baseMs: 1, capMs: 5 } });
    const adapter = createStripeAdapter({ apiKey: 'sk_test_ai_sdk', baseUrl: proxy.url, timeoutMs: 500 });
    const tools = retrysafeTools({ runner, adapters: [adapter], operations: ['stripe_paymentIntents_create'] });
    // Valid by the schema (paymentMethodTypes has no maxItems), over PAYLOAD_LIMITS.maxBytes as canonical JSON.
    const oversize = {
      customer: 'cus_fixture',
      amount: 2500,
      currency: 'eur',
      orderRef: 'AI-3',
      paymentMethodTypes: Array.from({ length: 60_000 }, (_, i) => `card_${i}_xxxxxxxxxx`),
    };
    const model = new MockLanguageModelV2({
      doGenerate: [
        toolStep('call_1', 'stripe_paymentIntents_create', oversize),
        { content: [{ type: 'text' as const, text: 'Too big.' }], finishReason: 'stop' as const, usage, warnings: [] },
      ],
    });
    const out = await generateText({ model, tools, prompt: 'charge order AI-3', stopWhen: stepCountIs(3) });
    const [r] = out.steps.flatMap((s) => s.toolResults).map((x) => x.output as AgentToolResult);
    expect(r).toMatchObject({ status: 'invalid-input', fields: [{ path: '(params)' }] });
    expect((r as { message: string }).message).toMatch(/bytes/);
    expect(typeof (r as { businessOperationId: unknown }).businessOperationId).toBe('string');
    expect(proxy.requests).toHaveLength(0);
    expect(await ledger.list()).toEqual([]);
  });
});

describe('what the answers tell the model', () => {
  it('sends the model to no tool the AI SDK tool set lacks (retrysafe_status is an MCP lookup, not one of these tools)', () => {
    const runner = createRunner({ ledger: createMemoryLedger() });
    const adapter = createStripeAdapter({ apiKey: 'sk_test_ai_sdk', baseUrl: 'http://127.0.0.1:9', timeoutMs: 500 });
    const tools = retrysafeTools({ runner, adapters: [adapter] });
    const inProgress = toAgentResult({ status: 'in-progress', businessOperationId: 'x', retryAfterMs: 1000 } as never);
    const texts = [
      ...Object.values(tools).map((t) => t.description ?? ''),
      (inProgress as { message: string }).message,
    ];
    for (const text of texts)
      for (const m of text.matchAll(/\bretrysafe_\w+/g))
        if (!Object.hasOwn(tools, m[0])) expect(text.slice(m.index), text).toMatch(/^\w+ where the host offers it/);
    expect((inProgress as { message: string }).message).toMatch(/call again .*same arguments/i);
  });
});

describe('peer range', () => {
  it('admits every AI SDK major the tests run against (5, 6, 7), so `npm i ai` (7) next to this package installs cleanly', async () => {
    const { readFileSync } = await import('node:fs');
    const { peerMajors } = await import('./ai-versions.js');
    const pj = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
      peerDependencies: Record<string, string>;
      devDependencies: Record<string, string>;
    };
    expect(peerMajors(pj.peerDependencies.ai!)).toEqual([5, 6, 7]);
    for (const alias of ['ai5', 'ai6', 'ai7']) expect(pj.devDependencies[alias], alias).toMatch(/^npm:ai@\^\d+\.0\.0$/);
  });
});
