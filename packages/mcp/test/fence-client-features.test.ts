/**
 * What an upstream asks its client (sampling, elicitation, roots) reaches the host behind the fence, as it does
 * directly: for a passed-through call and for a fenced one, and the host's roots reach the upstream. A host that did
 * not declare a feature gets the upstream an MCP error, never a hang. Real servers, the official SDK client as host.
 */
import { readFileSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTaskStore } from '@modelcontextprotocol/sdk/experimental/tasks';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { RequestTaskStore } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  type CallToolResult,
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  type McpError,
  ResultSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { asBusinessOperationId } from '@retrysafe/contract';
import { createMemoryLedger } from '@retrysafe/core';
import { describe, expect, it } from 'vitest';
import * as z from 'zod/v4';
import { connectUpstream } from '../src/fence/upstream.js';
import { parseFenceConfig } from '../src/index.js';
import {
  type Answer,
  clientOf,
  connect,
  everythingServer,
  fenceOver,
  filesystemServer,
  type HostFeatures,
  hostOfFence,
  httpClientOf,
  httpUpstream,
  onCleanup,
  servedOverHttp,
  sharedByTests,
  tempDir,
} from './fence-helpers.js';

const node = process.execPath;
const call = (client: Client, name: string, args: Record<string, unknown>) =>
  client.callTool({ name, arguments: args }, undefined, { timeout: 10_000 }) as Promise<Answer>;
const text = (a: Answer) => a.content?.[0]?.text ?? '';

/** A host that samples (taking `sampleMs`), asks its person (who declines) and lists `roots`; `asked` records each
 * request it answers. */
function host(roots: string[], asked: string[] = [], sampleMs = 0): HostFeatures {
  return {
    capabilities: { sampling: {}, elicitation: { form: {} }, roots: { listChanged: true } },
    answer: (client) => {
      client.setRequestHandler(CreateMessageRequestSchema, async () => {
        asked.push('sampling');
        await new Promise((r) => setTimeout(r, sampleMs));
        return { model: 'host-model', role: 'assistant', content: { type: 'text', text: 'sampled by the host' } };
      });
      client.setRequestHandler(ElicitRequestSchema, async () => {
        asked.push('elicitation');
        return { action: 'decline' };
      });
      client.setRequestHandler(ListRootsRequestSchema, async () => {
        asked.push('roots');
        return { roots: roots.map((dir) => ({ uri: pathToFileURL(dir).href, name: 'workspace' })) };
      });
    },
  };
}

/** Fence servers (one per host session) in process over one real server (a child), `tools` fenced. */
async function fenceOf(
  args: string[],
  name: string,
  tools: Record<string, unknown>,
  options?: Parameters<typeof connectUpstream>[2],
) {
  const upstream = await connectUpstream({ command: node, args }, undefined, options);
  onCleanup(() => upstream.close());
  const config = parseFenceConfig({ name, ledger: './unused.db', timeoutMs: 400, tools });
  return (ledger?: Parameters<typeof fenceOver>[2]) => fenceOver(config, upstream, ledger);
}

describe('what the upstream asks its client, through the fence', () => {
  // One upstream for the tests of its URL elicitation: each calls with an elicitationId of its own, which
  // server-everything keys its state by, on a ledger of its own.
  const urlFence = sharedByTests(() =>
    fenceOf([everythingServer, 'stdio'], 'everything', {
      'trigger-url-elicitation': { kind: 'create', intent: ['url', 'elicitationId'] },
    }),
  );

  it('server-everything: sampling, elicitation and roots reach the host, passed through and fenced, as directly', async () => {
    const roots = [tempDir('retrysafe-roots-')];
    const sampling = { prompt: 'hello', maxTokens: 5 };
    // the host takes longer to sample than the fenced call's timeoutMs: waiting for the host is no lost answer
    const fence = await fenceOf([everythingServer, 'stdio'], 'everything', {
      'trigger-sampling-request': { kind: 'create', intent: ['prompt', 'maxTokens'] },
    });
    const asked: string[] = [];
    const client = await clientOf(fence(), 'host', host(roots, asked, 700));
    const direct = await connect(node, [everythingServer, 'stdio'], {}, host(roots));
    for (const [name, args] of [
      ['trigger-elicitation-request', {}],
      ['get-roots-list', {}],
    ] as const)
      expect(await call(client, name, args)).toEqual(await call(direct, name, args));
    expect(asked).toEqual(expect.arrayContaining(['elicitation', 'roots']));
    // fenced: the host samples once; the re-issued call is answered from the ledger, nothing is asked again
    const { _meta, ...theirs } = await call(direct, 'trigger-sampling-request', sampling);
    const first = await call(client, 'trigger-sampling-request', sampling);
    expect(first._meta?.retrysafe).toMatchObject({ status: 'done', adopted: false });
    expect(text(first)).toMatch(/sampled by the host/);
    expect({ ...first, _meta: undefined }).toEqual({ ...theirs, _meta: undefined });
    const samples = asked.filter((a) => a === 'sampling').length;
    const again = await call(client, 'trigger-sampling-request', sampling);
    expect(again._meta?.retrysafe).toMatchObject({ status: 'done', adopted: true });
    expect(asked.filter((a) => a === 'sampling')).toHaveLength(samples);
    await client.close();
    // a host that declared none of these: the upstream is answered an error at once (not after the host's 10 minutes),
    // and says so in its answer
    const bare = await clientOf(fence(), 'bare host');
    const started = Date.now();
    const refused = await call(bare, 'trigger-elicitation-request', {});
    expect(refused.isError).toBe(true);
    expect(text(refused)).toMatch(/elicitation\/create: the host behind the retrysafe fence did not declare it/);
    expect(Date.now() - started).toBeLessThan(30_000);
  });

  it('server-everything: a URL the upstream requires (-32042) reaches the host as sent, and the same call then goes upstream', async () => {
    const fence = urlFence();
    const ledger = createMemoryLedger();
    const opened: string[] = [];
    const client = await clientOf(fence(ledger), 'host', {
      capabilities: { elicitation: { form: {}, url: {} } },
      answer: (c) =>
        c.setRequestHandler(ElicitRequestSchema, async (r) => {
          if (r.params.mode === 'url') opened.push(r.params.url);
          return { action: 'accept' };
        }),
    });
    const args = { url: 'https://example.com/consent', elicitationId: 'e-1', errorPath: true };
    const refused = await call(client, 'trigger-url-elicitation', args).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: -32042 });
    const { elicitations } = (refused as McpError).data as { elicitations: { url: string }[] };
    expect(elicitations).toEqual([expect.objectContaining({ mode: 'url', url: 'https://modelcontextprotocol.io' })]);
    const [refusedRow] = await ledger.list({ states: ['handed-off'] });
    expect(refusedRow).toMatchObject({
      lastOutcome: 'rejected',
      handoff: { lastKnown: { code: 'url-elicitation-required' } },
    });
    // the user has been there: the same call is sent, and the upstream goes on (its own elicitation of `url`)
    const done = await call(client, 'trigger-url-elicitation', args);
    expect(done._meta?.retrysafe).toMatchObject({ status: 'done', adopted: false });
    expect(opened).toEqual([args.url]);
    const id = asBusinessOperationId(done._meta!.retrysafe!.businessOperationId!);
    const receipts = await ledger.receipts(id);
    expect(receipts.filter((r) => r.kind !== 'resolve').map((r) => r.outcome)).toEqual(['rejected', 'succeeded']);
    // the URL the upstream sent may carry a one-time token: kept out of the ledger
    expect(JSON.stringify([refusedRow, await ledger.get(id), receipts])).not.toContain(elicitations[0]!.url);
  });

  it('server-everything: two identical calls in flight when the upstream requires a URL (-32042): each gets its error', async () => {
    const fence = urlFence();
    const ledger = createMemoryLedger();
    const client = await clientOf(fence(ledger), 'host', { capabilities: { elicitation: { form: {}, url: {} } } });
    const args = { url: 'https://example.com/consent', elicitationId: 'e-2', errorPath: true };
    const twice = [call(client, 'trigger-url-elicitation', args), call(client, 'trigger-url-elicitation', { ...args })];
    const refused = await Promise.all(twice.map((p) => p.catch((e: unknown) => e)));
    const elicitations = [expect.objectContaining({ mode: 'url', url: 'https://modelcontextprotocol.io' })];
    expect(refused).toEqual([
      expect.objectContaining({ code: -32042, data: { elicitations } }),
      expect.objectContaining({ code: -32042, data: { elicitations } }),
    ]);
    const rows = await ledger.list({});
    expect(rows).toHaveLength(1);
    const receipts = await ledger.receipts(rows[0]!.businessOperationId);
    expect(JSON.stringify([rows, receipts])).not.toContain('modelcontextprotocol.io');
  });

  it('server-everything: the same call -32042 refuses, in flight through two fences on one ledger: the URL goes to one host, nothing is sent twice', async () => {
    // The other fence (another process) waits for the first through the ledger, which never holds the URL: its host is
    // told to call again once the user has been there. Sending it again in its place would be a call "after the user
    // acted" that the user never made (server-everything then goes on).
    const fence = urlFence();
    const ledger = createMemoryLedger();
    const host = { capabilities: { elicitation: { form: {}, url: {} } } };
    const hosts = [await clientOf(fence(ledger), 'host', host), await clientOf(fence(ledger), 'other host', host)];
    const args = { url: 'https://example.com/consent', elicitationId: 'e-3', errorPath: true };
    const answers = await Promise.all(
      hosts.map((c) => call(c, 'trigger-url-elicitation', { ...args }).catch((e: unknown) => e)),
    );
    expect(answers).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ code: -32042 }),
        expect.objectContaining({
          isError: true,
          _meta: { retrysafe: expect.objectContaining({ status: 'needs-human' }) },
        }),
      ]),
    );
    const told = answers.find((a) => (a as Answer).isError) as Answer;
    expect(text(told)).toMatch(/asks the user to take a step first/);
    expect(text(told)).not.toContain('modelcontextprotocol.io');
    const [row] = await ledger.list({});
    const sends = (await ledger.receipts(row!.businessOperationId)).filter((r) => r.kind === 'dispatch');
    expect(sends).toHaveLength(1);
  });

  it('a host that never answers is given up on after hostAnswerMs: the upstream gets an error, the call its answer', async () => {
    // server-everything waits 10 minutes for an elicitation's answer: the host's goodwill must not be the only bound
    const fenced = { 'trigger-sampling-request': { kind: 'create', intent: ['prompt', 'maxTokens'] } };
    const fence = await fenceOf([everythingServer, 'stdio'], 'everything', fenced, { hostAnswerMs: 300 });
    const silent = {
      capabilities: { elicitation: { form: {} } },
      answer: (client: Client) => {
        client.setRequestHandler(ElicitRequestSchema, () => new Promise<never>(() => {}));
      },
    };
    const client = await clientOf(fence(), 'silent host', silent);
    const answer = await client.callTool({ name: 'trigger-elicitation-request', arguments: {} }, undefined, {
      timeout: 600_000,
    });
    expect(answer.isError).toBe(true);
    expect(text(answer as Answer)).toMatch(/timed out/i);
  });

  it('a host that gives up on a tool the upstream runs only as a task: the fence cancels the task', async () => {
    const upstream = await connectUpstream({ command: node, args: [everythingServer, 'stdio'] });
    onCleanup(() => upstream.close());
    const config = parseFenceConfig({
      name: 'everything',
      ledger: './unused.db',
      tools: { echo: { kind: 'create', intent: ['message'] } },
    });
    const client = await clientOf(fenceOver(config, upstream), 'host');
    const abort = new AbortController();
    setTimeout(() => abort.abort('the host gave up'), 300);
    const params = { name: 'simulate-research-query', arguments: { topic: 'tides' } };
    await expect(client.callTool(params, undefined, { signal: abort.signal })).rejects.toThrow(/gave up/);
    const tasks = async () => (await upstream.request({ method: 'tasks/list' }, ResultSchema)).tasks;
    await expect.poll(tasks).toEqual([expect.objectContaining({ status: 'cancelled' })]);
  });

  it.each([
    ['between polls (the upstream asks to be polled every ten minutes)', 0],
    ['while the upstream creates it (its id not yet known)', 1000],
  ])(
    "a tool the upstream runs only as a task, given up on (the fence's timeout, the host's cancel) %s: its task is cancelled",
    async (_, createMs) => {
      const tasks = new InMemoryTaskStore();
      const slow = () => {
        const capabilities = { tasks: { cancel: {}, requests: { tools: { call: {} } } } };
        const server = new McpServer({ name: 'slow', version: '1.0.0' }, { capabilities, taskStore: tasks });
        const createTask = async (_: unknown, extra: { taskStore: RequestTaskStore }) => {
          await new Promise((r) => setTimeout(r, createMs));
          return { task: await extra.taskStore.createTask({ pollInterval: 600_000 }) };
        };
        for (const name of ['research', 'browse'])
          server.experimental.tasks.registerToolTask(
            name,
            { inputSchema: { topic: z.string() }, execution: { taskSupport: 'required' } },
            {
              createTask,
              getTask: async (_, extra) => extra.taskStore.getTask(extra.taskId),
              getTaskResult: async (_, extra) => (await extra.taskStore.getTaskResult(extra.taskId)) as CallToolResult,
            },
          );
        return server;
      };
      const { client, ledger } = await hostOfFence(
        { url: await httpUpstream(slow) },
        { name: 'slow', timeoutMs: 300, tools: { research: { kind: 'create', intent: ['topic'] } } },
      );
      const statuses = async () => (await tasks.listTasks()).tasks.map((t) => t.status);
      const answer = await call(client, 'research', { topic: 'tides' });
      expect(answer._meta?.retrysafe?.status).toBe('needs-human');
      await expect.poll(statuses).toEqual(['cancelled']);
      // the row ends at rest, for a person (or the lookup a card declares) to settle: never left dispatched
      expect(await ledger.list({})).toEqual([expect.objectContaining({ state: 'handed-off', lastOutcome: 'unknown' })]);
      // passed through (not fenced), the host gives up on it
      const signal = AbortSignal.timeout(300);
      const browse = client.callTool({ name: 'browse', arguments: { topic: 'tides' } }, undefined, { signal });
      await expect(browse).rejects.toThrow();
      await expect.poll(statuses).toEqual(['cancelled', 'cancelled']);
    },
    20_000,
  );

  it('a task whose upstream asks to be polled every 0 ms is polled at a floor, not in a tight loop', async () => {
    let polls = 0;
    const tasks = new InMemoryTaskStore();
    const read = tasks.getTask.bind(tasks);
    tasks.getTask = (...args) => {
      polls++;
      return read(...args);
    };
    const quick = () => {
      const capabilities = { tasks: { requests: { tools: { call: {} } } } };
      const server = new McpServer({ name: 'quick', version: '1.0.0' }, { capabilities, taskStore: tasks });
      server.experimental.tasks.registerToolTask(
        'research',
        { inputSchema: { topic: z.string() }, execution: { taskSupport: 'required' } },
        {
          createTask: async (_, extra) => {
            const task = await extra.taskStore.createTask({ pollInterval: 0 });
            const done = { content: [{ type: 'text' as const, text: 'found' }] };
            setTimeout(() => void tasks.storeTaskResult(task.taskId, 'completed', done), 500);
            return { task };
          },
          getTask: async (_, extra) => extra.taskStore.getTask(extra.taskId),
          getTaskResult: async (_, extra) => (await extra.taskStore.getTaskResult(extra.taskId)) as CallToolResult,
        },
      );
      return server;
    };
    const { client } = await hostOfFence(
      { url: await httpUpstream(quick) },
      { name: 'quick', timeoutMs: 5000, tools: { research: { kind: 'create', intent: ['topic'] } } },
    );
    const answer = await call(client, 'research', { topic: 'tides' });
    expect(answer._meta?.retrysafe?.status).toBe('done');
    expect(polls).toBeGreaterThan(0);
    expect(polls).toBeLessThanOrEqual(10);
  }, 20_000);

  it.each([
    ['in process', (fence: () => Server, f: HostFeatures) => clientOf(fence(), 'host', f)],
    ['over --http', async (fence: () => Server, f: HostFeatures) => httpClientOf(await servedOverHttp(fence), f)],
  ])(
    "server-filesystem serves the host's roots, not its command-line directory, as directly (%s)",
    async (_, hostOf) => {
      const [given, root] = [tempDir('retrysafe-given-'), tempDir('retrysafe-root-')];
      const fence = await fenceOf([filesystemServer, given], 'files', {
        create_directory: { kind: 'create', intent: ['path'] },
      });
      const allowed = async (client: Client) => text(await call(client, 'list_allowed_directories', {}));
      const direct = await connect(node, [filesystemServer, given], {}, host([root]));
      const client = await hostOf(fence, host([root]));
      await expect.poll(() => allowed(direct)).toContain(realpathSync(root));
      await expect.poll(() => allowed(client)).toContain(realpathSync(root));
      expect(await allowed(client)).toEqual(await allowed(direct));
      // the host's roots change: it says so, and the upstream reads them again through the fence
      const next = tempDir('retrysafe-next-');
      client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [{ uri: pathToFileURL(next).href }] }));
      await client.sendRootsListChanged();
      await expect.poll(() => allowed(client)).toContain(realpathSync(next));
    },
  );
});

describe('over --http, each host a session of its own', () => {
  const everything = () =>
    fenceOf([everythingServer, 'stdio'], 'everything', {
      'trigger-sampling-request': { kind: 'create', intent: ['prompt', 'maxTokens'] },
    });
  /** The notifications `client` has received so far. */
  const collect = (client: Client) => {
    const seen: string[] = [];
    client.fallbackNotificationHandler = async (n) => void seen.push(n.method);
    return seen;
  };

  it("the upstream's requests reach the host of the call, its notifications every host, progress the caller", async () => {
    const roots = [tempDir('retrysafe-roots-')];
    const http = await servedOverHttp(await everything());
    const client = await httpClientOf(http, host(roots));
    const other = await httpClientOf(http);
    const direct = await connect(node, [everythingServer, 'stdio'], {}, host(roots));
    const [seen, seenByOther] = [collect(client), collect(other)];
    for (const [name, args] of [
      ['trigger-elicitation-request', {}],
      ['get-roots-list', {}],
    ] as const)
      expect(await call(client, name, args)).toEqual(await call(direct, name, args));
    expect(text(await call(client, 'trigger-sampling-request', { prompt: 'hi', maxTokens: 5 }))).toMatch(
      /sampled by the host/,
    );
    // notifications no call asked for come on each host's GET stream
    await call(client, 'toggle-simulated-logging', {});
    await call(client, 'gzip-file-as-resource', { name: 'n.gz', data: 'data:text/plain;base64,aGVsbG8=' });
    for (const s of [seen, seenByOther])
      await expect
        .poll(() => s)
        .toEqual(expect.arrayContaining(['notifications/message', 'notifications/resources/list_changed']));
    const progress: number[] = [];
    await client.callTool(
      { name: 'trigger-long-running-operation', arguments: { duration: 0.6, steps: 3 } },
      undefined,
      { onprogress: (p) => progress.push(p.progress) },
    );
    expect(progress.length).toBeGreaterThanOrEqual(2);
  });

  it("hosts share the upstream's session: one host's unsubscribe or log level is not another's", async () => {
    const http = await servedOverHttp(await everything());
    const [a, b] = [await httpClientOf(http), await httpClientOf(http)];
    /** The log levels and resource updates a host has heard. */
    const heard = (client: Client) => {
      const got = { levels: [] as string[], updates: 0 };
      client.fallbackNotificationHandler = async (n) => {
        if (n.method === 'notifications/message') got.levels.push(String(n.params?.level));
        if (n.method === 'notifications/resources/updated') got.updates++;
      };
      return got;
    };
    const [byA, byB] = [heard(a), heard(b)];
    await a.setLoggingLevel('debug');
    await b.setLoggingLevel('emergency');
    // server-everything acknowledges each subscription with an info message: A hears it, B wants emergencies only
    const uri = 'demo://resource/dynamic/text/1';
    await a.subscribeResource({ uri });
    await b.subscribeResource({ uri });
    await expect.poll(() => byA.levels).toContain('info');
    expect(byB.levels.filter((l) => l !== 'emergency')).toEqual([]);
    // A unsubscribes: B still is, and hears the next update (the one the upstream sends when its updates are turned on)
    await a.unsubscribeResource({ uri });
    const before = byB.updates;
    await call(a, 'toggle-subscriber-updates', {});
    await expect.poll(() => byB.updates).toBeGreaterThan(before);
  });

  it("a resource's updates reach the hosts subscribed to it; a host that leaves is unsubscribed upstream", async () => {
    const http = await servedOverHttp(await everything());
    const [a, b] = [await httpClientOf(http), await httpClientOf(http)];
    const heard = (client: Client) => {
      const got = { updates: 0, logs: [] as string[] };
      client.fallbackNotificationHandler = async (n) => {
        if (n.method === 'notifications/resources/updated') got.updates++;
        if (n.method === 'notifications/message') got.logs.push(String(n.params?.data));
      };
      return got;
    };
    const [byA, byB] = [heard(a), heard(b)];
    await a.subscribeResource({ uri: 'demo://resource/dynamic/text/1' });
    await call(a, 'toggle-subscriber-updates', {});
    await expect.poll(() => byA.updates).toBeGreaterThan(0);
    // A's session ends: server-everything acknowledges the unsubscribe with a log message, which B hears
    await (a.transport as StreamableHTTPClientTransport).terminateSession();
    await a.close();
    await expect.poll(() => byB.logs.join('\n')).toMatch(/Unsubscribe Resource request/);
    // on B's stream the updates came before that message: B, not subscribed, heard none of them
    expect(byB.updates).toBe(0);
  });

  it('a restarted upstream is subscribed again to what the hosts subscribed to', async () => {
    const pidFile = join(tempDir('retrysafe-pid-'), 'pid');
    const writePid = `import{writeFileSync}from'node:fs';writeFileSync(${JSON.stringify(pidFile)},String(process.pid))`;
    const args = ['--import', `data:text/javascript,${encodeURIComponent(writePid)}`, everythingServer, 'stdio'];
    const fence = await fenceOf(args, 'everything', { echo: { kind: 'create', intent: ['message'] } });
    const client = await clientOf(fence(), 'host');
    let [updates, subscribed] = [0, 0];
    client.fallbackNotificationHandler = async (n) => {
      if (n.method === 'notifications/resources/updated') updates++;
      if (/Received Subscribe Resource request/.test(String(n.params?.data))) subscribed++;
    };
    await client.subscribeResource({ uri: 'demo://resource/dynamic/text/1' });
    const first = readFileSync(pidFile, 'utf8');
    process.kill(Number(first), 'SIGKILL');
    await expect.poll(() => readFileSync(pidFile, 'utf8')).not.toBe(first);
    // the restarted upstream acknowledges the subscription the fence sends it again; updates turned on, it sends one
    await expect.poll(() => subscribed).toBe(2);
    await call(client, 'toggle-subscriber-updates', {});
    await expect.poll(() => updates).toBeGreaterThan(0);
  });

  it("with two hosts' calls in flight the upstream's request is refused (whose is it?), with one it goes to that host", async () => {
    const http = await servedOverHttp(await everything());
    const asked: string[] = [];
    const slow = await httpClientOf(http, host([], asked, 700));
    const quick = await httpClientOf(http, host([]));
    const sampled = call(slow, 'trigger-sampling-request', { prompt: 'slow', maxTokens: 5 });
    await expect.poll(() => asked).toContain('sampling');
    const refused = await call(quick, 'trigger-elicitation-request', {});
    expect([refused.isError, text(refused)]).toEqual([true, expect.stringMatching(/cannot tell which one/)]);
    expect(text(await sampled)).toMatch(/sampled by the host/);
    expect((await call(quick, 'trigger-elicitation-request', {})).isError).toBeFalsy();
  });

  it('a session ends on DELETE or when idle, never while its host listens; every request needs the token', async () => {
    const fence = await everything();
    const http = await servedOverHttp(fence, { idleMs: 300 });
    const post = (body: object, headers: Record<string, string> = {}, method = 'POST', url = http.url) =>
      fetch(url, {
        method,
        headers: { accept: 'application/json, text/event-stream', 'content-type': 'application/json', ...headers },
        ...(method === 'POST' ? { body: JSON.stringify({ jsonrpc: '2.0', ...body }) } : {}),
      });
    const auth = { authorization: `Bearer ${http.token}` };
    const ping = (session: string, headers: Record<string, string> = auth) =>
      post({ id: 9, method: 'ping' }, { ...headers, 'mcp-session-id': session });
    const clientInfo = { name: 'raw', version: '1' };
    const params = { protocolVersion: '2025-06-18', capabilities: {}, clientInfo };
    const initialize = (url = http.url) => post({ id: 1, method: 'initialize', params }, auth, 'POST', url);
    const init = await initialize();
    const idle = init.headers.get('mcp-session-id')!;
    expect([init.status, idle]).toEqual([200, expect.any(String)]);
    expect((await ping(idle, {})).status).toBe(401);
    expect((await ping(idle)).status).toBe(200);
    // the SDK client holds its GET stream open: it is not idle
    const listening = await httpClientOf(http);
    await new Promise((r) => setTimeout(r, 600));
    expect((await ping(idle)).status).toBe(404);
    expect(await listening.ping()).toEqual({});
    const transport = listening.transport as StreamableHTTPClientTransport;
    const session = transport.sessionId!;
    expect((await post({}, { 'mcp-session-id': session }, 'DELETE')).status).toBe(401);
    await transport.terminateSession();
    expect((await ping(session)).status).toBe(404);
    // at most 100 sessions at once
    const crowded = await servedOverHttp(fence, { token: http.token });
    const opened = await Promise.all(Array.from({ length: 101 }, () => initialize(crowded.url).then((r) => r.status)));
    expect(opened.filter((s) => s === 503)).toHaveLength(1);
  });
});
