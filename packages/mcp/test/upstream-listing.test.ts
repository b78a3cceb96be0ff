/**
 * The upstream's tool list as the fence reads it, in process: a real SDK server on streamable HTTP (loopback) as
 * the upstream and the fence's own connection to it. What the upstream says at initialize (its instructions) reaches
 * the host; a listing that never ends must end the start with a clear error, not hang it; a session the upstream
 * ended is one the fence starts again, not one every later call is lost in.
 */
import { randomUUID } from 'node:crypto';
import { copyFileSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  type ListToolsResult,
} from '@modelcontextprotocol/sdk/types.js';
import { createMemoryLedger, createRunner } from '@retrysafe/core';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { runServe, runWrap } from '../src/commands.js';
import { connectUpstream, UpstreamUnavailableError } from '../src/fence/upstream.js';
import { createFenceAdapter, parseFenceConfig } from '../src/index.js';
import {
  clientOf,
  expectStopped,
  fenceOver,
  httpExampleWithSchema,
  onCleanup,
  ordersServer,
  ordersTool,
  tempDir,
  writeFence,
} from './fence-helpers.js';

/** A stateless streamable HTTP upstream whose tools/list answers `page(cursor)`; resolves to its URL. */
async function upstreamListing(page: (cursor: string | undefined) => ListToolsResult, instructions?: string) {
  const http = createServer(async (req, res) => {
    const server = new Server(
      { name: 'paging', version: '1.0.0' },
      { capabilities: { tools: {} }, ...(instructions ? { instructions } : {}) },
    );
    server.setRequestHandler(ListToolsRequestSchema, async (r) => page(r.params?.cursor));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => void transport.close());
    await server.connect(transport);
    await transport.handleRequest(req, res);
  });
  return listening(http);
}

/** A stdio upstream answered by hand (no SDK, no HTTP): a cheap page, for a test that reads a thousand. Each tools/list
 * page has a new cursor; when its stdin ends it writes the number of pages it served to the file named first. */
const LEAN_LISTING = `let pages = 0;
require('node:readline').createInterface({ input: process.stdin }).on('line', (line) => {
  const { id, method, params } = JSON.parse(line);
  if (id === undefined) return;
  const result = method === 'initialize'
    ? { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'lean', version: '1' } }
    : { tools: [{ name: 't' + ++pages, inputSchema: { type: 'object' } }], nextCursor: 'page-' + pages };
  process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id, result }) + '\\n');
}).on('close', () => require('node:fs').writeFileSync(process.argv[1], String(pages)));`;

async function listening(http: HttpServer) {
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  onCleanup(() => new Promise((resolve) => http.close(resolve)));
  return `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
}

const tool = (name: string) => ({ name, inputSchema: { type: 'object' as const } });

/** A loopback port another server holds, for a start that must fail (EADDRINUSE). */
async function portInUse(): Promise<string> {
  return String(new URL(await listening(createServer())).port);
}

/** An SQLite ledger still open leaves its -wal file; the last close removes it. */
const expectClosed = (db: string) => expect(existsSync(`${db}-wal`)).toBe(false);

describe("the upstream's initialize answer", () => {
  it('its instructions reach the host through the fence', async () => {
    const instructions = 'Call list_orders before create_order; amounts are in cents.';
    const url = await upstreamListing(() => ({ tools: [tool('create_order'), tool('list_orders')] }), instructions);
    const upstream = await connectUpstream({ url });
    onCleanup(() => upstream.close());
    const config = parseFenceConfig({
      name: 'orders',
      ledger: './unused.db',
      tools: { create_order: { kind: 'create', intent: ['ref'] } },
    });
    const host = await clientOf(fenceOver(config, upstream));
    onCleanup(() => host.close());
    expect(host.getInstructions()).toBe(instructions);
  });
});

describe("the upstream's tool list", () => {
  it('is read page by page to its end', async () => {
    const url = await upstreamListing((cursor) =>
      cursor === undefined ? { tools: [tool('a')], nextCursor: 'p2' } : { tools: [tool('b')] },
    );
    const upstream = await connectUpstream({ url });
    onCleanup(() => upstream.close());
    expect(upstream.tools.map((t) => t.name)).toEqual(['a', 'b']);
  });

  it('with an outputSchema the SDK cannot compile (a $ref to nothing, draft-04): read whole; the fence starts', async () => {
    const outputs = [
      { type: 'object', properties: { a: { $ref: '#/$defs/missing' } } },
      { $schema: 'http://json-schema.org/draft-04/schema#', type: 'object' },
    ];
    const url = await upstreamListing(() => ({
      tools: [tool('list_orders'), ...outputs.map((outputSchema, i) => ({ ...tool(`t${i}`), outputSchema }))],
    }));
    const upstream = await connectUpstream({ url });
    onCleanup(() => upstream.close());
    expect(upstream.tools.map((t) => t.outputSchema)).toEqual([undefined, ...outputs]);
  });

  it('that never ends (the same cursor again and again) is refused at start, not followed forever', async () => {
    let pages = 0;
    const url = await upstreamListing(() => {
      pages++;
      return { tools: [tool(`t${pages}`)], nextCursor: 'again' };
    });
    await expect(connectUpstream({ url })).rejects.toThrow(/tools\/list/);
    expect(pages).toBeLessThanOrEqual(1000);
  }, 20_000);

  it('whose cursor comes back: refused when it does, not after reading the bound of pages', async () => {
    let pages = 0;
    const url = await upstreamListing(() => {
      pages++;
      return { tools: [tool(`t${pages}`)], nextCursor: pages % 2 ? 'odd' : 'even' };
    });
    await expect(connectUpstream({ url })).rejects.toThrow(/tools\/list.*cursor/);
    expect(pages).toBe(3);
  });

  it('whose cursor is new on every page: refused after its bound of pages', async () => {
    const served = join(tempDir('retrysafe-pages-'), 'pages');
    const started = connectUpstream({ command: process.execPath, args: ['-e', LEAN_LISTING, served] });
    await expect(started).rejects.toThrow(/tools\/list/);
    // the start's failure ended the upstream, which wrote its count as its stdin ended
    expect(readFileSync(served, 'utf8')).toBe('1000');
  });

  it('that never ends, from a stdio upstream: the start fails and the process it started is stopped', async () => {
    const pidFile = join(tempDir('retrysafe-endless-'), 'pid');
    const started = connectUpstream({
      command: process.execPath,
      args: [ordersServer, '--endless-tools', '--pid-file', pidFile],
    });
    await expect(started).rejects.toThrow(/tools\/list/);
    await expectStopped(pidFile);
  }, 30_000);
});

/** A streamable HTTP upstream with sessions (as most are) whose create tool counts its calls; `endSessions()` forgets
 * every session, as a restarted server does, and a request of a forgotten session gets `forgotten` (the spec's 404);
 * a new session is refused (503) while `refuse()` says so. */
async function sessionUpstream(
  forgotten: { status: number; message: string } = FORGOTTEN[0],
  listing = async (): Promise<ListToolsResult> => ({ tools: [tool('create')] }),
) {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const created: string[] = [];
  const deleted: string[] = [];
  const up = { refuse: () => false };
  const http = createServer(async (req, res) => {
    const id = req.headers['mcp-session-id'];
    if (req.method === 'DELETE') deleted.push(String(id));
    if (id === undefined && up.refuse()) return void res.writeHead(503).end('starting');
    let transport = typeof id === 'string' ? sessions.get(id) : undefined;
    if (typeof id === 'string' && !transport) {
      const error = { code: -32001, message: forgotten.message };
      res
        .writeHead(forgotten.status, { 'content-type': 'application/json' })
        .end(JSON.stringify({ jsonrpc: '2.0', error, id: null }));
      return;
    }
    if (!transport) {
      const t = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        enableJsonResponse: true,
        onsessioninitialized: (sid) => void sessions.set(sid, t),
      });
      const server = new Server({ name: 'sessions', version: '1.0.0' }, { capabilities: { tools: {} } });
      server.setRequestHandler(ListToolsRequestSchema, listing);
      server.setRequestHandler(CallToolRequestSchema, async (r) => {
        created.push(String(r.params.arguments?.ref));
        return { content: [{ type: 'text', text: 'created' }] };
      });
      await server.connect(t);
      transport = t;
    }
    await transport.handleRequest(req, res);
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  onCleanup(() => new Promise((resolve) => http.close(resolve)));
  const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
  return Object.assign(up, { url, created, deleted, sessions, endSessions: () => sessions.clear() });
}

/** What a request of a forgotten session is answered: the spec's 404, and the 400 of the official servers written on
 * the SDK's example (server-everything: "Bad Request: No valid session ID provided"). */
const FORGOTTEN = [
  { status: 404, message: 'Session not found' },
  { status: 400, message: 'Bad Request: No valid session ID provided' },
] as const;

describe('an HTTP upstream whose tool list fails at start', () => {
  it('the session the start opened there is ended (DELETE), not left to it', async () => {
    const up = await sessionUpstream(FORGOTTEN[0], async () => {
      throw new Error('the listing is broken');
    });
    await expect(connectUpstream({ url: up.url })).rejects.toThrow(/the listing is broken/);
    expect(up.deleted).toEqual([...up.sessions.keys()]);
    expect(up.deleted).toHaveLength(1);
  });
});

describe('an HTTP upstream that ended its session (restarted)', () => {
  it.each(FORGOTTEN)(
    'answers $status, which is not applied: the fence starts a new session and the call is sent once — done, not handed off',
    async (forgotten) => {
      const up = await sessionUpstream(forgotten);
      const upstream = await connectUpstream({ url: up.url });
      onCleanup(() => upstream.close());
      const config = parseFenceConfig({
        name: 'things',
        ledger: './unused.db',
        policy: { baseMs: 5, capMs: 10 },
        tools: { create: { kind: 'create', intent: ['ref'] } },
      });
      const adapter = createFenceAdapter({ config, client: upstream, tools: upstream.tools });
      const runner = createRunner({ ledger: createMemoryLedger(), policy: { baseMs: 5, capMs: 10 } });
      expect((await runner.run(adapter, 'create', { params: { ref: 'a' } })).status).toBe('done');
      up.endSessions();
      expect((await runner.run(adapter, 'create', { params: { ref: 'b' } })).status).toBe('done');
      expect((await runner.run(adapter, 'create', { params: { ref: 'c' } })).status).toBe('done');
      expect(up.created).toEqual(['a', 'b', 'c']);
    },
  );
});

describe('an HTTP upstream whose new session cannot be started', () => {
  it('closed while the restart tries fail: no try after the close', async () => {
    const up = await sessionUpstream();
    const upstream = await connectUpstream({ url: up.url });
    up.endSessions();
    await expect(upstream.callTool({ name: 'create' })).rejects.toThrow(/ended its session/);
    let tries = 0;
    up.refuse = () => {
      // the close lands while the first try of the restart fails
      if (++tries === 1) void upstream.close();
      return true;
    };
    await expect(upstream.callTool({ name: 'create' })).rejects.toThrow(UpstreamUnavailableError);
    expect(tries).toBe(1);
  });
});

describe('retrysafe-mcp wrap that cannot start', () => {
  it('a ledger it cannot open: a ConfigError, and the upstream it had started is stopped', async () => {
    const dir = tempDir('retrysafe-wrap-fail-');
    const pidFile = join(dir, 'pid');
    const fence = writeFence(dir, {
      name: 'orders',
      ledger: './no-such-dir/fence.db',
      tools: { create_order: { kind: 'create', intent: ['customer', 'ref'] } },
    });
    const wrap = runWrap(['--config', fence, '--', process.execPath, ordersServer, '--pid-file', pidFile], () => {});
    await expect(wrap).rejects.toMatchObject({ code: 'RETRYSAFE_CONFIG' });
    await expectStopped(pidFile);
  }, 30_000);

  it('a policy that cannot work for a fenced tool: refused at start (not on its every call), the upstream stopped', async () => {
    const dir = tempDir('retrysafe-wrap-policy-');
    const pidFile = join(dir, 'pid');
    const fence = writeFence(dir, {
      name: 'orders',
      // a lookup window shorter than the 30 s a "not found" needs to prove absence (lateApplyBound)
      policy: { lookupWindowMs: 1000 },
      tools: { create_order: ordersTool({ lateApplyBound: '30s' }) },
    });
    const argv = ['--config', fence, '--http', '--', process.execPath, ordersServer, '--pid-file', pidFile];
    await expect(runWrap(argv, () => {})).rejects.toMatchObject({
      code: 'RETRYSAFE_RUNNER_CONFIG',
      message: expect.stringMatching(/lookupWindowMs/),
    });
    await expectStopped(pidFile);
  }, 30_000);
  it('--http on a port in use: the error, and the ledger it had opened is closed', async () => {
    const url = await upstreamListing(() => ({ tools: [tool('create_order')] }));
    const dir = tempDir('retrysafe-wrap-port-');
    const fence = writeFence(dir, { name: 'orders', tools: { create_order: { kind: 'create', intent: ['ref'] } } });
    const argv = ['--config', fence, '--http', '--port', await portInUse(), '--url', url];
    await expect(runWrap(argv, () => {})).rejects.toMatchObject({ code: 'EADDRINUSE' });
    expectClosed(join(dir, 'fence.db'));
  });

  it("--http on a port in use: the HTTP upstream's session is ended once (one DELETE), not again by each owner", async () => {
    const listing = async () => ({
      tools: [{ name: 'create', inputSchema: { type: 'object' as const, properties: { ref: { type: 'string' } } } }],
    });
    const up = await sessionUpstream(FORGOTTEN[0], listing);
    const fence = writeFence(tempDir('retrysafe-wrap-port-'), {
      name: 'orders',
      tools: { create: { kind: 'create', intent: ['ref'] } },
    });
    const argv = ['--config', fence, '--http', '--port', await portInUse(), '--url', up.url];
    await expect(runWrap(argv, () => {})).rejects.toMatchObject({ code: 'EADDRINUSE' });
    expect(up.deleted).toEqual([...up.sessions.keys()]);
  });

  it('a fenced tool whose input schema cannot be compiled (draft-04): refused at start naming it, not on its every call', async () => {
    const draft04 = { $schema: 'http://json-schema.org/draft-04/schema#', type: 'object' as const };
    const url = await upstreamListing(() => ({
      tools: [{ name: 'create_order', inputSchema: draft04 }, tool('list_orders')],
    }));
    const fence = writeFence(tempDir('retrysafe-wrap-schema-'), {
      name: 'orders',
      tools: { create_order: { kind: 'create', intent: ['customer', 'ref'] } },
    });
    await expect(runWrap(['--config', fence, '--http', '--url', url], () => {})).rejects.toMatchObject({
      code: 'RETRYSAFE_RUNNER_CONFIG',
      message: expect.stringMatching(/orders\.create_order does not compile/),
    });
  });
});

describe('retrysafe-mcp (serve) that cannot start', () => {
  it('--http on a port in use: the error, and the ledger it had opened is closed', async () => {
    const example = fileURLToPath(new URL('../../config/examples/http-api/', import.meta.url));
    const dir = tempDir('retrysafe-serve-port-');
    for (const f of readdirSync(example)) copyFileSync(join(example, f), join(dir, f));
    process.env.ACME_AUTH = 'Bearer test';
    onCleanup(() => delete process.env.ACME_AUTH);
    const argv = ['--config', join(dir, 'retrysafe.yaml'), '--http', '--port', await portInUse()];
    await expect(runServe(argv, () => {})).rejects.toMatchObject({ code: 'EADDRINUSE' });
    expectClosed(join(dir, 'retrysafe.db'));
  });

  it("an operation named as the server's own lookup: refused at start, and the ledger it had opened is closed", async () => {
    const example = fileURLToPath(new URL('../../config/examples/http-api/', import.meta.url));
    const dir = tempDir('retrysafe-serve-lookup-');
    for (const f of readdirSync(example)) copyFileSync(join(example, f), join(dir, f));
    const card = readFileSync(join(dir, 'orders.card.yaml'), 'utf8');
    writeFileSync(
      join(dir, 'status.card.yaml'),
      card.replace(/acme\.orders\.create/, 'retrysafe.status').replace(/provider: acme/, 'provider: retrysafe'),
    );
    const file = join(dir, 'retrysafe.yaml');
    const config = parseYaml(readFileSync(file, 'utf8'));
    const status = { ...config.adapters.acme.operations['orders.create'], card: './status.card.yaml' };
    config.adapters.retrysafe = { ...config.adapters.acme, operations: { status } };
    writeFileSync(file, stringifyYaml({ ...config, operations: [...config.operations, 'retrysafe.status'] }));
    process.env.ACME_AUTH = 'Bearer test';
    onCleanup(() => delete process.env.ACME_AUTH);
    await expect(runServe(['--config', file, '--http'], () => {})).rejects.toMatchObject({
      message: expect.stringMatching(/retrysafe_status, the server's own lookup/),
    });
    expectClosed(join(dir, 'retrysafe.db'));
  });

  it('a policy that cannot work for an exposed operation: refused at start, not on its every call', async () => {
    // The docs' HTTP API example, with a card whose lookup needs 30 s to prove absence and a 1 s lookup window.
    const example = fileURLToPath(new URL('../../config/examples/http-api/', import.meta.url));
    const dir = tempDir('retrysafe-serve-policy-');
    for (const f of readdirSync(example)) copyFileSync(join(example, f), join(dir, f));
    const card = parseYaml(readFileSync(join(dir, 'orders.card.yaml'), 'utf8')) as {
      lookup: Record<string, unknown>;
      unverified: { field: string }[];
    };
    card.lookup.lateApplyBound = { value: '30s', source: 'test' };
    card.unverified = card.unverified.filter((u) => u.field !== 'lookup.lateApplyBound');
    writeFileSync(join(dir, 'orders.card.yaml'), stringifyYaml(card));
    const config = parseYaml(readFileSync(join(dir, 'retrysafe.yaml'), 'utf8')) as Record<string, unknown>;
    const file = join(dir, 'retrysafe.yaml');
    writeFileSync(
      file,
      stringifyYaml({ ...config, policy: { lookupWindowMs: 1000 }, operations: ['acme.orders.create'] }),
    );
    process.env.ACME_AUTH = 'Bearer test';
    onCleanup(() => delete process.env.ACME_AUTH);
    await expect(runServe(['--config', file, '--http'], () => {})).rejects.toMatchObject({
      code: 'RETRYSAFE_RUNNER_CONFIG',
      message: expect.stringMatching(/lookupWindowMs/),
    });
  });

  it('an exposed operation whose params schema cannot be compiled ($ref to nothing): refused at start', async () => {
    const file = httpExampleWithSchema('retrysafe-serve-schema-', {
      type: 'object',
      properties: { customer: { $ref: '#/$defs/Customer' }, sku: {}, quantity: {} },
    });
    process.env.ACME_AUTH = 'Bearer test';
    onCleanup(() => delete process.env.ACME_AUTH);
    await expect(runServe(['--config', file, '--http'], () => {})).rejects.toMatchObject({
      code: 'RETRYSAFE_RUNNER_CONFIG',
      message: expect.stringMatching(/acme\.orders\.create does not compile/),
    });
  });
});
