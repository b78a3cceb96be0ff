/** Shared by the fence tests: child-helpers.ts's parts, a real MCP client (the host), the fence in process. */
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { asBusinessOperationId } from '@retrysafe/contract';
import { createMemoryLedger, createRunner } from '@retrysafe/core';
import { lookupContext } from '@retrysafe/testkit/conformance';
import { followUpstream } from '../src/fence/fence-adapter.js';
import type { FenceConfig } from '../src/fence/fence-config.js';
import { createFenceServer } from '../src/fence/fence-server.js';
import { connectUpstream, type Upstream, type UpstreamTarget } from '../src/fence/upstream.js';
import { createFenceAdapter, parseFenceConfig, serveHttp } from '../src/index.js';
import { type Answer, bin, type HostFeatures, onCleanup, ordersServer, ordersTool } from './child-helpers.js';

export * from './child-helpers.js';

/** `make` served by `serveHttp` (`--http`), closed after the test. */
export async function servedOverHttp(make: () => Server, options: Parameters<typeof serveHttp>[1] = {}) {
  const http = await serveHttp(make, options);
  onCleanup(() => http.close());
  return http;
}

/** A streamable HTTP upstream in process: a server of `make()` (the official SDK's) answers each POST (stateless, in
 * JSON), unless `before` answers it first with a status and headers (a rate limiter in front). Its URL. */
export async function httpUpstream(
  make: () => McpServer,
  before: (message: { method?: string }) => { status: number; headers?: Record<string, string> } | undefined = () =>
    undefined,
): Promise<string> {
  const http = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
    const refused = body && before(body);
    if (refused) return void res.writeHead(refused.status, refused.headers).end('slow down');
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => void transport.close());
    await make().connect(transport);
    await transport.handleRequest(req, res, body);
  });
  http.listen(0, '127.0.0.1');
  await once(http, 'listening');
  onCleanup(() => {
    http.closeAllConnections();
    return new Promise((resolve) => http.close(resolve));
  });
  return `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
}

/** The host: the official SDK client over streamable HTTP, with the bearer token. */
export async function httpClientOf(
  { url, token }: { url: string; token: string },
  { capabilities = {}, answer }: HostFeatures = {},
): Promise<Client> {
  const client = new Client({ name: 'http-host', version: '1.0.0' }, { capabilities });
  answer?.(client);
  const headers = { authorization: `Bearer ${token}` };
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  onCleanup(() => client.close());
  return client;
}

/** A host that starts `node args`, initializes, sends one tools/call (`params`) and closes the server's stdin (MCP's
 * stdio shutdown) once `underWay()` says the call is under way; it kills nothing. The exit code, and the answers. */
export async function closeStdinMidCall(
  args: string[],
  params: Record<string, unknown>,
  underWay: () => boolean,
  env: Record<string, string> = {},
) {
  const child = spawn(process.execPath, args, { env: { PATH: process.env.PATH ?? '', ...env }, stdio: 'pipe' });
  let out = '';
  child.stdout.on('data', (d) => (out += String(d)));
  const send = (m: object) => child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', ...m })}\n`);
  const clientInfo = { name: 'host', version: '1.0.0' };
  send({
    id: 0,
    method: 'initialize',
    params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo },
  });
  send({ method: 'notifications/initialized' });
  send({ id: 1, method: 'tools/call', params });
  while (!underWay()) await new Promise((r) => setTimeout(r, 20));
  child.stdin.end();
  const [code] = await once(child, 'exit');
  return {
    code,
    answers: out
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { id?: number; result?: Answer }),
  };
}

/** An upstream `callTool` whose every answer lists `orders`. */
export const listed = (orders: readonly Record<string, unknown>[]) => async () => ({
  content: [],
  structuredContent: { orders },
});
const ordersUpstreamTools = [
  {
    name: 'create_order',
    inputSchema: {
      type: 'object' as const,
      properties: {
        customer: { type: 'string' },
        ref: { type: 'string' },
        tags: { type: 'array' },
        labels: { type: 'array' },
        lines: { type: 'array' },
      },
    },
  },
  { name: 'list_orders', inputSchema: { type: 'object' as const } },
];

/** The official SDK client (`name`), connected to `server` in process. */
export async function clientOf(
  server: Pick<Server, 'connect'>,
  name = 'agent',
  { capabilities = {}, answer }: HostFeatures = {},
): Promise<Client> {
  const [a, b] = InMemoryTransport.createLinkedPair();
  await server.connect(a);
  const client = new Client({ name, version: '1.0.0' }, { capabilities });
  answer?.(client);
  await client.connect(b);
  return client;
}

/** The fence server over `upstream` as `config` fences it, on a memory ledger. */
export function fenceOver(config: FenceConfig, upstream: Upstream, ledger = createMemoryLedger()) {
  const runner = createRunner({ ledger });
  return createFenceServer({ runner, ledger, fence: followUpstream(config, upstream), upstream });
}

/** Fence servers (one per host session, as `--http` makes them) over the upstream at `target` as the fence file `fence`
 * (its ledger aside) says, on `ledger`. */
export async function fencesOver(
  target: UpstreamTarget,
  fence: Record<string, unknown>,
  ledger = createMemoryLedger(),
) {
  const upstream = await connectUpstream(target);
  onCleanup(() => upstream.close());
  const config = parseFenceConfig({ ledger: './unused.db', ...fence });
  return () => fenceOver(config, upstream, ledger);
}

/** The host (the official SDK client) in process, on a fence over the upstream at `target` as the fence file `fence`
 * (its ledger aside) says, on a memory ledger. */
export async function hostOfFence(target: UpstreamTarget, fence: Record<string, unknown>) {
  const ledger = createMemoryLedger();
  return { client: await clientOf((await fencesOver(target, fence, ledger))()), ledger };
}

/** The fence adapter over an in-process orders upstream, `create_order` as `ordersTool` declares it and `tool` adds. */
export function fenceAdapter(
  tool: Record<string, unknown>,
  callTool: Parameters<typeof createFenceAdapter>[0]['client']['callTool'] = listed([]),
) {
  const config = parseFenceConfig({
    name: 'orders',
    ledger: './unused.db',
    tools: { create_order: { ...ordersTool({ lateApplyBound: '1s' }), ...tool } },
  });
  return createFenceAdapter({ config, client: { callTool }, tools: ordersUpstreamTools });
}

/** Why the fence refuses to start with `tool`. */
export function startError(tool: Record<string, unknown>): Error {
  try {
    fenceAdapter(tool);
  } catch (e) {
    return e as Error;
  }
  throw new Error('the fence started');
}

/** `create_order`'s lookup for a call with `params`, its first dispatch a minute ago. */
export function lookupOrder(adapter: ReturnType<typeof fenceAdapter>, params: Record<string, unknown>) {
  const now = Date.now();
  const ctx = lookupContext(adapter, 'create_order', asBusinessOperationId('orders.create_order:x'), params, {
    firstDispatchedAt: now - 60_000,
    now,
  });
  return adapter.doLookup('create_order', ctx);
}

/** `retrysafe-mcp wrap` over the orders server with `fence`, run to its end (a fence it refuses exits 2). */
export const wrapOrders = (fence: string, ...serverArgs: string[]) =>
  spawnSync(process.execPath, [bin, 'wrap', '--config', fence, '--', process.execPath, ordersServer, ...serverArgs], {
    encoding: 'utf8',
  });

/** A fence file whose `create_order` declares one rule under `key` (`normalize`, `paramComparison`), read. */
export const parseWithRule = (key: string, rule: Record<string, unknown>) =>
  parseFenceConfig({
    name: 'orders',
    ledger: './unused.db',
    tools: { create_order: { kind: 'create', intent: ['ref'], [key]: [rule] } },
  });
