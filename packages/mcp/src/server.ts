import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { once } from 'node:events';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  type CallToolRequest,
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type ServerNotification,
  type ServerRequest,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { type AdapterV1, InvalidIdError, type Ledger } from '@retrysafe/contract';
import { type Runner, RunnerConfigurationError } from '@retrysafe/core';
import {
  type AgentRunner,
  type AgentToolDefinition,
  type AgentToolResult,
  agentRunner,
  agentTools,
  callAgentTool,
  operationStatus,
  pendingHandoffs,
} from '@retrysafe/core/agent';
import { LOOPBACK_NAMES } from './cli-options.js';
import { type Coalescer, createCoalescer, type Hearer } from './coalesce.js';

/** What both servers take; one coalescer serves every server of a process (HTTP builds one per session). */
export interface ServingOptions {
  readonly runner: Runner;
  readonly ledger: Ledger;
  readonly coalescer?: Coalescer;
}

export interface McpServerOptions extends ServingOptions {
  readonly adapters: readonly AdapterV1[];
  /** Operations to expose, by tool name (`stripe_paymentIntents_create`) or as the config names them (`<provider>.<operation>`); default all. */
  readonly operations?: readonly string[];
}

const STATUS_TOOL = 'retrysafe_status';
const HANDOFFS_TOOL = 'retrysafe_handoffs';
/** The lookups' names: a call by one of them reaches the lookup, so no operation or fenced tool may take one. */
export const LOOKUP_TOOLS: readonly string[] = [STATUS_TOOL, HANDOFFS_TOOL];
const READ_ONLY = { readOnlyHint: true, idempotentHint: true, destructiveHint: false, openWorldHint: false };

/** The status and handoff tools both servers list; `from` says where a business-operation id comes from. */
const lookupTools = (from: string, what: string) => [
  {
    name: STATUS_TOOL,
    title: 'retrysafe: operation status',
    description: `Looks up one business operation by its id (${from}): its state, provider reference, result, or the handoff a person must resolve.`,
    inputSchema: {
      type: 'object' as const,
      properties: { businessOperationId: { type: 'string' } },
      required: ['businessOperationId'],
    },
    annotations: READ_ONLY,
  },
  {
    name: HANDOFFS_TOOL,
    title: 'retrysafe: pending handoffs',
    description: `Lists ${what} handed off (the oldest 100; truncated says there are more; unreadable names any the ledger could not read): waitsFor says whether a person must resolve it or the user must take a step first (then call it again), message the next step, handoff why it stopped and which next actions are safe.`,
    inputSchema: { type: 'object' as const, properties: {} },
    annotations: READ_ONLY,
  },
];

/** An id the status tool cannot look up: the fields every invalid-input answer carries. */
const invalidId = (message: string) =>
  reply(
    { status: 'invalid-input', businessOperationId: null, fields: [{ path: 'businessOperationId', message }], message },
    true,
  );

/** The answer of a status or handoff tool call; undefined for any other tool. */
async function answerLookupTool(ledger: Ledger, agent: AgentRunner, name: string, args: unknown) {
  if (name === HANDOFFS_TOOL)
    return reply(await pendingHandoffs(ledger, { agent }).catch((e) => Promise.reject(agent.scrubbed(e))));
  if (name !== STATUS_TOOL) return undefined;
  const id = (args as { businessOperationId?: unknown } | undefined)?.businessOperationId;
  if (typeof id !== 'string') return invalidId('businessOperationId (string) is required');
  try {
    return reply(await operationStatus(ledger, id, { agent }));
  } catch (e) {
    // Only the id can be the agent's to correct: a ledger that fails is this server's error, as for the operation tools.
    if (!InvalidIdError.isInstance(e)) throw agent.scrubbed(e);
    return invalidId(e.message);
  }
}

/** The runner's answer to a tool call, passed through `settle`; an identical call in flight shares the first one's
 * answer and progress (see the coalescer). */
type Run = (
  tool: AgentToolDefinition,
  params: unknown,
  meta: unknown,
  settle?: (r: AgentToolResult) => AgentToolResult,
  hearers?: Set<Hearer>,
) => Promise<AgentToolResult>;

/** What a request handler is given besides the request. */
export type Extra = Pick<
  RequestHandlerExtra<ServerRequest, ServerNotification>,
  'signal' | 'sendNotification' | 'sendRequest'
>;

/** Both servers: `listed` plus the status and handoff lookups; `call` answers the rest, undefined for a name it does not list. */
export function serveTools(
  server: Server,
  options: ServingOptions,
  lookups: [string, string],
  listed: () => object[],
  call: (req: CallToolRequest, extra: Extra, run: Run) => Promise<object | undefined>,
) {
  const agent = agentRunner(options.runner); // a runner that lost its redaction is refused before the server serves
  const coalescer = options.coalescer ?? createCoalescer(options.ledger);
  const run: Run = (tool, params, meta, settle = (r) => r, hearers) =>
    coalescer.call(
      tool.name,
      params,
      meta,
      (followUp) => callAgentTool(agent, tool, params, { followUp }).then(settle),
      hearers,
    );
  // A listed tool of a lookup's name (an upstream's, passed through) is the lookup's: tool names are unique.
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: [...listed().filter((t) => !LOOKUP_TOOLS.includes((t as Tool).name)), ...lookupTools(...lookups)] as Tool[],
  }));
  const answer = async (req: CallToolRequest, extra: Extra) => {
    const { name, arguments: args = {} } = req.params;
    const result = (await answerLookupTool(options.ledger, agent, name, args)) ?? (await call(req, extra, run));
    // The spec's answer to an unknown tool is a protocol error, not a tool result.
    if (result === undefined) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
    return result;
  };
  // A process that stops lets the calls under way end and be answered.
  server.setRequestHandler(CallToolRequestSchema, (req, extra) => coalescer.track(() => answer(req, extra)));
}

export const ANSWER_PROPERTIES = {
  status: { type: 'string', enum: ['done', 'in-progress', 'needs-human', 'conflict', 'invalid-input', 'unavailable'] },
  businessOperationId: { type: ['string', 'null'] },
  message: { type: 'string' },
} as const;

const RESULT_SCHEMA = {
  type: 'object',
  properties: {
    ...ANSWER_PROPERTIES,
    fields: {
      type: 'array',
      items: {
        type: 'object',
        properties: { path: { type: 'string' }, message: { type: 'string' } },
        required: ['path', 'message'],
      },
    },
    paths: { type: 'array', items: { type: 'string' } },
    needsPerson: { type: 'boolean' },
    storedMayApply: { type: 'boolean' },
  },
  required: ['status', 'businessOperationId', 'message'],
} as const;

export function reply(structured: Record<string, unknown>, isError = false) {
  return {
    content: [{ type: 'text' as const, text: JSON.stringify(structured, null, 2) }],
    structuredContent: structured,
    ...(isError ? { isError: true } : {}),
  };
}

/** An MCP server whose tools are retrysafe operations (plus status and handoff lookups). */
export function createRetrysafeMcpServer(options: McpServerOptions): Server {
  const tools = agentTools(options.adapters, options.operations);
  const taken = tools.find((t) => LOOKUP_TOOLS.includes(t.name));
  if (taken)
    throw new RunnerConfigurationError(
      'agentTools',
      `${taken.qualifiedName} maps to the tool name ${taken.name}, the server's own lookup`,
    );
  const listed = tools.map(({ adapter, operation, qualifiedName, ...t }) => ({ ...t, outputSchema: RESULT_SCHEMA }));
  const server = new Server({ name: 'retrysafe', version: '0.1.0' }, { capabilities: { tools: {} } });
  serveTools(
    server,
    options,
    ['as returned by an operation tool', 'operations'],
    () => listed,
    async (req, _extra, run) => {
      const { name, arguments: args = {}, _meta } = req.params;
      const tool = tools.find((t) => t.name === name);
      if (!tool) return undefined;
      const result = await run(tool, args, _meta);
      const refused = ['conflict', 'invalid-input', 'unavailable'].includes(result.status);
      return reply(result as unknown as Record<string, unknown>, refused);
    },
  );
  return server;
}

/** Loopback with the bound port is always allowed; `allowedHosts` adds `name:port`, or a bare name for any port.
 * `token` is the bearer token clients send (default: a random one, returned); an idle session closes after `idleMs`. */
export interface ServeHttpOptions {
  readonly host?: string;
  readonly port?: number;
  readonly allowedHosts?: readonly string[];
  readonly allowedOrigins?: readonly string[];
  readonly token?: string;
  readonly idleMs?: number;
}

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();
const norm = (v: string) => v.trim().toLowerCase();

// Host (loopback with the bound port, against DNS rebinding), Origin (absent, or listed), then the bearer token:
// the refusal's status and reason, or undefined when the request may go on.
function refusal(req: IncomingMessage, port: number, opts: ServeHttpOptions, token: string) {
  const hosts = [...LOOPBACK_NAMES.map((n) => `${n}:${port}`), ...(opts.allowedHosts ?? []).map(norm).filter(Boolean)];
  const host = norm(req.headers.host ?? '');
  if (!hosts.includes(host) && !hosts.includes(host.replace(/:\d+$/, '')))
    return { status: 403, reason: 'host not allowed' };
  const origins = [
    ...LOOPBACK_NAMES.map((n) => `http://${n}:${port}`),
    ...(opts.allowedOrigins ?? []).map((o) => norm(o).replace(/\/+$/, '')).filter(Boolean),
  ];
  const origin = req.headers.origin;
  if (origin !== undefined && !origins.includes(norm(origin))) return { status: 403, reason: 'origin not allowed' };
  const m = /^Bearer[ ]+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
  // Both sides hashed to 32 bytes, so the comparison's time leaks neither where they differ nor the length.
  if (!m || !timingSafeEqual(digest(m[1]!), digest(token)))
    return { status: 401, reason: 'missing or wrong bearer token' };
  return undefined;
}

/** A session with no request open (no call, no GET stream: its host is gone) is closed after this. */
const IDLE_MS = 10 * 60_000;
/** Sessions open at once, and messages held for a host that has not opened its GET stream. */
const MAX_SESSIONS = 100;
const MAX_HELD = 100;

/** Streamable HTTP on loopback only, one MCP server per session (ended by DELETE, or when idle); a request the guard
 * refuses gets 403/401 and no server. A session's GET stream carries what the server sends outside a request. */
export async function serveHttp(
  makeServer: () => Server,
  opts: ServeHttpOptions = {},
): Promise<{ url: string; token: string; close(): Promise<void> }> {
  const host = opts.host ?? '127.0.0.1';
  if (!['127.0.0.1', '::1', 'localhost'].includes(host))
    throw new Error(`refusing to listen on ${host}: the MCP HTTP transport binds to loopback only`);
  const token = opts.token ?? randomBytes(32).toString('base64url');
  if (token.length < 16 || /\s/.test(token))
    throw new TypeError('MCP HTTP token: expected at least 16 characters without spaces');
  type Session = {
    readonly transport: StreamableHTTPServerTransport;
    listening(): void;
    open: number;
    idle?: NodeJS.Timeout;
  };
  const sessions = new Map<string, Session>();
  let opened = 0; // sessions, and those being initialized
  const answer = (res: ServerResponse, status: number, message: string, headers = {}) =>
    res
      .writeHead(status, { 'content-type': 'application/json', ...headers })
      .end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message }, id: null }));
  // A request without a session id starts one (the transport refuses anything but an initialize).
  const start = async () => {
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: randomUUID,
      onsessioninitialized: (id) => void sessions.set(id, session),
    });
    // What the server sends outside a request before the host opens its GET stream (the upstream asks a host that
    // just connected for its roots) waits for that stream instead of going nowhere.
    const send = transport.send.bind(transport);
    let held: Parameters<typeof send>[] | undefined = [];
    transport.send = async (message, options) => {
      if (!held || options?.relatedRequestId !== undefined || !('method' in message)) return send(message, options);
      if (held.length < MAX_HELD) held.push([message, options]);
    };
    const session: Session = {
      transport,
      open: 0,
      listening() {
        const waiting = held ?? [];
        held = undefined;
        // the transport registers the stream in the promise reactions of the GET it is handling
        setImmediate(() => {
          for (const a of waiting) void send(...a).catch(() => undefined);
        });
      },
    };
    opened++;
    transport.onclose = () => {
      opened--;
      clearTimeout(session.idle);
      sessions.delete(transport.sessionId ?? '');
    };
    await makeServer().connect(transport);
    return session;
  };
  const http = createHttpServer(async (req, res) => {
    const refused = refusal(req, (http.address() as AddressInfo).port, opts, token);
    if (refused) {
      answer(
        res,
        refused.status,
        refused.reason,
        refused.status === 401 ? { 'www-authenticate': 'Bearer realm="retrysafe-mcp"' } : {},
      );
      req.resume();
      return;
    }
    if (req.url !== '/mcp') {
      res.writeHead(404).end();
      return;
    }
    const id = req.headers['mcp-session-id'];
    if (id === undefined && opened >= MAX_SESSIONS) return answer(res, 503, 'too many sessions');
    // The spec's answer to a session that ended: 404, and the client starts a new one.
    const session = id === undefined ? await start() : sessions.get(String(id));
    if (!session) return answer(res, 404, 'session not found');
    if (req.method === 'GET') session.listening();
    session.open++;
    clearTimeout(session.idle);
    res.on('close', () => {
      if (--session.open > 0) return;
      const { transport } = session;
      if (transport.sessionId === undefined) void transport.close();
      else session.idle = setTimeout(() => void transport.close(), opts.idleMs ?? IDLE_MS);
    });
    await session.transport.handleRequest(req, res);
  });
  // A port in use is an error of this call, not an unhandled 'error' event that kills the process.
  http.listen(opts.port ?? 0, host);
  await once(http, 'listening');
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://${host === '::1' ? '[::1]' : host}:${port}/mcp`,
    token,
    async close() {
      await Promise.all([...sessions.values()].map((s) => s.transport.close()));
      const closed = new Promise((resolve) => http.close(resolve));
      // A request still running (a call past the stop's grace) would hold the close, and the process, for ever.
      http.closeAllConnections();
      await closed;
    },
  };
}
