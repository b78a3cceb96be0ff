import { type ChildProcess, spawn } from 'node:child_process';
import type { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { isDeepStrictEqual } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport, SseError } from '@modelcontextprotocol/sdk/client/sse.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { DEFAULT_REQUEST_TIMEOUT_MSEC, type RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolResultSchema,
  ErrorCode,
  isJSONRPCError,
  isJSONRPCResultResponse,
  ListToolsResultSchema,
  McpError,
  type Request,
  ResultSchema,
  type ServerCapabilities,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { AS_CLIENT, hostCall, hostSessions, pausableTimeout } from './host-sessions.js';
import { relayStderr } from './upstream-stderr.js';
import { taskOnly, viaTask } from './upstream-task.js';

/** A command to spawn (stdio, with `env` applied to the fence's environment) or an HTTP URL (streamable, else HTTP+SSE). */
export type UpstreamTarget =
  | {
      readonly command: string;
      readonly args?: readonly string[];
      readonly env?: Readonly<Record<string, string | null>>;
    }
  | { readonly url: string };

export type Upstream = Awaited<ReturnType<typeof connectUpstream>>;

/** What the fence adapter and the probe need of an upstream (the SDK's `Client` has this shape too). */
export type UpstreamClient = Pick<Upstream, 'callTool'>;

export interface ToolAnswer {
  readonly isError?: boolean;
  readonly content?: readonly { readonly type: string; readonly text?: string }[];
  readonly structuredContent?: unknown;
  readonly _meta?: Readonly<Record<string, unknown>>;
}

/** The value at a dotted `path` of `value` (`''`: the value itself). */
export function readPath(value: unknown, path: string): unknown {
  if (path === '') return value;
  let cur = value;
  for (const part of path.split('.')) {
    if (cur === null || typeof cur !== 'object' || !Object.hasOwn(cur, part)) return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur;
}

/** A tool answer's value: its structured content, else its JSON text, else its text. */
export function answerValue(answer: ToolAnswer): unknown {
  if (answer.structuredContent !== undefined) return answer.structuredContent;
  const text = (answer.content ?? [])
    .filter((c) => c.type === 'text' && typeof c.text === 'string')
    .map((c) => c.text)
    .join('\n');
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The upstream is not connected and could not be restarted: nothing was sent. `reached`: the upstream had the request
 * and refused it unprocessed (a session it ended); else it never left. */
export class UpstreamUnavailableError extends Error {
  override readonly name = 'UpstreamUnavailableError';
  constructor(
    message: string,
    readonly reached = false,
  ) {
    super(message);
  }
}

/** An HTTP upstream's 429 with its Retry-After and `Date`, which the SDK's transport error leaves out. */
export class UpstreamThrottledError extends StreamableHTTPError {
  constructor(
    message: string,
    readonly retryAfter: string | null,
    readonly date: string | null = null,
  ) {
    super(429, message);
  }
}

/** The HTTP transport's fetch: a 429 is thrown as UpstreamThrottledError, so the call's error keeps the wait. */
async function keepingRetryAfter(url: string | URL, init?: RequestInit): Promise<Response> {
  const res = await fetch(url, init);
  if (res.status !== 429) return res;
  const text = await res.text().catch(() => '');
  const [retryAfter, date] = [res.headers.get('retry-after'), res.headers.get('date')];
  throw new UpstreamThrottledError(`the upstream answered HTTP 429: ${text}`, retryAfter, date);
}

/** Restarts of a dead upstream: tries, and the first delay, doubled each try. */
const RESTART = { tries: 5, baseMs: 100 };

/** The fence's own secrets: the upstream is someone else's code, so it gets them only if the fence file says so. */
const FENCE_SECRETS = { RETRYSAFE_PARAMS_KEYS: null, RETRYSAFE_RECEIPT_KEYS: null, RETRYSAFE_MCP_TOKEN: null };

/** The fence's own environment, without its secrets, with the fence file's changes applied (`null` removes one). */
function upstreamEnv(changes: Readonly<Record<string, string | null>> = {}): Record<string, string> {
  const env: [string, string | null | undefined][] = Object.entries({ ...process.env, ...FENCE_SECRETS, ...changes });
  return Object.fromEntries(env.filter((e): e is [string, string] => typeof e[1] === 'string'));
}

/** The SDK's client handles a notification a microtask after the response read with it, and drops a request's progress
 * handler on its response: each answer is handled once the messages read before it have been (the upstream's last
 * progress, written just before its result, would be lost). */
function inOrder(transport: Transport) {
  const { onmessage, onclose } = transport;
  transport.onmessage = (message, extra) => {
    if (isJSONRPCResultResponse(message) || isJSONRPCError(message)) setImmediate(() => onmessage?.(message, extra));
    else onmessage?.(message, extra);
  };
  transport.onclose = () => setImmediate(() => onclose?.());
}

/** Pages of tools/list read before a listing whose cursor is new on every page is taken to never end. */
const MAX_TOOL_PAGES = 1000;

async function listAllTools(client: Client, options?: RequestOptions): Promise<Tool[]> {
  const tools: Tool[] = [];
  const seen = new Set<string>();
  let cursor: string | undefined;
  for (let pages = 1; ; pages++) {
    // Not listTools: it compiles each outputSchema for the client's own check of callTool (which the fence does not
    // use), and one it cannot compile would fail the whole listing, every tool of the upstream with it.
    const page = await client.request(
      { method: 'tools/list', ...(cursor ? { params: { cursor } } : {}) },
      ListToolsResultSchema,
      options,
    );
    tools.push(...page.tools);
    cursor = page.nextCursor;
    if (!cursor) return tools;
    if (seen.has(cursor)) throw new Error("the upstream's tools/list never ends: it gave a cursor it had given before");
    if (pages === MAX_TOOL_PAGES)
      throw new Error(`the upstream's tools/list did not end after ${pages} pages (its cursor never runs out)`);
    seen.add(cursor);
  }
}

/** A stdio transport's child process, which the SDK keeps private (and forgets once it closes it). */
const childOf = (transport: unknown) => (transport as { _process?: ChildProcess } | undefined)?._process;

/** What a failed start of `transport` is thrown as: a stdio upstream's command and exit code, an HTTP one's cause (the
 * SDK says only "Connection closed", fetch "fetch failed"; the URL is not quoted, it may hold a credential). A stdio
 * upstream's child process is given to `spawned`. */
function startError(
  target: UpstreamTarget,
  transport: Transport,
  startTimeoutMs: number,
  spawned: (child: ChildProcess) => void,
) {
  let ended: string | undefined;
  if (transport instanceof StdioClientTransport && 'command' in target) {
    const upstream = [target.command, ...(target.args ?? [])].join(' ');
    const spawn = transport.start.bind(transport);
    // Its exit code, for the message (an SDK without it: its own message).
    transport.start = () =>
      spawn().then(() => {
        const child = childOf(transport);
        if (child) spawned(child);
        child?.once('exit', (code, signal) => {
          ended = `the upstream MCP server (${upstream}) ${signal ? `was killed by ${signal}` : `exited with code ${code}`} at start-up`;
        });
      });
  }
  return (e: unknown) => {
    if (e instanceof McpError && e.code === ErrorCode.RequestTimeout)
      return new Error(
        `the upstream MCP server did not answer its initialize within ${startTimeoutMs} ms: a first download (npx -y) may take longer; raise --start-timeout-ms`,
      );
    const why = 'url' in target && e instanceof TypeError && (e.cause as Error | undefined)?.message;
    if (why) return new Error(`the upstream MCP server's URL cannot be reached: ${why}`, { cause: e });
    return ended ? new Error(ended, { cause: e }) : e;
  };
}

/** How long a stdio upstream may take to end once its stdin has, and once it has been sent SIGTERM. */
const STOP_GRACE_MS = 500;

/** Run beside a stdio upstream (`node -e WATCHDOG <fence pid> <upstream pid>`): a fence killed outright (SIGKILL) runs no
 * code of its own, and an upstream that ignores the end of its stdin would run on. Once the fence is gone (its child is
 * re-parented; where it is not, the fence's pid is gone), the upstream gets SIGTERM, then SIGKILL; it ends with it. */
const WATCHDOG = `const [fence, upstream] = process.argv.slice(1).map(Number);
const alive = (pid) => { try { process.kill(pid, 0); return true; } catch { return false; } };
const timer = setInterval(() => {
  if (!alive(upstream)) process.exit(0);
  if (process.ppid === fence && alive(fence)) return;
  clearInterval(timer);
  process.kill(upstream, 'SIGTERM');
  setTimeout(() => alive(upstream) && process.kill(upstream, 'SIGKILL'), ${STOP_GRACE_MS});
}, 200);`;

/** The watchdog of a stdio upstream's `child`, ended with it. */
function watched(child: ChildProcess): void {
  const watchdog = spawn(process.execPath, ['-e', WATCHDOG, String(process.pid), String(child.pid)], {
    stdio: 'ignore',
  });
  watchdog.unref();
  child.once('exit', () => watchdog.kill());
}

/** Ends an HTTP upstream's session, as the spec asks of a client that leaves (its DELETE), unless the upstream does not
 * answer within the grace. */
const endSession = async (c: Client) => {
  const http = c.transport instanceof StreamableHTTPClientTransport ? c.transport : undefined;
  await Promise.race([
    http?.terminateSession().catch(() => undefined),
    sleep(STOP_GRACE_MS, undefined, { ref: false }),
  ]);
};

/** Closes `c`, ending an HTTP upstream's session. A stdio upstream (`child`) still running gets SIGTERM after the grace,
 * SIGKILL after another, and is waited for: the SDK waits longer before its own signals than a host closing us waits
 * before its, and an upstream that ignores SIGTERM would outlive us. */
async function end(c: Client, child = childOf(c.transport)): Promise<void> {
  const running = child?.exitCode === null && child.signalCode === null;
  const exited = running && new Promise((resolve) => child.once('exit', resolve));
  const signal = (s: NodeJS.Signals) => child?.exitCode === null && child.signalCode === null && child.kill(s);
  const timers = [setTimeout(signal, STOP_GRACE_MS, 'SIGTERM'), setTimeout(signal, 2 * STOP_GRACE_MS, 'SIGKILL')];
  await endSession(c);
  await c.close();
  await exited;
  for (const t of timers) clearTimeout(t);
}

/** How long the host may take to answer what the upstream asks: an upstream that waits for ever must not hold a call,
 * and its claim, for ever. */
const HOST_ANSWER_MS = 600_000;

// A dead stdio upstream is restarted (bounded, with backoff); a call that cannot be sent fails UpstreamUnavailableError.
// `signal` aborted while it starts closes the upstream being started; what it gives `onKill` ends the upstream at once
// (a stdio one killed, an HTTP one's session ended within the grace).
export async function connectUpstream(
  target: UpstreamTarget,
  name = 'retrysafe-fence',
  {
    hostAnswerMs = HOST_ANSWER_MS,
    startTimeoutMs = DEFAULT_REQUEST_TIMEOUT_MSEC,
    signal,
    onKill,
    log = (line: string) => void process.stderr.write(`${line}\n`),
  }: {
    hostAnswerMs?: number;
    /** How long the upstream may take to answer its initialize and first tools/list (`--start-timeout-ms`). */
    startTimeoutMs?: number;
    signal?: AbortSignal;
    onKill?: (end: () => Promise<void>) => void;
    log?: (line: string) => void;
  } = {},
) {
  let client: Client | undefined;
  /** The upstream started last, connected or still starting: the one a close ends; a stdio one's child process. */
  let latest: Client | undefined;
  let child: ChildProcess | undefined;
  let tools: Tool[] = [];
  let capabilities: ServerCapabilities = {};
  let instructions: string | undefined;
  let closing = false;
  let starting: Promise<void> | undefined;
  /** Deaths since the upstream last answered a request: one that dies each time it starts is not restarted for ever. */
  let deaths = 0;
  let sse = false;
  /** The stdio upstream ended itself (exit code 0) with a request in flight or just after an answer: one that serves a
   * request a process, gone before it would read the next one. Each request then gets a process of its own, which is
   * told nothing else (what the hosts asked of the one before would take the request's place); the requests in flight
   * at that first exit are lost (unknown). One that ends itself while idle (a signal, an idle timeout) is restarted. */
  let perRequest = false;
  let inFlight = 0;
  let answeredAt = Number.NEGATIVE_INFINITY;
  const shared = hostSessions(
    (req, opts) => request(req, ResultSchema, opts),
    (n) => client?.notification(n).catch(() => undefined),
    hostAnswerMs,
  );
  const { busy } = shared;
  const start = async (): Promise<void> => {
    const c = new Client({ name, version: '0.1.0' }, { capabilities: AS_CLIENT });
    latest = c;
    c.fallbackRequestHandler = shared.toHost as never;
    const transport =
      'url' in target
        ? new (sse ? SSEClientTransport : StreamableHTTPClientTransport)(new URL(target.url), {
            fetch: keepingRetryAfter,
          })
        : new StdioClientTransport({
            command: target.command,
            args: [...(target.args ?? [])],
            env: upstreamEnv(target.env),
            stderr: 'pipe',
          });
    if (transport instanceof StdioClientTransport) relayStderr(transport.stderr as Readable | null);
    // An HTTP+SSE session lives as long as its stream: one lost (the server restarted) closes the upstream, which is
    // started again, rather than reopened by the SDK into a session no initialize began (its calls left unanswered).
    if (transport instanceof SSEClientTransport) c.onerror = (e) => void (e instanceof SseError && c.close());
    const named = startError(target, transport, startTimeoutMs, (p) => {
      child = p;
      watched(p);
    });
    c.fallbackNotificationHandler = async (n) => {
      if (n.method === 'notifications/tools/list_changed') tools = await listAllTools(c).catch(() => tools);
      // The upstream's tasks are the fence's own (see taskOnly): no host's business.
      if (n.method.startsWith('notifications/tasks/')) return;
      shared.tell(n);
    };
    c.onclose = () => {
      if (client !== c || closing) return;
      client = undefined;
      const afterAnswer = inFlight > 0 || performance.now() - answeredAt < STOP_GRACE_MS;
      // A server exits 0 at the end of its stdin too: one the SDK's client ended (an answer too long for its buffer)
      // did not end itself.
      const endedItself = child?.exitCode === 0 && !child.stdin?.writableEnded;
      if (!perRequest && endedItself && afterAnswer) {
        perRequest = true;
        log(
          'retrysafe fence: the upstream ended itself (exit code 0) as it answered: each request now gets a process of its own, which is not sent the log level or resource subscriptions the hosts asked for',
        );
      }
      // Restarted now, so notifications flow again before the next call; after RESTART.tries deaths in a row, only
      // by the next call.
      if (++deaths <= RESTART.tries) void ready().catch(() => undefined);
    };
    // The SDK ends what a failed start leaves, but slower than a fence that cannot start exits.
    const startOptions = { timeout: startTimeoutMs };
    await c.connect(transport, startOptions).catch(async (e) => {
      const error = named(e);
      await end(c, child).catch(() => undefined);
      throw error;
    });
    inOrder(transport);
    const before = tools;
    // A start that fails after connecting closes what it started (a stdio upstream is its child process).
    tools = await listAllTools(c, startOptions).catch(async (e) => {
      const error = named(e); // before the close, whose own end of the child is not the cause
      await end(c).catch(() => undefined);
      throw error;
    });
    capabilities = c.getServerCapabilities() ?? {};
    instructions = c.getInstructions();
    client = c;
    if (!perRequest) shared.restore(c);
    // A restarted upstream is a new session, which may list other tools, resources and prompts: the hosts list again.
    if (!isDeepStrictEqual(before, tools)) shared.tell({ method: 'notifications/tools/list_changed' });
    for (const kind of ['resources', 'prompts'] as const)
      if (capabilities[kind]?.listChanged) shared.tell({ method: `notifications/${kind}/list_changed` });
  };
  /** A server that refuses the initialize POST with a 4xx may serve the HTTP+SSE transport (before streamable HTTP) at
   * the URL: tried then, as the SDK's backwards-compatible client does, and kept for its restarts. A 429 throttles,
   * saying nothing of the transport. */
  const startEither = async (): Promise<void> => {
    try {
      return await start();
    } catch (e) {
      const refused = e instanceof StreamableHTTPError && /^4\d\d$/.test(String(e.code));
      if (sse || !refused || e instanceof UpstreamThrottledError) throw e;
      sse = true;
      return await start().catch((old: Error) => {
        sse = false;
        const why = `streamable HTTP (${(e as Error).message}) nor HTTP+SSE (${old.message})`;
        throw new Error(`neither ${why} reached the upstream`, { cause: old });
      });
    }
  };
  const startWithBackoff = async (): Promise<void> => {
    let last: unknown;
    for (let i = 0; i < RESTART.tries; i++) {
      if (i > 0) await sleep(RESTART.baseMs * 2 ** (i - 1));
      if (closing) throw new UpstreamUnavailableError('the fence is closing');
      try {
        // Outside any host's call: what the connection reads outside a request's own answer stream is no call's.
        return await hostCall.exit(startEither);
      } catch (e) {
        last = e;
      }
    }
    throw new UpstreamUnavailableError(
      `the upstream MCP server could not be (re)started after ${RESTART.tries} tries: ${(last as Error)?.message ?? last}`,
    );
  };
  const ready = async (): Promise<void> => {
    if (client) return;
    if (closing) throw new UpstreamUnavailableError('the fence is closing');
    starting ??= startWithBackoff().finally(() => {
      starting = undefined;
    });
    return starting;
  };
  /** Any request, forwarded as is; without a connected client it would never leave, so it is refused as not sent. */
  const request = async (req: Request, schema: Parameters<Client['request']>[1], opts?: RequestOptions) => {
    do await ready();
    while (perRequest && !client); // taken by a request sent at the same time
    const c = client;
    if (!c?.transport) throw new UpstreamUnavailableError('the upstream MCP server is not connected');
    if (perRequest) client = undefined;
    const call = hostCall.getStore();
    const timeout = pausableTimeout(opts);
    const entry: (typeof busy)[number] | undefined = call && { call, timeout };
    if (entry) busy.push(entry);
    inFlight++;
    try {
      const asTask = req.method === 'tools/call' && taskOnly(tools.find((t) => t.name === req.params?.name));
      const created = (taskId: string) => {
        if (entry) entry.taskId = taskId;
      };
      const send = asTask ? viaTask(c, req, schema, timeout.options, created) : c.request(req, schema, timeout.options);
      const answer = (await send) as Record<string, unknown>;
      deaths = 0;
      answeredAt = performance.now();
      return answer;
    } catch (e) {
      // The server ended the session (the spec's 404; the SDK's example servers answer 400 "No valid session ID"): the
      // request was not processed, and the next call starts a new session.
      const session = (c.transport as { sessionId?: string } | undefined)?.sessionId;
      const forgotten =
        e instanceof StreamableHTTPError && (e.code === 404 || (e.code === 400 && /session/i.test(e.message)));
      if (!(forgotten && session)) throw e;
      if (client === c) client = undefined;
      void c.close().catch(() => undefined);
      throw new UpstreamUnavailableError(`the upstream MCP server ended its session: ${e.message}`, true);
    } finally {
      timeout.end();
      inFlight--;
      if (entry) busy.splice(busy.indexOf(entry), 1);
      if (perRequest) void end(c).catch(() => undefined);
    }
  };

  let closed: Promise<void> | undefined;
  /** Restarts stop at once (one started during a stop would only be stopped again); the upstream is ended once
   * `after` (the grace of the calls under way) has settled. Every caller gets the one close. */
  const close = (after?: Promise<unknown>) =>
    (closed ??= (async () => {
      closing = true;
      await after;
      if (latest) await end(latest);
    })());
  // Aborted while it starts (the fence was signalled): the upstream being started is closed as any other.
  const abort = () => void close().catch(() => undefined);
  signal?.addEventListener('abort', abort, { once: true });
  onKill?.(async () => {
    child?.kill('SIGKILL');
    if (latest) await endSession(latest);
  });
  await hostCall.exit(startEither).finally(() => signal?.removeEventListener('abort', abort));
  return {
    /** The upstream's tools as last listed (re-listed when it says its list changed, and after a restart). */
    get tools(): readonly Tool[] {
      return tools;
    },
    get capabilities() {
      return capabilities;
    },
    /** What the upstream told its client at initialize about how to use it. */
    get instructions() {
      return instructions;
    },
    /** Resolves once the upstream is connected, restarting it if it died; throws UpstreamUnavailableError if it cannot. */
    ready,
    request,
    /** No client-side output validation: an applied call must never turn into an error on its way back. */
    callTool: (
      params: { name: string; arguments?: Record<string, unknown>; _meta?: Record<string, unknown> },
      _?: undefined,
      opts?: RequestOptions,
    ) => request({ method: 'tools/call', params }, CallToolResultSchema, opts),
    hostRequest: shared.hostRequest,
    onNotification: shared.onNotification,
    addHost: shared.addHost,
    notify: shared.notify,
    close,
  };
}
