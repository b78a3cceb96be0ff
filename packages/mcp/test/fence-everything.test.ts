/**
 * The fence in front of `@modelcontextprotocol/server-everything`, the official reference server that exercises every
 * protocol feature, driven by the official SDK client: what passes through answers as the server answers directly
 * (tools, content kinds, structured content, resources, prompts, completions, notifications), progress reaches the
 * host, and a fenced create-like tool whose answer is lost or late is never sent twice.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ErrorCode,
  McpError,
  ResultSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { openLedger } from '@retrysafe/config';
import { createMemoryLedger } from '@retrysafe/core';
import { describe, expect, it } from 'vitest';
import { AS_CLIENT } from '../src/fence/host-sessions.js';
import { connectUpstream } from '../src/fence/upstream.js';
import {
  type Answer,
  bin,
  callTool as call,
  clientOf,
  connect,
  everythingServer,
  expectStopped,
  fencesOver,
  httpClientOf,
  lookupPolicy,
  lossyRelay,
  onCleanup,
  servedOverHttp,
  sharedByTests,
  tempDir,
  wrapped,
  writeFence,
} from './fence-helpers.js';

const node = process.execPath;
const LOOKUPS = ['retrysafe_status', 'retrysafe_handoffs'];

/** `answer` without the time server-everything writes into a resource it makes ("created at 10:41:07 AM"), which
 * differs between two calls a second apart. */
const untimed = (answer: unknown) =>
  JSON.parse(JSON.stringify(answer), (key, v) => {
    const at = (text: string) => text.replace(/ created at .*$/, ' created at <time>');
    if (key === 'text' && typeof v === 'string') return at(v);
    if (key === 'blob' && typeof v === 'string')
      return Buffer.from(at(Buffer.from(v, 'base64').toString())).toString('base64');
    return v;
  });

/** gzip-file-as-resource registers a session resource under its `name`: a create; `slow` fences the long-running one too. */
const everythingFence = (dir: string, slow = false) =>
  writeFence(dir, {
    name: 'everything',
    timeoutMs: 700,
    policy: lookupPolicy,
    tools: {
      'gzip-file-as-resource': { kind: 'create', intent: ['name'] },
      ...(slow ? { 'trigger-long-running-operation': { kind: 'create', intent: ['duration', 'steps'] } } : {}),
    },
  });

/** Notifications of `method` the client has received so far. */
function collect(client: Client) {
  const seen: { method: string; params?: unknown }[] = [];
  client.fallbackNotificationHandler = async (n) => void seen.push(n);
  return seen;
}

/** Calls of server-everything's tools that answer, each with its arguments. */
const ANSWERED: [string, Record<string, unknown>][] = [
  ['echo', { message: 'hi' }],
  ['get-annotated-message', { messageType: 'error', includeImage: true }],
  ['get-resource-links', { count: 3 }],
  ['get-structured-content', { location: 'Chicago' }],
  ['get-sum', { a: 1, b: 2 }],
];

/** A host that declares what the fence declares upstream (the server lists the tools that use them), and refuses to
 * sample with an error of its own, which the upstream quotes. */
const declines = {
  capabilities: AS_CLIENT,
  answer: (c: Client) =>
    c.setRequestHandler(CreateMessageRequestSchema, async () => {
      throw new McpError(ErrorCode.InvalidRequest, 'the user declined');
    }),
};

describe('server-everything behind the fence', () => {
  // Shared by the tests: server-everything directly (none of them changes what it answers another: no session
  // resources are made there), and a fence with the default file for those that leave it running.
  const theServer = sharedByTests(() => connect(node, [everythingServer, 'stdio'], {}, declines));
  const fenced = sharedByTests(async () =>
    wrapped(everythingFence(tempDir('retrysafe-everything-')), ['--', node, everythingServer]),
  );

  it('passed-through tools, resources, prompts and completions answer as the server does directly', async () => {
    const direct = theServer();
    const fence = everythingFence(tempDir('retrysafe-everything-'));
    const client = await connect(node, [bin, 'wrap', '--config', fence, '--', node, everythingServer], {}, declines);
    const [mine, theirs] = [(await client.listTools()).tools, (await direct.listTools()).tools];
    // nothing dropped, nothing doubled, every schema usable by the client
    expect(mine.map((t) => t.name).sort()).toEqual([...theirs.map((t) => t.name), ...LOOKUPS].sort());
    const ajv = new AjvJsonSchemaValidator();
    for (const t of mine) {
      if (t.outputSchema) expect(() => ajv.getValidator(t.outputSchema as never)).not.toThrow();
      const upstream = theirs.find((u) => u.name === t.name);
      if (!upstream || t._meta?.retrysafe) continue;
      // a tool it runs only as a task, the host calls as any tool: the fence runs the task
      const execution =
        upstream.execution?.taskSupport === 'required' ? { taskSupport: 'forbidden' } : upstream.execution;
      expect({ ...t, description: upstream.description }).toEqual({ ...upstream, execution });
    }
    // an intent argument the upstream has a default for is listed required: the fence refuses a call without it
    expect(mine.find((t) => t.name === 'gzip-file-as-resource')?.inputSchema.required).toEqual(['name']);
    const calls: [string, Record<string, unknown>][] = [
      ...ANSWERED,
      ['get-resource-reference', { resourceType: 'blob', resourceId: 2 }],
      ['get-tiny-image', {}],
      ['get-sum', { a: 'one' }],
      ['trigger-sampling-request', { prompt: 'hi', maxTokens: 5 }],
    ];
    for (const [name, args] of calls)
      expect(untimed(await call(client, name, args))).toEqual(untimed(await call(direct, name, args)));
    expect(await client.listResources()).toEqual(await direct.listResources());
    expect(await client.listResourceTemplates()).toEqual(await direct.listResourceTemplates());
    const uri = 'demo://resource/dynamic/text/1';
    expect(untimed(await client.readResource({ uri }))).toEqual(untimed(await direct.readResource({ uri })));
    expect(await client.listPrompts()).toEqual(await direct.listPrompts());
    const prompt = { name: 'args-prompt', arguments: { city: 'Oslo' } };
    expect(await client.getPrompt(prompt)).toEqual(await direct.getPrompt(prompt));
    const complete = {
      ref: { type: 'ref/prompt' as const, name: 'completable-prompt' },
      argument: { name: 'department', value: 'E' },
    };
    expect(await client.complete(complete)).toEqual(await direct.complete(complete));
    // the upstream's JSON-RPC errors, as it sends them
    const failure = (p: Promise<unknown>) => p.then(String, (e: McpError) => ({ ...e, message: e.message }));
    for (const ask of [
      (c: Client) => c.readResource({ uri: 'demo://nope' }),
      (c: Client) => c.getPrompt({ name: 'nope' }),
      (c: Client) => c.complete({ ...complete, ref: { type: 'ref/prompt', name: 'nope' } }),
    ])
      expect(await failure(ask(client))).toEqual(await failure(ask(direct)));
  });

  it('fenced tools answer field by field as directly (content, structuredContent, isError, _meta), their stored copy too', async () => {
    /** Each tool fenced by its arguments, with a call it answers. */
    const calls: [string, Record<string, unknown>][] = [
      ...ANSWERED,
      ['get-resource-reference', { resourceType: 'Blob', resourceId: 2 }],
    ];
    const tools = Object.fromEntries(
      calls.map(([name, args]) => [name, { kind: 'create', intent: Object.keys(args) }]),
    );
    const fence = writeFence(tempDir('retrysafe-everything-'), { name: 'everything', tools });
    const direct = theServer();
    const client = await wrapped(fence, ['--', node, everythingServer]);
    await Promise.all([direct.listTools(), client.listTools()]); // both clients check structured content
    for (const [name, args] of calls) {
      const { _meta, ...answer } = await call(direct, name, args);
      for (const adopted of [false, true]) {
        const { _meta: meta, ...fenced } = await call(client, name, args);
        expect(untimed(fenced)).toEqual(untimed(answer));
        expect(meta).toEqual({ ..._meta, retrysafe: expect.objectContaining({ status: 'done', adopted }) });
      }
    }
    // Arguments its schema refuses: an error both ways, the fence's (refused before anything is sent) naming the field.
    const [refused, theirs] = [
      await call(client, 'get-sum', { a: 'one' }),
      await call(direct, 'get-sum', { a: 'one' }),
    ];
    expect([refused.isError, theirs.isError]).toEqual([true, true]);
    expect(refused.structuredContent).toMatchObject({
      retrysafe: { status: 'invalid-input', fields: [{ path: 'b' }, { path: 'a' }] },
    });
  });

  it('a pass-through call with a progressToken: its progress reaches the host, which keeps it alive', async () => {
    const client = fenced();
    const progress: number[] = [];
    const answer = (await client.callTool(
      { name: 'trigger-long-running-operation', arguments: { duration: 1.5, steps: 5 } },
      undefined,
      { timeout: 800, resetTimeoutOnProgress: true, onprogress: (p) => progress.push(p.progress) },
    )) as Answer;
    expect(answer.content?.[0]?.text).toMatch(/Long running operation completed/);
    expect(progress.length).toBeGreaterThanOrEqual(3);
  });

  it('logging and resource updates are relayed, and a cancelled call leaves the fence answering', async () => {
    const client = fenced();
    const seen = collect(client);
    await client.setLoggingLevel('debug');
    await client.subscribeResource({ uri: 'demo://resource/dynamic/text/1' });
    await call(client, 'toggle-simulated-logging', {});
    await call(client, 'toggle-subscriber-updates', {});
    await expect.poll(() => seen.map((n) => n.method)).toContain('notifications/message');
    await expect.poll(() => seen.map((n) => n.method)).toContain('notifications/resources/updated');
    // the host gives up on a long pass-through call at its first progress: the fence cancels it upstream, stays up
    const abort = new AbortController();
    const cancelled = client.callTool(
      { name: 'trigger-long-running-operation', arguments: { duration: 2, steps: 4 } },
      undefined,
      { signal: abort.signal, onprogress: () => abort.abort('the host gave up') },
    );
    await expect(cancelled).rejects.toThrow(/the host gave up/);
    expect((await call(client, 'echo', { message: 'after' })).content?.[0]?.text).toMatch(/after/);
  });

  it('closed by its host while the upstream runs timers of its own (simulated logging): the upstream stops too', async () => {
    const dir = tempDir('retrysafe-everything-');
    const pidFile = join(dir, 'pid');
    // The upstream through a shell that writes its pid and execs it (server-everything writes no pid file).
    const upstream = ['sh', '-c', 'echo $$ > "$0"; exec "$1" "$2"', pidFile, node, everythingServer];
    const client = await wrapped(everythingFence(dir), ['--', ...upstream]);
    await call(client, 'toggle-simulated-logging', {});
    await client.close(); // the SDK's host: our stdin ended, SIGTERM 2 s later, SIGKILL 2 s after that
    await expectStopped(pidFile);
  });

  it('a tool the upstream runs only as a task (simulate-research-query): called as any tool, through the ledger when fenced', async () => {
    const name = 'simulate-research-query';
    const fence = writeFence(tempDir('retrysafe-everything-'), {
      name: 'everything',
      tools: { [name]: { kind: 'create', intent: ['topic'] } },
    });
    const passed = everythingFence(tempDir('retrysafe-everything-'));
    // the host answers the upstream's question about an ambiguous topic
    const answer = (client: Client) =>
      client.setRequestHandler(ElicitRequestSchema, async () => ({
        action: 'accept',
        content: { interpretation: 'historical' },
      }));
    const direct = theServer();
    const [host, client] = await Promise.all([
      connect(
        node,
        [bin, 'wrap', '--config', passed, '--', node, everythingServer],
        {},
        {
          capabilities: { elicitation: {} },
          answer,
        },
      ),
      wrapped(fence, ['--', node, everythingServer]),
    ]);
    const seen = collect(host);
    await Promise.all([direct, host, client].map((c) => c.listTools()));
    // directly, only a host that speaks tasks can call it; through the fence, the SDK's plain callTool does
    const directly = async () => {
      for await (const m of direct.experimental.tasks.callToolStream({ name, arguments: { topic: 'tides' } }))
        if (m.type === 'result') return m.result.content;
    };
    const [theirs, mine, asked, first] = await Promise.all([
      directly(),
      call(host, name, { topic: 'tides' }),
      call(host, name, { topic: 'tides', ambiguous: true }),
      call(client, name, { topic: 'tides' }),
    ]);
    expect(mine.content).toEqual(theirs);
    expect(asked.content?.[0]?.text).toMatch(/historical/);
    // fenced: one business operation per topic, its answer stored
    expect(first).toMatchObject({ content: theirs, _meta: { retrysafe: { status: 'done', adopted: false } } });
    const again = await call(client, name, { topic: 'tides' });
    expect(again).toMatchObject({ content: theirs, _meta: { retrysafe: { status: 'done', adopted: true } } });
    // the fence's own tasks upstream are no host's to list or cancel, nor to hear of (it offers no tasks)
    await expect(host.request({ method: 'tasks/list', params: {} }, ResultSchema)).rejects.toThrow(/-32601/);
    expect(seen.map((n) => n.method)).not.toContain('notifications/tasks/status');
  });

  it('a fenced create whose answer is lost or late: one effect, and the same valid answer on the re-issue', async () => {
    const upstream = ['--', node, lossyRelay, '--drop-answer', 'gzip-file-as-resource', '--', node, everythingServer];
    const dir = tempDir('retrysafe-everything-');
    const client = await wrapped(everythingFence(dir, true), upstream);
    await client.listTools();
    const args = { name: 'a.gz', data: 'data:text/plain;base64,aGVsbG8=' };
    const lost = await call(client, 'gzip-file-as-resource', args);
    // no lookup declared and no key travels: a person decides, nothing is re-sent
    expect(lost._meta?.retrysafe?.status).toBe('needs-human');
    const again = await call(client, 'gzip-file-as-resource', args);
    expect(again._meta?.retrysafe).toEqual(lost._meta?.retrysafe);
    const made = (await client.listResources()).resources.filter((r) => r.uri.startsWith('demo://resource/session/'));
    expect(made.map((r) => r.name)).toEqual(['a.gz']);
    // an answer that arrives: the upstream's embedded resource, unchanged, and the same on the re-issue
    const b = { ...args, name: 'b.gz', outputType: 'resource' };
    const first = await call(client, 'gzip-file-as-resource', b);
    expect(first._meta?.retrysafe).toMatchObject({ status: 'done', adopted: false });
    expect(first.content?.[0]).toMatchObject({ type: 'resource', resource: { uri: 'demo://resource/session/b.gz' } });
    const replay = await call(client, 'gzip-file-as-resource', b);
    expect(replay.content).toEqual(first.content);
    // longer than the fence's timeoutMs without progress: unknown, handed to a person, not sent again on the re-issue
    const slow = { duration: 1.5, steps: 1 };
    const late = await call(client, 'trigger-long-running-operation', slow);
    expect(late._meta?.retrysafe?.status).toBe('needs-human');
    expect((await call(client, 'trigger-long-running-operation', slow))._meta?.retrysafe?.status).toBe('needs-human');
    const ledger = await openLedger('./fence.db', dir);
    const [row] = (await ledger.list()).filter((r) => (r.params as typeof slow).duration === slow.duration);
    const sends = (await ledger.receipts(row!.businessOperationId)).filter((r) => r.kind === 'dispatch');
    await ledger.close();
    expect(sends).toHaveLength(1);
    // the host asks for progress: the upstream's reaches it, and keeps the fence's call alive as it keeps the host's
    const progress: number[] = [];
    const reported = (await client.callTool(
      { name: 'trigger-long-running-operation', arguments: { duration: 1.4, steps: 4 } },
      undefined,
      { timeout: 20_000, onprogress: (p) => progress.push(p.progress) },
    )) as Answer;
    expect(reported._meta?.retrysafe).toMatchObject({ status: 'done', adopted: false });
    expect(reported.content?.[0]?.text).toMatch(/Long running operation completed/);
    expect(progress.length).toBeGreaterThanOrEqual(3);
  });

  it('over HTTP (`wrap --http`): the same answers as direct, and a fenced create replayed', async () => {
    const TOKEN = 'everything-token-0123456789';
    const fence = everythingFence(tempDir('retrysafe-everything-http-'));
    const child = spawn(node, [bin, 'wrap', '--config', fence, '--http', '--', node, everythingServer], {
      env: { PATH: process.env.PATH ?? '', RETRYSAFE_MCP_TOKEN: TOKEN },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    onCleanup(async () => {
      child.kill();
      if (child.exitCode === null) await once(child, 'exit');
    });
    let err = '';
    const url = await new Promise<string>((resolve, reject) => {
      child.stderr.on('data', (d) => {
        err += String(d);
        const m = /retrysafe fence on (http:\/\/\S+)/.exec(err);
        if (m) resolve(m[1]!);
      });
      child.on('exit', (code) => reject(new Error(`wrap --http exited ${code}: ${err}`)));
    });
    const client = new Client({ name: 'http-host', version: '1.0.0' });
    const headers = { authorization: `Bearer ${TOKEN}` };
    await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
    onCleanup(() => client.close());
    const direct = theServer();
    for (const [name, args] of [
      ['get-structured-content', { location: 'Los Angeles' }],
      ['get-resource-links', { count: 2 }],
    ] as const)
      expect(await call(client, name, args)).toEqual(await call(direct, name, args));
    expect(await client.listPrompts()).toEqual(await direct.listPrompts());
    const args = { name: 'h.gz', data: 'data:text/plain;base64,aGVsbG8=' };
    const first = await call(client, 'gzip-file-as-resource', args);
    expect(first._meta?.retrysafe).toMatchObject({ status: 'done', adopted: false });
    const again = await call(client, 'gzip-file-as-resource', args);
    expect(again._meta?.retrysafe).toMatchObject({ status: 'done', adopted: true });
    expect(again.content).toEqual(first.content);
    // a host that did not declare sampling: the upstream's request is refused
    const sampled = await call(client, 'trigger-sampling-request', { prompt: 'hi', maxTokens: 5 }, 5000);
    expect([sampled.isError, sampled.content?.[0]?.text]).toEqual([true, expect.stringMatching(/sampling/)]);
  });
});

/** server-everything in its streamable HTTP mode (or its HTTP+SSE one) on `port` (sessions in memory: a restart forgets
 * them); `log()` is what it wrote. */
async function everythingOnPort(port: number, mode: 'streamableHttp' | 'sse' = 'streamableHttp') {
  const child = spawn(node, [everythingServer, mode], {
    env: { PATH: process.env.PATH ?? '', PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  onCleanup(() => child.kill());
  let out = '';
  for (const s of [child.stdout, child.stderr]) s.on('data', (d) => (out += String(d)));
  await expect.poll(() => out).toMatch(/(listening|running) on port/);
  return Object.assign(child, { log: () => out });
}

async function freePort() {
  const free = createServer().listen(0, '127.0.0.1');
  await once(free, 'listening');
  const { port } = free.address() as { port: number };
  free.close();
  return port;
}

describe('server-everything as an upstream over --url (its streamable HTTP mode)', () => {
  it('the fence that stops ends its session there (DELETE): the server keeps a session until told', async () => {
    const port = await freePort();
    const server = await everythingOnPort(port);
    const upstream = await connectUpstream({ url: `http://127.0.0.1:${port}/mcp` });
    const session = /Session initialized with ID: (\S+)/.exec(server.log())?.[1];
    await upstream.close();
    await expect.poll(server.log).toContain(`Received session termination request for session ${session}`);
  });

  it("two --http hosts' samplings each go to their own host; after it restarts, a fenced call is done, not handed off", async () => {
    const port = await freePort();
    const first = await everythingOnPort(port);
    const fence = { name: 'everything', timeoutMs: 5000, tools: { echo: { kind: 'create', intent: ['message'] } } };
    const http = await servedOverHttp(await fencesOver({ url: `http://127.0.0.1:${port}/mcp` }, fence));
    const sampler = (model: string) => ({
      capabilities: { sampling: {} },
      answer: (client: Client) =>
        client.setRequestHandler(CreateMessageRequestSchema, async () => {
          await new Promise((r) => setTimeout(r, 300)); // both calls in flight
          return { role: 'assistant', content: { type: 'text', text: 'hi' }, model };
        }),
    });
    const hosts = [await httpClientOf(http, sampler('a')), await httpClientOf(http, sampler('b'))];
    const sampled = await Promise.all(
      hosts.map((h) => call(h, 'trigger-sampling-request', { prompt: 'hi', maxTokens: 5 })),
    );
    expect(sampled.map((a) => /"model": "(\w)"/.exec(a.content?.[0]?.text ?? '')?.[1])).toEqual(['a', 'b']);
    first.kill();
    await once(first, 'exit');
    await everythingOnPort(port);
    // the restarted server answers the old session 400 "No valid session ID provided": nothing was processed
    expect((await call(hosts[0]!, 'echo', { message: 'after' }))._meta?.retrysafe?.status).toBe('done');
  }, 30_000);
});

describe('server-everything as an upstream over --url in its HTTP+SSE mode (the transport before streamable HTTP)', () => {
  it('is reached as the SDK documents (the POST refused with a 4xx, then SSE): a fenced call done once, a passed-through one and a sampling answered; a call whose session ends before its answer is unknown, never sent again; then a new session', async () => {
    const port = await freePort();
    const first = await everythingOnPort(port, 'sse');
    const slow = { name: 'trigger-long-running-operation', arguments: { duration: 2, steps: 4 } };
    const fence = {
      name: 'everything',
      timeoutMs: 5000,
      tools: { echo: { kind: 'create', intent: ['message'] }, [slow.name]: { kind: 'create', intent: ['duration'] } },
    };
    const ledger = createMemoryLedger();
    const make = await fencesOver({ url: `http://127.0.0.1:${port}/sse` }, fence, ledger);
    const client = await clientOf(make(), 'agent', {
      capabilities: { sampling: {} },
      answer: (c) =>
        c.setRequestHandler(CreateMessageRequestSchema, async () => ({
          role: 'assistant',
          content: { type: 'text', text: 'hi' },
          model: 'm',
        })),
    });
    const echoed = await call(client, 'echo', { message: 'über ✓' });
    expect([echoed.content, echoed._meta?.retrysafe?.adopted]).toEqual([
      [{ type: 'text', text: 'Echo: über ✓' }],
      false,
    ]);
    expect((await call(client, 'echo', { message: 'über ✓' }))._meta?.retrysafe?.adopted).toBe(true);
    expect((await call(client, 'get-sum', { a: 2, b: 3 })).content?.[0]?.text).toMatch(/5/);
    const sampled = await call(client, 'trigger-sampling-request', { prompt: 'hi', maxTokens: 5 });
    expect(sampled.content?.[0]?.text).toMatch(/"model": "m"/);
    // Its session ends with its stream (the server stops) while the upstream holds a fenced call it took: unknown, so
    // handed to a person (no lookup declared) and never sent again; the next call goes to a new, initialized session.
    const exited = once(first, 'exit');
    const ended = client.callTool(slow, undefined, { onprogress: () => first.kill() }) as Promise<Answer>;
    expect((await ended)._meta?.retrysafe?.status).toBe('needs-human');
    await exited;
    await everythingOnPort(port, 'sse');
    expect((await call(client, slow.name, slow.arguments))._meta?.retrysafe?.status).toBe('needs-human');
    const [row] = (await ledger.list({})).filter((r) => r.operation === `everything.${slow.name}`);
    expect(row).toMatchObject({ attemptCount: 1, lastOutcome: 'unknown', state: 'handed-off' });
    expect((await call(client, 'echo', { message: 'after' }))._meta?.retrysafe).toMatchObject({ status: 'done' });
  });
});
