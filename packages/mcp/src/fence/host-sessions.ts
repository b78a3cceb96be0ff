/** The hosts an upstream serves (one on stdio, one per host over `--http`), which share its one session: whose call a
 * request of the upstream is for, who hears its notifications, and the timeout of a request sent for a host's call. */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { DEFAULT_REQUEST_TIMEOUT_MSEC, type RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  type ClientCapabilities,
  ErrorCode,
  type LoggingLevel,
  LoggingLevelSchema,
  McpError,
  type Notification,
  type Progress,
  RELATED_TASK_META_KEY,
  type Request,
  type Result,
  ResultSchema,
} from '@modelcontextprotocol/sdk/types.js';

/** One host session (a fence server): what its client declared, and how to ask it something. */
export interface Host {
  readonly capabilities: () => ClientCapabilities | undefined;
  readonly ask: (req: Request, opts: RequestOptions) => Promise<Result>;
  /** What it asked of the upstream session all hosts share (see `hostSessions`): the resources it subscribed to, its log level. */
  readonly subscribed: Set<string>;
  level?: LoggingLevel;
}

/** Least severe first. */
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

/** A JSON-RPC error relayed as its sender sent it: the SDK's client puts `MCP error <code>: ` before the message it
 * got, and the SDK's server sends a thrown error's message on, so each hop through the fence added one. */
export function asSent(e: unknown): unknown {
  if (!(e instanceof McpError)) return e;
  const prefix = `MCP error ${e.code}: `;
  const message = e.message.startsWith(prefix) ? e.message.slice(prefix.length) : e.message;
  return Object.assign(new Error(message), { code: e.code, data: e.data });
}

/** The SDK's timeout of a request upstream, which `pausableTimeout` bounds instead: Node's longest timer. */
export const NO_TIMEOUT = 2 ** 31 - 1;

/** A request's timeout (the SDK's, else its default), which stops while the host is asked something for the request
 * (a person answering, a model sampling: no lost answer) and, with `resetTimeoutOnProgress`, starts again on progress. */
export function pausableTimeout(opts: RequestOptions = {}) {
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
  const options: RequestOptions = {
    ...opts,
    timeout: NO_TIMEOUT,
    signal: signal ? AbortSignal.any([signal, timedOut.signal]) : timedOut.signal,
    ...(onprogress ? { onprogress: progress } : {}),
  };
  return {
    options,
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
export function hostSessions(
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
    /** A request of the upstream, sent to the one host it can be for: the host of the call whose task or answer stream
     * it came with, else of the calls in flight, else the one connected. With none or several, or one that did not
     * declare it, it is refused, never left waiting; one not answered within `hostAnswerMs` is cancelled. */
    async toHost({ method, params }: Request, { signal }: { signal: AbortSignal }): Promise<Result> {
      const { [RELATED_TASK_META_KEY]: task, ...meta } = params?._meta ?? {};
      const taskId = (task as { taskId?: unknown } | undefined)?.taskId;
      // Read on the answer stream of a call's request (streamable HTTP), it is heard in that call's context.
      const own = hostCall.getStore();
      const related = busy.filter((b) => (taskId !== undefined && b.taskId === taskId) || b.call === own);
      const calls = related.length ? related : busy;
      const candidates = new Set(calls.length ? calls.map((b) => b.call.host) : hosts);
      const [host] = candidates;
      const why = refusal(method, params, candidates);
      if (why || !host) throw new McpError(ErrorCode.MethodNotFound, `${method}: ${why}`);
      // The task is the fence's own (see taskOnly): not one for the host to look up.
      const asked = task === undefined ? params : { ...params, _meta: meta };
      const waiting = [...busy];
      for (const b of waiting) b.timeout.hold();
      // The host's progress goes to the upstream under its own token, each before the answer (it drops later ones).
      const progressToken = params?._meta?.progressToken;
      let relayed: Promise<unknown> = Promise.resolve();
      const onprogress = (p: Progress) => {
        relayed = Promise.all([relayed, notify({ method: 'notifications/progress', params: { ...p, progressToken } })]);
      };
      const options = { signal, timeout: hostAnswerMs, ...(progressToken === undefined ? {} : { onprogress }) };
      try {
        const answer = await (calls.at(-1)?.call ?? host).ask({ method, params: asked }, options);
        await relayed;
        return answer;
      } catch (e) {
        throw asSent(e);
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
