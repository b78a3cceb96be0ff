import { AsyncLocalStorage } from 'node:async_hooks';
import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { DEFAULT_REQUEST_TIMEOUT_MSEC, type RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolResultSchema,
  type ClientCapabilities,
  ErrorCode,
  isJSONRPCError,
  isJSONRPCResultResponse,
  ListToolsResultSchema,
  type LoggingLevel,
  LoggingLevelSchema,
  McpError,
  type Notification,
  type Progress,
  RELATED_TASK_META_KEY,
  type Request,
  type Result,
  ResultSchema,
  type ServerCapabilities,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { createRedactor } from '@retrysafe/core/internal';
import { taskOnly, viaTask } from './upstream-task.js';

/** A command to spawn (stdio, with `env` applied to the fence's environment) or a streamable HTTP URL. */
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

/** The upstream is not connected and could not be restarted: nothing was sent. */
export class UpstreamUnavailableError extends Error {
  override readonly name = 'UpstreamUnavailableError';
}

/** An HTTP upstream's 429 with its Retry-After, which the SDK's transport error leaves out. */
export class UpstreamThrottledError extends StreamableHTTPError {
  constructor(
    message: string,
    readonly retryAfter: string | null,
  ) {
    super(429, message);
  }
}

/** The HTTP transport's fetch: a 429 is thrown as UpstreamThrottledError, so the call's error keeps the wait. */
async function keepingRetryAfter(url: string | URL, init?: RequestInit): Promise<Response> {
  const res = await fetch(url, init);
  if (res.status !== 429) return res;
  const text = await res.text().catch(() => '');
  throw new UpstreamThrottledError(`the upstream answered HTTP 429: ${text}`, res.headers.get('retry-after'));
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
 * handler on its response: the upstream's last progress, written just before its result, was lost. Each answer is
 * handled once the messages read before it have been (and the end of the connection after the answers before it). */
function inOrder(transport: Transport) {
  const { onmessage, onclose } = transport;
  transport.onmessage = (message, extra) => {
    if (isJSONRPCResultResponse(message) || isJSONRPCError(message)) setImmediate(() => onmessage?.(message, extra));
    else onmessage?.(message, extra);
  };
  transport.onclose = () => setImmediate(() => onclose?.());
}

const scrub = createRedactor();

/** A text for the fence's stderr, scrubbed as receipts are: the upstream's output and answers may quote a credential or
 * an address. */
export const scrubbed = (text: string): string => scrub.text(text);

/** The upstream's stderr onto the fence's, line by line, scrubbed. */
function relayStderr(stream: Readable | null): void {
  if (stream)
    createInterface({ input: stream, crlfDelay: Infinity }).on('line', (l) => process.stderr.write(`${scrubbed(l)}\n`));
}

/** Pages of tools/list read before a listing whose cursor is new on every page is taken to never end. */
const MAX_TOOL_PAGES = 1000;

async function listAllTools(client: Client): Promise<Tool[]> {
  const tools: Tool[] = [];
  const seen = new Set<string>();
  let cursor: string | undefined;
  for (let pages = 1; ; pages++) {
    // Not listTools: it compiles each outputSchema for the client's own check of callTool (which the fence does not
    // use), and one it cannot compile would fail the whole listing, every tool of the upstream with it.
    const page = await client.request(
      { method: 'tools/list', ...(cursor ? { params: { cursor } } : {}) },
      ListToolsResultSchema,
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

/** One host session (a fence server): what its client declared, and how to ask it something. */
export interface Host {
  readonly capabilities: () => ClientCapabilities | undefined;
  readonly ask: (req: Request, opts: RequestOptions) => Promise<Result>;
  /** What it asked of the upstream session all hosts share (see `hostSessions`): the resources it subscribed to, its log level. */
  readonly subscribed: Set<string>;
  level?: LoggingLevel;
}

/** The log levels, least severe first. */
const LEVELS: readonly string[] = LoggingLevelSchema.options;

/** Whether `host` subscribed to the resource `uri` or to one it is beneath (an update may name a sub-resource). */
const subscribedTo = (host: Host, uri: string) =>
  [...host.subscribed].some((s) => uri === s || (uri.startsWith(s) && /^[/?#]/.test(uri.slice(s.length))));

/** Whether `host` hears `n`: not a log message below the level it set, nor a resource's update it did not subscribe to
 * (one none of `hosts` subscribed to by its URI goes to each that subscribed to any: whose it is cannot be told). */
function hears(host: Host, n: Notification, hosts: Iterable<Host>): boolean {
  if (n.method === 'notifications/resources/updated') {
    const uri = String(n.params?.uri);
    return [...hosts].some((h) => subscribedTo(h, uri)) ? subscribedTo(host, uri) : host.subscribed.size > 0;
  }
  return (
    n.method !== 'notifications/message' ||
    !host.level ||
    LEVELS.indexOf(String(n.params?.level)) >= LEVELS.indexOf(host.level)
  );
}

/** The host call being served: what the upstream asks while a request sent for it runs goes to its host, on the
 * stream of that call (`ask` sends it as related to the call). */
export const hostCall = new AsyncLocalStorage<HostCall>();
type HostCall = { readonly host: Host; readonly ask: Host['ask'] };

/** What the fence declares to the upstream, before any host connects: every client feature of the specification.
 * A request the host turns out not to support is answered an error (see `toHost`). */
export const AS_CLIENT: ClientCapabilities = {
  sampling: {},
  elicitation: { form: {}, url: {} },
  roots: { listChanged: true },
};

/** The host capability each request of the upstream needs. */
const NEEDS: Readonly<Record<string, (c: ClientCapabilities, params: Request['params']) => unknown>> = {
  'sampling/createMessage': (c) => c.sampling,
  'elicitation/create': (c, p) => (p?.mode === 'url' ? c.elicitation?.url : c.elicitation),
  'roots/list': (c) => c.roots,
};

/** Why the upstream's request `method` cannot go to the one host of `candidates`; undefined when it can. */
function refusal(method: string, params: Request['params'], candidates: ReadonlySet<Host>): string | undefined {
  const need = NEEDS[method];
  if (!need) return 'the retrysafe fence does not forward it';
  if (candidates.size > 1)
    return `the retrysafe fence serves ${candidates.size} host sessions and cannot tell which one it is for`;
  const [host] = candidates;
  if (!host) return 'no host is connected to the retrysafe fence';
  if (!need(host.capabilities() ?? {}, params)) return 'the host behind the retrysafe fence did not declare it';
  return undefined;
}

/** The SDK's timeout of a request upstream, which `pausableTimeout` bounds instead. Node's longest timer. */
const NO_TIMEOUT = 2 ** 31 - 1;

/** A request's timeout (the SDK's, else its default), which stops while the host is asked something for the request
 * (a person answering, a model sampling: no lost answer) and, with `resetTimeoutOnProgress`, starts again on progress. */
function pausableTimeout(opts: RequestOptions = {}) {
  const ms = opts.timeout ?? DEFAULT_REQUEST_TIMEOUT_MSEC;
  const timedOut = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let held = 0;
  let ended = false;
  const restart = () => {
    clearTimeout(timer);
    if (held > 0 || ended) return;
    const error = new McpError(ErrorCode.RequestTimeout, 'Request timed out', { timeout: ms });
    timer = setTimeout(() => timedOut.abort(error), ms);
  };
  restart();
  const { onprogress, signal } = opts;
  // None after the request has ended: the SDK keeps hearing a task's progress after the fence has its result, and the
  // host's request it would go to is answered.
  const progress = (p: Progress) => {
    if (ended) return;
    if (opts.resetTimeoutOnProgress) restart();
    onprogress?.(p);
  };
  return {
    options: {
      ...opts,
      timeout: NO_TIMEOUT,
      signal: signal ? AbortSignal.any([signal, timedOut.signal]) : timedOut.signal,
      ...(onprogress ? { onprogress: progress } : {}),
    },
    hold() {
      held++;
      clearTimeout(timer);
    },
    release() {
      held--;
      restart();
    },
    end() {
      ended = true;
      clearTimeout(timer);
    },
  };
}

/** The host sessions the upstream serves (one on stdio, one per host over `--http`), which share its one session: it
 * stays subscribed to a resource while a host is, and logs at the most verbose level a host wants (one that set none
 * wants all, as the SDK's server sends them); each host hears its own level (`hears`). */
function hostSessions(
  send: (req: Request, opts?: RequestOptions) => Promise<Result>,
  notify: (n: Notification) => Promise<void> | undefined,
  hostAnswerMs: number,
) {
  const hosts = new Set<Host>();
  /** Each request upstream in flight for a host call (oldest first), with its timeout and the task that runs it. */
  const busy: { readonly call: HostCall; readonly timeout: ReturnType<typeof pausableTimeout>; taskId?: string }[] = [];
  const listeners = new Map<(n: Notification) => void, Host>();
  const level = () =>
    (LEVELS[Math.min(...[...hosts].map((h) => LEVELS.indexOf(h.level ?? 'debug')))] ?? 'debug') as LoggingLevel;
  /** A host's request other than a tool call. The upstream's tasks are the fence's own (see `taskOnly`): no host's
   * to read or cancel. */
  async function hostRequest(host: Host, { method, params }: Request, opts?: RequestOptions): Promise<Result> {
    if (method.startsWith('tasks/'))
      throw new McpError(ErrorCode.MethodNotFound, `${method}: the retrysafe fence does not offer tasks`);
    const uri = String(params?.uri);
    if (method === 'logging/setLevel' && LEVELS.includes(String(params?.level))) {
      host.level = params?.level as LoggingLevel;
      return send({ method, params: { ...params, level: level() } }, opts);
    }
    if (method === 'resources/unsubscribe') {
      host.subscribed.delete(uri);
      if ([...hosts].some((h) => h.subscribed.has(uri))) return {};
    }
    const answer = await send({ method, params }, opts);
    if (method === 'resources/subscribe') host.subscribed.add(uri);
    return answer;
  }
  return {
    busy,
    /** A request of the upstream, sent to the one host it can be for: the host of the call that runs the task it is
     * related to (its `_meta`), else of the calls in flight, else the one connected. With none, or several (`--http`
     * hosts, each a session: nothing else in a request tells whose call it is for), or one that did not declare what is
     * asked, it is refused, never left waiting; so is a request the fence does not know a host can answer, and one the
     * host has not answered within `hostAnswerMs` (the SDK cancels it with the host and answers a timeout error). */
    async toHost({ method, params }: Request, { signal }: { signal: AbortSignal }): Promise<Result> {
      const { [RELATED_TASK_META_KEY]: task, ...meta } = params?._meta ?? {};
      const taskId = (task as { taskId?: unknown } | undefined)?.taskId;
      const related = busy.filter((b) => taskId !== undefined && b.taskId === taskId);
      const calls = related.length ? related : busy;
      const candidates = new Set(calls.length ? calls.map((b) => b.call.host) : hosts);
      const [host] = candidates;
      const why = refusal(method, params, candidates);
      if (why || !host) throw new McpError(ErrorCode.MethodNotFound, `${method}: ${why}`);
      // The task is the fence's own (see taskOnly): not one for the host to look up.
      const asked = task === undefined ? params : { ...params, _meta: meta };
      const waiting = [...busy];
      for (const b of waiting) b.timeout.hold();
      try {
        return await (calls.at(-1)?.call ?? host).ask({ method, params: asked }, { signal, timeout: hostAnswerMs });
      } finally {
        for (const b of waiting) b.timeout.release();
      }
    },
    /** A host's notification (its roots changed) to the upstream; dropped while it is not connected. */
    notify,
    /** A host session that can be asked what the upstream asks; it says when it goes (the function returned). When
     * it lists roots, the upstream is told they changed: it asked before any host was there. */
    addHost(host: Host) {
      hosts.add(host);
      if (host.capabilities()?.roots) void notify({ method: 'notifications/roots/list_changed' });
      // A host that goes ends its subscriptions, as its unsubscribe would, and its log level: the upstream logs at the
      // level the hosts still there want.
      return () => {
        hosts.delete(host);
        for (const uri of [...host.subscribed])
          void hostRequest(host, { method: 'resources/unsubscribe', params: { uri } }).catch(() => undefined);
        if (host.level) void send({ method: 'logging/setLevel', params: { level: level() } }).catch(() => undefined);
      };
    },
    /** Every notification the upstream sends that `host` hears (after the fence has acted on a tool list change). */
    onNotification(host: Host, listener: (n: Notification) => void) {
      listeners.set(listener, host);
      return () => listeners.delete(listener);
    },
    /** The upstream's notification `n`, to each host that hears it. */
    tell(n: Notification) {
      for (const [l, host] of listeners) if (hears(host, n, hosts)) l(n);
    },
    hostRequest,
    /** A restarted upstream is a new session: it is asked again what the hosts asked of the one before. */
    restore(c: Client) {
      for (const uri of new Set([...hosts].flatMap((h) => [...h.subscribed])))
        void c.request({ method: 'resources/subscribe', params: { uri } }, ResultSchema).catch(() => undefined);
      if ([...hosts].some((h) => h.level)) void c.setLoggingLevel(level()).catch(() => undefined);
    },
  };
}

/** What a failed start of `transport` is thrown as: for a stdio upstream that ended, its command and exit code (the
 * SDK's error says only "Connection closed"); for an HTTP one, the cause (fetch says only "fetch failed"; the URL is
 * not quoted, it may hold a credential). */
function startError(target: UpstreamTarget, transport: Transport) {
  let ended: string | undefined;
  if (transport instanceof StdioClientTransport && 'command' in target) {
    const upstream = [target.command, ...(target.args ?? [])].join(' ');
    const spawn = transport.start.bind(transport);
    // The SDK keeps its child process private: read off it, for its exit code (an SDK without it: its own message).
    transport.start = () =>
      spawn().then(() => {
        (transport as unknown as { _process?: ChildProcess })._process?.once('exit', (code, signal) => {
          ended = `the upstream MCP server (${upstream}) ${signal ? `was killed by ${signal}` : `exited with code ${code}`} at start-up`;
        });
      });
  }
  return (e: unknown) => {
    const why = 'url' in target && e instanceof TypeError && (e.cause as Error | undefined)?.message;
    if (why) return new Error(`the upstream MCP server's URL cannot be reached: ${why}`, { cause: e });
    return ended ? new Error(ended, { cause: e }) : e;
  };
}

/** How long the host may take to answer what the upstream asks (a person, a model) before the upstream is answered a
 * timeout error: an upstream that waits for ever must not hold a call, and its claim, for ever. */
const HOST_ANSWER_MS = 600_000;

// A dead stdio upstream is restarted (bounded, with backoff); a call that cannot be sent fails UpstreamUnavailableError.
export async function connectUpstream(
  target: UpstreamTarget,
  name = 'retrysafe-fence',
  { hostAnswerMs = HOST_ANSWER_MS } = {},
) {
  let client: Client | undefined;
  let tools: Tool[] = [];
  let capabilities: ServerCapabilities = {};
  let instructions: string | undefined;
  let closing = false;
  let starting: Promise<void> | undefined;
  /** Deaths since the upstream last answered a request: one that dies each time it starts is not restarted for ever. */
  let deaths = 0;
  const shared = hostSessions(
    (req, opts) => request(req, ResultSchema, opts),
    (n) => client?.notification(n).catch(() => undefined),
    hostAnswerMs,
  );
  const { busy } = shared;
  const start = async (): Promise<void> => {
    const c = new Client({ name, version: '0.1.0' }, { capabilities: AS_CLIENT });
    c.fallbackRequestHandler = shared.toHost as never;
    const transport =
      'url' in target
        ? new StreamableHTTPClientTransport(new URL(target.url), { fetch: keepingRetryAfter })
        : new StdioClientTransport({
            command: target.command,
            args: [...(target.args ?? [])],
            env: upstreamEnv(target.env),
            stderr: 'pipe',
          });
    if (transport instanceof StdioClientTransport) relayStderr(transport.stderr as Readable | null);
    const named = startError(target, transport);
    c.fallbackNotificationHandler = async (n) => {
      if (n.method === 'notifications/tools/list_changed') tools = await listAllTools(c).catch(() => tools);
      // The upstream's tasks are the fence's own (see taskOnly): no host's business.
      if (n.method.startsWith('notifications/tasks/')) return;
      shared.tell(n);
    };
    c.onclose = () => {
      if (client !== c || closing) return;
      client = undefined;
      // Restarted now, so notifications flow again before the next call; after RESTART.tries deaths in a row, only
      // by the next call.
      if (++deaths <= RESTART.tries) void ready().catch(() => undefined);
    };
    await c.connect(transport).catch((e) => {
      throw named(e);
    });
    inOrder(transport);
    // A start that fails after connecting closes what it started (a stdio upstream is its child process).
    tools = await listAllTools(c).catch(async (e) => {
      const error = named(e); // before the close, whose own end of the child is not the cause
      await c.close().catch(() => undefined);
      throw error;
    });
    capabilities = c.getServerCapabilities() ?? {};
    instructions = c.getInstructions();
    client = c;
    shared.restore(c);
  };
  const startWithBackoff = async (): Promise<void> => {
    let last: unknown;
    for (let i = 0; i < RESTART.tries; i++) {
      if (i > 0) await sleep(RESTART.baseMs * 2 ** (i - 1));
      try {
        return await start();
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
    await ready();
    const c = client;
    if (!c?.transport) throw new UpstreamUnavailableError('the upstream MCP server is not connected');
    const call = hostCall.getStore();
    const timeout = pausableTimeout(opts);
    const entry: (typeof busy)[number] | undefined = call && { call, timeout };
    if (entry) busy.push(entry);
    try {
      const asTask = req.method === 'tools/call' && taskOnly(tools.find((t) => t.name === req.params?.name));
      const created = (taskId: string) => {
        if (entry) entry.taskId = taskId;
      };
      const send = asTask ? viaTask(c, req, schema, timeout.options, created) : c.request(req, schema, timeout.options);
      const answer = (await send) as Record<string, unknown>;
      deaths = 0;
      return answer;
    } catch (e) {
      // HTTP 404 to a request of a session is the spec's answer once the server ended that session (it restarted):
      // the request was not processed. The next call starts a new session.
      const session = (c.transport as { sessionId?: string } | undefined)?.sessionId;
      if (!(e instanceof StreamableHTTPError && e.code === 404 && session)) throw e;
      if (client === c) client = undefined;
      void c.close().catch(() => undefined);
      throw new UpstreamUnavailableError(`the upstream MCP server ended its session: ${e.message}`);
    } finally {
      timeout.end();
      if (entry) busy.splice(busy.indexOf(entry), 1);
    }
  };

  await start();
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
    async close() {
      closing = true;
      await client?.close();
    },
  };
}
