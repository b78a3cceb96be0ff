import { createMemoryLedger, createRunner } from '@retrysafe/core';
import { agentRunner, agentTools, callAgentTool } from '@retrysafe/core/agent';
import { closeAfterTest } from '@retrysafe/testkit/close-after-test';
import { describe, expect, it } from 'vitest';
import { createResendAdapter } from '../src/index.js';
import { startResendSandbox } from '../src/sandbox/index.js';
import { API_KEY, emailParams } from './helpers.js';

// The agent surface (MCP server and AI SDK tools are built from core's agentTools): tool names, the schema
// the model sees and the field errors it gets, as for every other adapter.

async function setup() {
  const sandbox = closeAfterTest(await startResendSandbox());
  const adapter = createResendAdapter({ apiKey: API_KEY, baseUrl: sandbox.url, timeoutMs: 2000 });
  return { sandbox, adapter, tools: agentTools([adapter]), runner: createRunner({ ledger: createMemoryLedger() }) };
}

describe('resend as agent tools', () => {
  it('names the tools resend_emails_send and resend_batch_send, with the operation schema as input and not idempotent by nature', async () => {
    const { adapter, tools } = await setup();
    expect(tools.map((t) => t.name)).toEqual(['resend_emails_send', 'resend_batch_send']);
    expect(tools[0]!.inputSchema).toBe(adapter.operations['emails.send']!.paramsSchema);
    expect(tools[0]!.description).toContain('emailRef');
    expect(tools[0]!.annotations.readOnlyHint).toBe(false);
  });

  it('a call missing a field is invalid-input naming it, and nothing reaches Resend', async () => {
    const { sandbox, tools, runner } = await setup();
    const { subject: _s, ...args } = emailParams('agent/1');
    const r = await callAgentTool(agentRunner(runner), tools[0]!, args);
    expect(r).toMatchObject({ status: 'invalid-input', fields: [expect.objectContaining({ path: 'subject' })] });
    expect(sandbox.requestCount()).toBe(0);
  });

  it('the same call twice is one email: the second answer is the first one, adopted', async () => {
    const { sandbox, tools, runner } = await setup();
    const first = await callAgentTool(agentRunner(runner), tools[0]!, emailParams('agent/2'));
    const again = await callAgentTool(agentRunner(runner), tools[0]!, emailParams('agent/2'));
    expect(first).toMatchObject({ status: 'done', adopted: false });
    expect(again).toMatchObject({
      status: 'done',
      adopted: true,
      providerRef: (first as { providerRef: string }).providerRef,
    });
    expect(sandbox.count('emails.send')).toBe(1);
  });

  it('Resend refusing a field is needs-human naming it', async () => {
    const { tools, runner } = await setup();
    const r = await callAgentTool(agentRunner(runner), tools[0]!, emailParams('agent/3', { to: 'nobody' }));
    expect(r.status).toBe('needs-human');
    expect((r as { message: string }).message).toContain('to (');
  });
});
