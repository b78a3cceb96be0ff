import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { fingerprint } from '@retrysafe/contract';
import { stripeCards } from '@retrysafe/stripe';
import { type StripeSandbox, startStripeSandbox } from '@retrysafe/stripe/sandbox';
import { type Fault, type FaultProxy, startFaultProxy } from '@retrysafe/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeStdinMidCall, writeJson } from './fence-helpers.js';

// A scripted agent talks to the real retrysafe MCP server (a child process, over stdio, with the
// real MCP client). The server drives the real stripe SDK → fault proxy → loopback Stripe sandbox.
const bin = fileURLToPath(new URL('../dist/bin.js', import.meta.url));
let sandbox: StripeSandbox;
let proxy: FaultProxy;
let client: Client;
let nextFaults: Fault[] = [];
let stderr = '';
let dir: string | undefined;
let config: string;

type ToolAnswer = {
  status: string;
  businessOperationId?: string | null;
  fields?: { path: string; message: string }[];
  paths?: string[];
  providerRef?: string | null;
  adopted?: boolean;
  result?: { id?: string; amount?: number };
  handoff?: {
    reason: string;
    safeNextActions: { action: string; safe: boolean }[];
    lastKnown?: { fields?: { path: string; message: string }[] };
  };
  message: string;
};
const call = async (name: string, args: Record<string, unknown>, timeout?: number) => {
  const r = await client.callTool({ name, arguments: args }, undefined, timeout ? { timeout } : undefined);
  return r.structuredContent as ToolAnswer;
};
/** The agent's charge of the fixture customer. */
const pay = (amount: number, currency: string, orderRef: string) =>
  call('stripe_paymentIntents_create', { customer: 'cus_fixture', amount, currency, orderRef });
const paymentIntents = () => sandbox.records().filter((r) => r.kind === 'payment_intent' && !r.fixture);

beforeAll(async () => {
  sandbox = await startStripeSandbox({ port: 0 });
  proxy = await startFaultProxy({ target: sandbox.url, faults: () => nextFaults.shift() ?? 'pass' });
  dir = mkdtempSync(join(tmpdir(), 'retrysafe-mcp-'));
  config = writeJson(dir, 'retrysafe.json', {
    ledger: './ledger.db',
    adapters: { stripe: { apiKeyEnv: 'RS_STRIPE_KEY', baseUrl: proxy.url, timeoutMs: 400 } },
    policy: { baseMs: 5, capMs: 20, waitForOtherMs: 20_000 },
    operations: ['stripe.paymentIntents.create', 'stripe.customers.create'],
  });
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [bin, '--config', config],
    env: { PATH: process.env.PATH ?? '', RS_STRIPE_KEY: 'sk_test_mcp_agent' },
    stderr: 'pipe',
  });
  transport.stderr?.on('data', (d) => (stderr += String(d)));
  client = new Client({ name: 'scripted-agent', version: '1.0.0' });
  await client.connect(transport);
}, 60_000);

afterAll(async () => {
  await client?.close(); // the server child process has exited: its ledger in dir is closed
  await proxy?.close();
  await sandbox?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('retrysafe MCP server over stdio', () => {
  it('lists the configured operations with card-derived hints and retry guidance, plus status and handoffs', async () => {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name).sort();
    // one safe naming for MCP and the AI SDK: ^[a-zA-Z0-9_-]{1,64}$ (OpenAI and Anthropic refuse dots)
    expect(names).toEqual([
      'retrysafe_handoffs',
      'retrysafe_status',
      'stripe_customers_create',
      'stripe_paymentIntents_create',
    ]);
    for (const n of names) expect(n).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
    const pi = tools.find((t) => t.name === 'stripe_paymentIntents_create')!;
    expect(pi.annotations?.idempotentHint).toBe(true); // Stripe replays the stored result for the same key
    expect(pi.annotations?.destructiveHint).toBe(true);
    expect(pi.description).toMatch(/derived from the intent fields/);
    expect(pi.description).toMatch(/call again with the same arguments/);
    expect(pi.inputSchema.type).toBe('object');
    // the normalisation rules are in the description
    expect(pi.description).toMatch(/orderRef: trim/);
    expect(pi.description).toMatch(/businessOperationId/);
  });

  it('arguments the schema refuses ⇒ invalid-input with field errors, nothing claimed, nothing sent', async () => {
    const before = proxy.requests.length;
    const r = await call('stripe_paymentIntents_create', {
      customer: 'cus_fixture',
      amount: '1500',
      currency: 'eur',
      orderRef: 'Q-1',
      colour: 'red',
    });
    expect(r.status).toBe('invalid-input');
    expect(r.fields).toEqual(
      expect.arrayContaining([
        { path: 'amount', message: 'must be integer' },
        { path: 'colour', message: 'is not a field of this operation' },
      ]),
    );
    expect(typeof r.businessOperationId).toBe('string');
    const status = await call('retrysafe_status', { businessOperationId: r.businessOperationId! });
    expect(status).toMatchObject({ found: false });
    expect(proxy.requests.length).toBe(before);
  });

  it('each operation tool carries its card digest and the caller-relevant facts in _meta', async () => {
    const { tools } = await client.listTools();
    const meta = tools.find((t) => t.name === 'stripe_paymentIntents_create')!._meta?.['retrysafe/card'] as Record<
      string,
      unknown
    >;
    expect(meta.digest).toBe(fingerprint(stripeCards['paymentIntents.create']));
    expect(meta).toMatchObject({
      cardVersion: 1,
      operation: 'stripe.paymentIntents.create',
      sideEffect: 'charge',
      intentFields: ['customer', 'orderRef'],
      sameKeyResend: true,
      keyRetention: '24h',
      lookup: true,
      lookupDelay: '1h',
      unknowns: ['providerKey.scope', 'providerKey.caseSensitive', 'lookup.lateApplyBound'],
    });
    expect(tools.find((t) => t.name === 'retrysafe_status')!._meta?.['retrysafe/card']).toBeUndefined();
  });

  it('a lost response, then the agent re-calls with a new request id and re-ordered, re-formatted arguments ⇒ the first result, 1 record', async () => {
    // the first request reaches Stripe and commits, but its answer is held past every timeout
    nextFaults = [{ kind: 'delay', ms: 3_000 }];
    const args = { customer: 'cus_fixture', amount: 1500, currency: 'eur', orderRef: 'A-17' };
    await expect(call('stripe_paymentIntents_create', args, 250)).rejects.toThrow(/timed out|timeout/i);
    // the agent tries again: a new JSON-RPC request, keys in another order, the amount written as 1.5e3
    const again = await call(
      'stripe_paymentIntents_create',
      JSON.parse('{"orderRef":"A-17","currency":"eur","amount":1.5e3,"customer":"cus_fixture"}'),
    );
    expect(again.status).toBe('done');
    expect(again.adopted).toBe(true);
    expect(paymentIntents()).toHaveLength(1);
    expect(again.providerRef).toBe(paymentIntents()[0]!.id);
    // every request the SDK sent for it carried one and the same key
    const keys = new Set(proxy.requests.filter((r) => r.method === 'POST').map((r) => r.headers['idempotency-key']));
    expect(keys.size).toBe(1);
    // and a third identical call is answered from the ledger without calling Stripe
    const before = proxy.requests.length;
    const third = await call('stripe_paymentIntents_create', args);
    expect(third).toMatchObject({ status: 'done', adopted: true, providerRef: again.providerRef });
    expect(proxy.requests.length).toBe(before);
  });

  it('the same intent with a changed amount ⇒ a structured conflict, not a second charge', async () => {
    const before = proxy.requests.length;
    const r = await pay(9900, 'eur', 'A-17');
    expect(r.status).toBe('conflict');
    expect(r.paths).toEqual(['amount']);
    expect(r.message.match(/nothing was sent/gi)).toHaveLength(1);
    expect(r.message).not.toContain('9900');
    expect(proxy.requests.length).toBe(before);
    expect(paymentIntents()).toHaveLength(1);
  });

  it('a permanent error ⇒ needs-human with the packet, and retrysafe_status shows it', async () => {
    nextFaults = [
      {
        kind: 'status',
        status: 400,
        body: {
          error: {
            type: 'invalid_request_error',
            code: 'parameter_invalid',
            param: 'currency',
            message: 'Invalid currency: zzz',
          },
        },
      },
    ];
    const r = await pay(700, 'zzz', 'B-9');
    expect(r.status).toBe('needs-human');
    expect(r.handoff?.reason).toBe('rejected');
    // the provider's field errors reach the agent, so it can correct itself
    expect(r.handoff?.lastKnown?.fields).toEqual([{ path: 'currency', message: 'parameter_invalid' }]);
    expect(r.message).toMatch(/currency \(parameter_invalid\)/);
    expect(r.handoff?.safeNextActions.map((a) => a.action)).toEqual(
      expect.arrayContaining(['resume', 'mark-done', 'abandon']),
    );
    const status = await call('retrysafe_status', { businessOperationId: r.businessOperationId! });
    expect(status).toMatchObject({ found: true, state: 'handed-off', businessOperationId: r.businessOperationId });
    const handoffs = (await client.callTool({ name: 'retrysafe_handoffs', arguments: {} })).structuredContent as {
      handoffs: { businessOperationId: string; waitsFor: string; message: string }[];
    };
    // a person's to resolve, in the words the call answered
    const row = handoffs.handoffs.find((h) => h.businessOperationId === r.businessOperationId);
    expect(row).toMatchObject({ waitsFor: 'person', message: r.message });
    // the secret key never reaches the agent
    expect(JSON.stringify([r, status, handoffs])).not.toContain('sk_test_mcp_agent');
    expect(stderr).not.toContain('sk_test_mcp_agent');
    // the agent corrects the named field under the same intent: the rejected request is superseded, one charge
    const count = paymentIntents().length;
    const fixed = await pay(700, 'eur', 'B-9 ');
    expect(fixed).toMatchObject({ status: 'done', adopted: false, businessOperationId: r.businessOperationId });
    expect(paymentIntents()).toHaveLength(count + 1);
    const again = await pay(700, 'eur', 'B-9');
    expect(again).toMatchObject({ status: 'done', adopted: true, providerRef: fixed.providerRef });
    expect(paymentIntents()).toHaveLength(count + 1);
  });

  it('the host closes stdin while a call runs: it ends and is answered, its ledger row terminal, then the server exits', async () => {
    // Stripe commits and its answer is lost; the runner re-sends under the same key: a call of a few hundred ms
    nextFaults = [{ kind: 'delay', ms: 300 }];
    const before = proxy.requests.length;
    const args = { customer: 'cus_fixture', amount: 400, currency: 'eur', orderRef: 'EOF-1' };
    const { code, answers } = await closeStdinMidCall(
      [bin, '--config', config],
      { name: 'stripe_paymentIntents_create', arguments: args },
      () => proxy.requests.length > before,
      { RS_STRIPE_KEY: 'sk_test_mcp_agent' },
    );
    expect(code).toBe(0);
    const answer = answers.find((a) => a.id === 1)?.result?.structuredContent as ToolAnswer | undefined;
    expect(answer?.status).toBe('done');
    const status = await call('retrysafe_status', { businessOperationId: answer!.businessOperationId! });
    expect(status).toMatchObject({ found: true, state: 'succeeded' });
  });
});
