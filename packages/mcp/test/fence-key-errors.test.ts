/** An upstream's answer that its key already holds a request, or one still in flight, as the fence file declares it:
 * read as a plain rejection ("not applied"), a person would start a new operation, and make a second object. */
import { InMemoryTaskStore } from '@modelcontextprotocol/sdk/experimental/tasks';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ErrorCode, McpError, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { createMemoryLedger, createRunner } from '@retrysafe/core';
import { describe, expect, it } from 'vitest';
import * as z from 'zod/v4';
import { createFenceAdapter, parseFenceConfig } from '../src/index.js';
import { type Answer, hostOfFence, httpUpstream, lateProgressServer } from './fence-helpers.js';

const create: Tool = {
  name: 'create',
  inputSchema: { type: 'object', properties: { ref: { type: 'string' }, request_id: { type: 'string' } } },
};
const key = {
  argument: 'request_id',
  semantics: 'replays',
  retention: '24h',
  concurrency: 'rejects-in-progress',
  parameterMatching: 'mismatch-error',
  conflictWhen: ['already used with other arguments'],
  inProgressWhen: ['still being processed'],
};
const fenceFile = (keyed: Record<string, unknown> = {}) =>
  parseFenceConfig({
    name: 'keyed',
    ledger: './unused.db',
    policy: { baseMs: 1, capMs: 5, lookupWindowMs: 50 },
    tools: { create: { kind: 'create', intent: ['ref'], key: { ...key, ...keyed }, toolErrors: 'rejected' } },
  });

/** The run of one call whose upstream answers `answer` (or throws it), and what its handoff says. */
async function runWith(answer: () => Record<string, unknown>) {
  const callTool = async () => answer();
  const adapter = createFenceAdapter({ config: fenceFile(), client: { callTool }, tools: [create] });
  const r = await createRunner({ ledger: createMemoryLedger() }).run(adapter, 'create', { params: { ref: 'PO-1' } });
  return { status: r.status, explanation: r.status === 'handed-off' ? r.packet.explanation : '' };
}
const toolError = (text: string) => () => ({ isError: true, content: [{ type: 'text', text }] });

describe('an upstream error that says the key is taken (conflictWhen, inProgressWhen)', () => {
  it('is a conflict, whose effect may exist, not "not applied": as a tool error and as a thrown MCP error', async () => {
    const reused = await runWith(toolError('Idempotency key already used with other arguments'));
    expect(reused.explanation).toMatch(/conflict.*check the provider/);
    const thrown = await runWith(() => {
      throw Object.assign(new Error('MCP error -32602: key already used with other arguments'), { code: -32602 });
    });
    expect(thrown.explanation).toMatch(/conflict.*check the provider/);
    // Any other tool error is still the rejection the file declares.
    expect((await runWith(toolError('unknown sku'))).explanation).toMatch(/not applied and will not succeed/);
  });

  it('one still in flight under the key is in progress, never rejected', async () => {
    const answers = [toolError('request still being processed'), () => ({ content: [], structuredContent: {} })];
    expect((await runWith(() => answers.shift()!())).status).toBe('done');
  });

  it('a card whose key gets such answers, with tool errors read as rejections, must name them', () => {
    expect(() => fenceFile({ conflictWhen: undefined })).toThrow(/tools\.create\.key\.conflictWhen.*mismatch-error/);
    expect(() => fenceFile({ inProgressWhen: [] })).toThrow(/tools\.create\.key\.inProgressWhen.*rejects-in-progress/);
    expect(() => fenceFile({ conflictWhen: ['('] })).toThrow(/key\.conflictWhen\[0\] is not a valid/);
  });
});

describe("an upstream task's poll that fails once the task was created", () => {
  it('is never "not applied": an upstream that no longer knows the task (restarted: -32602) may have run it', async () => {
    let created = 0;
    // Each request meets a new server and task store, as after a restart: the SDK then answers "Task not found".
    const make = () => {
      const capabilities = { tasks: { requests: { tools: { call: {} } } } };
      const server = new McpServer(
        { name: 'tasks', version: '1.0.0' },
        { capabilities, taskStore: new InMemoryTaskStore() },
      );
      const lost = async () => {
        throw new McpError(ErrorCode.InvalidParams, 'Task not found');
      };
      server.experimental.tasks.registerToolTask(
        'research',
        { inputSchema: { topic: z.string() }, execution: { taskSupport: 'required' } },
        {
          createTask: async (_, extra) => {
            created += 1;
            return { task: await extra.taskStore.createTask({}) };
          },
          getTask: lost,
          getTaskResult: lost,
        },
      );
      return server;
    };
    const { client } = await hostOfFence(
      { url: await httpUpstream(make) },
      { name: 'late', timeoutMs: 5000, tools: { research: { kind: 'create', intent: ['topic'] } } },
    );
    const answer = (await client.callTool({ name: 'research', arguments: { topic: 'tides' } })) as Answer;
    const said = answer.structuredContent?.retrysafe as { status: string; message: string };
    expect(created).toBe(1);
    expect(said.status).toBe('needs-human');
    expect(said.message).not.toMatch(/not applied/);
  });
  it('is never "not applied": a stdio upstream that died between its polls (the next one "Not connected")', async () => {
    const { client, ledger } = await hostOfFence(
      { command: process.execPath, args: [lateProgressServer] },
      { name: 'late', timeoutMs: 5000, tools: { vanish: { kind: 'create', intent: ['topic'] } } },
    );
    const answer = (await client.callTool({ name: 'vanish', arguments: { topic: 'tides' } })) as Answer;
    const said = answer.structuredContent?.retrysafe as { status: string; handoff: { lastKnown: { message: string } } };
    expect(said.status).toBe('needs-human');
    expect(said.handoff.lastKnown.message).toMatch(/task may have run: Not connected/);
    // Sent once (a second task could run it twice), and handed off as unknown.
    expect(await ledger.list({})).toEqual([expect.objectContaining({ attemptCount: 1, lastOutcome: 'unknown' })]);
  });
});

describe("an McpServer's output validation error (the official SDK's, after its handler ran)", () => {
  it('is never "not applied", even where the fence file reads tool errors as rejections', async () => {
    let created = 0;
    const make = () => {
      const server = new McpServer({ name: 'drift', version: '1.0.0' });
      // Its handler answers another shape than its output schema: the SDK then answers isError, the order made.
      server.registerTool(
        'create_order',
        { inputSchema: { ref: z.string() }, outputSchema: { id: z.string() } },
        async () => {
          created += 1;
          return { content: [], structuredContent: { id: created } };
        },
      );
      return server;
    };
    const { client } = await hostOfFence(
      { url: await httpUpstream(make) },
      { name: 'drift', tools: { create_order: { kind: 'create', intent: ['ref'], toolErrors: 'rejected' } } },
    );
    const answer = (await client.callTool({ name: 'create_order', arguments: { ref: 'PO-1' } })) as Answer;
    const said = answer.structuredContent?.retrysafe as { status: string; message: string };
    expect(created).toBe(1);
    expect(said.status).toBe('needs-human');
    expect(said.message).not.toMatch(/not applied/);
  });
});

describe('a fenced call that never reaches its upstream (a stdio upstream dead between its exit and its pipes closing)', () => {
  it('is given back, not handed off: nothing was sent, and the next call of it runs', async () => {
    let up = false;
    const callTool = async () => {
      if (!up) throw new Error('Not connected'); // the SDK client's answer once its transport is gone: nothing written
      return { content: [], structuredContent: { id: 'ord_1' } };
    };
    const adapter = createFenceAdapter({ config: fenceFile(), client: { callTool }, tools: [create] });
    const ledger = createMemoryLedger();
    const runner = createRunner({ ledger, handoff: { send: () => expect.unreachable('no person is needed') } });
    await expect(runner.run(adapter, 'create', { params: { ref: 'PO-2' } })).rejects.toThrow(/nothing was sent/);
    expect(await ledger.list({})).toEqual([expect.objectContaining({ state: 'not-sent', leaseOwner: null })]);
    up = true;
    expect(await runner.run(adapter, 'create', { params: { ref: 'PO-2' } })).toMatchObject({ status: 'done' });
  });
});
