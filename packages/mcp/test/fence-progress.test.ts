/**
 * What of a shared upstream goes to which host: each caller of a fenced call that asked for progress hears the run's,
 * none hears progress of a call that has ended, a host that leaves no longer sets the upstream's log level, and what
 * the upstream asks for a task goes to the host whose call runs it, and the host's progress on what the upstream asks
 * reaches the upstream. Real servers, the official SDK client as host.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CreateMessageRequestSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import * as z from 'zod/v4';
import {
  type Answer,
  clientOf,
  conformanceServer,
  everythingServer,
  fencesOver,
  hostOfFence,
  httpClientOf,
  httpUpstream,
  lateProgressServer,
  onCleanup,
  servedOverHttp,
} from './fence-helpers.js';

const node = process.execPath;
/** The fence over server-everything, its long-running operation fenced. */
const longRunningFence = () =>
  hostOfFence(
    { command: node, args: [everythingServer, 'stdio'] },
    {
      name: 'everything',
      timeoutMs: 5000,
      tools: { 'trigger-long-running-operation': { kind: 'create', intent: ['duration', 'steps'] } },
    },
  );

describe('progress through the fence', () => {
  it('two identical fenced calls at once, both asking for progress: each hears the run they share', async () => {
    const { client } = await longRunningFence();
    const heard: number[][] = [[], []];
    const calls = heard.map(
      (progress) =>
        client.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 1.2, steps: 4 } }, undefined, {
          timeout: 20_000,
          onprogress: (p) => progress.push(p.progress),
        }) as Promise<Answer>,
    );
    const answers = await Promise.all(calls);
    expect(answers.map((a) => a._meta?.retrysafe?.status)).toEqual(['done', 'done']);
    expect(heard[0]!.length).toBeGreaterThanOrEqual(3);
    expect(heard[1]!.length).toBeGreaterThanOrEqual(3);
  }, 20_000);

  it('an identical fenced call that asked for progress, in flight after one that did not: it hears the run', async () => {
    const { client } = await longRunningFence();
    const heard: number[] = [];
    const params = { name: 'trigger-long-running-operation', arguments: { duration: 0.6, steps: 3 } };
    const answers = (await Promise.all([
      client.callTool(params, undefined, { timeout: 20_000 }),
      client.callTool(params, undefined, { timeout: 20_000, onprogress: (p) => heard.push(p.progress) }),
    ])) as Answer[];
    expect(answers.map((a) => a._meta?.retrysafe?.status)).toEqual(['done', 'done']);
    expect(heard.length).toBeGreaterThanOrEqual(2);
  });

  it('a tool the upstream runs only as a task: its progress after the call has ended does not reach the host', async () => {
    const { client } = await hostOfFence(
      { command: node, args: [lateProgressServer] },
      { name: 'late', timeoutMs: 5000, tools: { research: { kind: 'create', intent: ['topic'] } } },
    );
    const errors: string[] = [];
    client.onerror = (e) => errors.push(e.message);
    const progress: number[] = [];
    const answer = (await client.callTool({ name: 'research', arguments: { topic: 'tides' } }, undefined, {
      onprogress: (p) => progress.push(p.progress),
    })) as Answer;
    expect(answer._meta?.retrysafe?.status).toBe('done');
    await new Promise((r) => setTimeout(r, 1000));
    expect(progress).toEqual([1]);
    expect(errors.filter((e) => /progress/.test(e))).toEqual([]);
  }, 20_000);
});

describe('progress of what the upstream asks the host', () => {
  it("the host's progress on a sampling the upstream asked for reaches the upstream, under the upstream's token", async () => {
    const heard: number[] = [];
    const make = () => {
      const server = new McpServer({ name: 'writer', version: '1.0.0' });
      server.registerTool('draft', { inputSchema: { topic: z.string() } }, async ({ topic }) => {
        const params = {
          messages: [{ role: 'user' as const, content: { type: 'text' as const, text: topic } }],
          maxTokens: 5,
        };
        const onprogress = (p: { progress: number }) => void heard.push(p.progress);
        const sampled = await server.server.createMessage(params, { onprogress });
        return { content: [sampled.content as { type: 'text'; text: string }] };
      });
      return server;
    };
    const fence = { name: 'writer', tools: { draft: { kind: 'create', intent: ['topic'] } } };
    // One session (the upstream asks its client on the call's stream), not a stateless server that cannot ask.
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: randomUUID });
    await make().connect(transport);
    const http = createServer((req, res) => void transport.handleRequest(req, res)).listen(0, '127.0.0.1');
    await once(http, 'listening');
    onCleanup(() => void http.close(() => undefined).closeAllConnections());
    const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
    const client = await clientOf((await fencesOver({ url }, fence))(), 'host', {
      capabilities: { sampling: {} },
      answer: (c) =>
        c.setRequestHandler(CreateMessageRequestSchema, async (req, extra) => {
          const progressToken = req.params._meta?.progressToken;
          if (progressToken !== undefined)
            await extra.sendNotification({ method: 'notifications/progress', params: { progressToken, progress: 1 } });
          return { role: 'assistant', content: { type: 'text', text: 'a draft' }, model: 'm' };
        }),
    });
    const answer = (await client.callTool({ name: 'draft', arguments: { topic: 'tides' } })) as Answer;
    expect(answer.content).toEqual([{ type: 'text', text: 'a draft' }]);
    expect(heard).toEqual([1]);
  });
});

describe('log levels of --http hosts', () => {
  it("a host that leaves no longer holds the upstream's level: it is set again from the hosts still there", async () => {
    const levels: unknown[] = [];
    const logging = () => {
      const server = new McpServer({ name: 'logging', version: '1.0.0' }, { capabilities: { logging: {} } });
      server.registerTool('ping', { inputSchema: { note: z.string() } }, async () => ({ content: [] }));
      return server;
    };
    const url = await httpUpstream(logging, (m: { method?: string; params?: { level?: unknown } }) => {
      if (m.method === 'logging/setLevel') levels.push(m.params?.level);
      return undefined;
    });
    const fence = { name: 'logging', tools: { ping: { kind: 'create', intent: ['note'] } } };
    const http = await servedOverHttp(await fencesOver({ url }, fence));
    const [a, b] = [await httpClientOf(http), await httpClientOf(http)];
    await a.setLoggingLevel('debug');
    await b.setLoggingLevel('error');
    expect(levels).toEqual(['debug', 'debug']);
    await (a.transport as StreamableHTTPClientTransport).terminateSession();
    await a.close();
    await expect.poll(() => levels.at(-1)).toBe('error');
  });
});

describe("the upstream's requests for a task-run call, two --http hosts' calls in flight", () => {
  const metas: unknown[] = [];
  const named = (name: string) => ({
    capabilities: { elicitation: { form: {} } },
    answer: (client: Client) =>
      client.setRequestHandler(ElicitRequestSchema, async (req) => {
        metas.push(req.params._meta);
        return { action: 'accept', content: { name } };
      }),
  });

  it('an elicitation related to the task goes to the host of the call that runs it', async () => {
    const fence = { name: 'late', timeoutMs: 5000, tools: { ask: { kind: 'create', intent: ['topic'] } } };
    const http = await servedOverHttp(await fencesOver({ command: node, args: [lateProgressServer] }, fence));
    const [a, b] = [await httpClientOf(http, named('a')), await httpClientOf(http, named('b'))];
    const ask = (client: Client, topic: string) =>
      client.callTool({ name: 'ask', arguments: { topic } }, undefined, { timeout: 10_000 }) as Promise<Answer>;
    const answers = await Promise.all([ask(a, 'tides'), ask(b, 'winds')]);
    expect(answers.map((x) => x.content?.[0]?.text)).toEqual(['asked a', 'asked b']);
    // the upstream's task is the fence's: the host is not asked about a task it never saw
    expect(metas).toHaveLength(2);
    expect(JSON.stringify(metas)).not.toMatch(/related-task/);
  }, 20_000);

  // Over streamable HTTP the upstream sends what it asks for a call on that call's own answer stream (the SDK's server
  // relates it to the call): the stream tells whose call it is for.
  it('over --url, an elicitation sent on the stream of a call goes to the host of that call', async () => {
    const server = spawn(node, [conformanceServer, '--http'], { stdio: ['ignore', 'ignore', 'pipe'] });
    onCleanup(() => server.kill());
    const url = /on (http:\S+)/.exec(String((await once(server.stderr, 'data'))[0]))![1]!;
    const fence = {
      name: 'conf',
      timeoutMs: 5000,
      tools: { test_elicitation: { kind: 'create', intent: ['message'] } },
    };
    const http = await servedOverHttp(await fencesOver({ url }, fence));
    const [a, b] = [await httpClientOf(http, named('a')), await httpClientOf(http, named('b'))];
    const ask = (client: Client, message: string) =>
      client.callTool({ name: 'test_elicitation', arguments: { message } }, undefined, {
        timeout: 10_000,
      }) as Promise<Answer>;
    const answers = await Promise.all([ask(a, 'tides'), ask(b, 'winds')]);
    expect(answers.map((x) => x.content?.[0]?.text)).toEqual([
      'Elicitation completed: action=accept, content={"name":"a"}',
      'Elicitation completed: action=accept, content={"name":"b"}',
    ]);
  }, 20_000);
});
