import { createHash } from 'node:crypto';
import {
  Agent,
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { DrillFault } from '@retrysafe/contract';

/**
 * A network fault: the contract's `DrillFault` (pass, drop-response, reset-before, delay, status, late-commit),
 * or `'truncate-response'`: the status line, headers and half the body, then a reset (committed, body unreadable).
 */
export type Fault = DrillFault | 'truncate-response';

/** What the script is told about the request it decides for. */
export type FaultRequestInfo = {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
};

/** One entry per call (1-based; past the end every call is `'pass'`), or a function of the call number. */
export type FaultScript = readonly Fault[] | ((call: number, request: FaultRequestInfo) => Fault);

export interface FaultProxyOptions {
  /** Upstream base URL, `http://127.0.0.1:PORT` (loopback only). */
  readonly target: string;
  readonly faults?: FaultScript;
  /** Extra request headers to record (case-insensitive), besides `Idempotency-Key`. */
  readonly recordHeaders?: readonly string[];
  /** The clock `late-commit` measures `afterMs` on (the drill's virtual clock); default real time. */
  readonly clock?: { now(): number };
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

const SIMPLE_FAULTS: readonly unknown[] = ['pass', 'drop-response', 'reset-before', 'truncate-response'];
const isMs = (v: unknown) => typeof v === 'number' && Number.isFinite(v) && v >= 0;
const isStatus = (v: unknown) => Number.isInteger(v) && (v as number) >= 100 && (v as number) <= 599;
/** What each object fault's fields must be. */
const FIELD_RULES = new Map<unknown, readonly (readonly [string, (v: unknown) => boolean, string])[]>([
  ['delay', [['ms', isMs, 'ms >= 0']]],
  ['late-commit', [['afterMs', isMs, 'afterMs >= 0']]],
  [
    'status',
    [
      ['status', isStatus, 'an HTTP status 100–599'],
      ['retryAfterS', (v) => v === undefined || isMs(v), 'retryAfterS >= 0'],
    ],
  ],
]);

/** Throws a TypeError naming the problem when `fault` is not a valid Fault (a script is the caller's code). */
function validateFault(fault: unknown, where = 'fault'): asserts fault is Fault {
  if (SIMPLE_FAULTS.includes(fault)) return;
  const f = (typeof fault === 'object' && fault !== null ? fault : {}) as Record<string, unknown>;
  const rules = FIELD_RULES.get(f.kind);
  if (!rules)
    throw new TypeError(
      `${where}: expected 'pass' | 'drop-response' | 'reset-before' | 'truncate-response' | { kind: 'delay', ms } | { kind: 'status', status }, got ${JSON.stringify(fault)}`,
    );
  for (const [field, ok, want] of rules)
    if (!ok(f[field])) throw new TypeError(`${where}: ${f.kind} needs ${want}, got ${JSON.stringify(f[field])}`);
}

function validateScript(script: FaultScript): void {
  if (typeof script !== 'function')
    for (const [i, f] of script.entries()) validateFault(f, `faults[${i}] (call ${i + 1})`);
}

function pick(script: FaultScript, n: number, info: FaultRequestInfo): Fault {
  const fault = typeof script === 'function' ? script(n, info) : (script[n - 1] ?? 'pass');
  validateFault(fault, `fault for call ${n}`);
  return fault;
}

function assertLoopbackTarget(target: string): URL {
  const url = URL.parse(target);
  if (!url) throw new TypeError(`target is not a URL: ${JSON.stringify(target)}`);
  if (url.protocol !== 'http:') throw new TypeError(`target must be plain http on loopback, got ${url.protocol}`);
  if (!LOOPBACK.has(url.hostname))
    throw new TypeError(
      `target must be a loopback address (127.0.0.1), got ${url.hostname}: the drill never talks to live systems`,
    );
  return url;
}

/** The record of one request as the proxy saw it, before its fault is played. */
function requestEntry(
  n: number,
  info: FaultRequestInfo,
  recordHeaders: ReadonlySet<string>,
  body: Buffer,
  fault: Fault,
  label: string | undefined,
) {
  const recorded: Record<string, string> = {};
  for (const name of recordHeaders) {
    const v = info.headers[name];
    if (v !== undefined) recorded[name] = Array.isArray(v) ? v.join(', ') : v;
  }
  return {
    /** 1-based call number at this proxy. */
    n,
    method: info.method,
    /** Path and query. */
    path: info.path,
    /** `idempotency-key` plus the headers listed in `recordHeaders` (lower-case names). */
    headers: recorded as Readonly<Record<string, string>>,
    bodyHash: 'sha256:' + createHash('sha256').update(body).digest('hex'),
    bodyBytes: body.length,
    fault,
    /** Whether the request reached the upstream (a late commit is forwarded later, when it lands). */
    forwarded:
      typeof fault === 'string'
        ? fault !== 'reset-before'
        : fault.kind === 'status'
          ? fault.forward === true
          : fault.kind !== 'late-commit',
    /** Epoch ms the request arrived (complete body). */
    at: Date.now(),
    /** `proxy.label` when the request arrived. */
    ...(label !== undefined ? { label } : {}),
  };
}

/** One request as the proxy saw it; `clientGaveUp`, for a held request: the client's own timeout fired first. */
export type ProxyRequest = Readonly<
  ReturnType<typeof requestEntry> & { upstreamStatus?: number; clientGaveUp?: boolean }
>;

/** late-commit: requests held until their client gives up, then applied in arrival order once due (or on flush). */
function createLateQueue(clock: { now(): number }) {
  const held: { readonly dueAt: number; readonly apply: () => Promise<void> }[] = [];
  /** Requests still waiting for the client to give up: a flush ends that wait. */
  const holding = new Set<{ readonly stop: () => void; readonly queued: Promise<void> }>();
  async function applyDue(all: boolean): Promise<void> {
    if (all) {
      const waiting = [...holding];
      for (const w of waiting) w.stop();
      await Promise.all(waiting.map((w) => w.queued));
    }
    const now = clock.now();
    while (held.length > 0 && (all || held[0]!.dueAt <= now)) await held.shift()!.apply();
  }
  /** Holds the request; the client times out (or, if its timeout does not work, is reset after a long hold). */
  async function hold(
    req: IncomingMessage,
    afterMs: number,
    timers: Set<NodeJS.Timeout>,
    onGaveUp: (gaveUp: boolean) => void,
    apply: () => Promise<void>,
  ): Promise<void> {
    const arrivedAt = clock.now();
    let stop = () => {};
    const queued = holdUntilClientGivesUp(req, 30_000, timers, (end) => (stop = end)).then((gaveUp) => {
      onGaveUp(gaveUp);
      resetSocket(req.socket);
      holding.delete(entry);
      held.push({ dueAt: arrivedAt + afterMs, apply });
    });
    const entry = { stop: () => stop(), queued };
    holding.add(entry);
    await queued;
  }
  return { held, applyDue, hold };
}

// The HTTP plumbing: forwarding to the sandbox, relaying or cutting its answer, resets and holds.

/** Hop-by-hop headers that must not be relayed (RFC 9110 §7.6.1). */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'te',
  'trailer',
  'proxy-authorization',
  'proxy-authenticate',
]);

/** The headers worth relaying: neither hop-by-hop nor content-length (set anew), nor `also`. */
function endToEnd(from: IncomingHttpHeaders, also?: string): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(from))
    if (v !== undefined && !HOP_BY_HOP.has(k) && k !== 'content-length' && k !== also) headers[k] = v;
  return headers;
}

/** Resets the client's TCP connection (RST). */
function resetSocket(socket: Socket): void {
  if (!socket.destroyed) socket.resetAndDestroy();
}

type Upstream = { status: number; headers: IncomingHttpHeaders; body: Buffer };

/** Sends the request on to the sandbox and reads its whole answer. */
function forwardTo(
  up: { target: URL; basePath: string; agent: Agent },
  req: IncomingMessage,
  body: Buffer,
): Promise<Upstream> {
  const headers = endToEnd(req.headers, 'host');
  headers.host = up.target.host;
  headers['content-length'] = String(body.length);
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      {
        hostname: up.target.hostname.replace(/^\[|\]$/g, ''),
        port: up.target.port || 80,
        method: req.method,
        path: up.basePath + (req.url ?? '/'),
        headers,
        agent: up.agent,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 502, headers: res.headers, body: Buffer.concat(chunks) }),
        );
        res.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

function relay(res: ServerResponse, upstream: Upstream): void {
  const headers = endToEnd(upstream.headers);
  headers['content-length'] = String(upstream.body.length);
  res.writeHead(upstream.status, headers);
  res.end(upstream.body);
}

/** The fault's own answer (status, headers, body) in place of the provider's. */
function answerWithStatus(res: ServerResponse, fault: Extract<Fault, { kind: 'status' }>): void {
  const headers: Record<string, string> = { ...(fault.headers ?? {}) };
  if (fault.retryAfterS !== undefined) headers['retry-after'] = String(fault.retryAfterS);
  let payload = '';
  if (fault.body !== undefined) {
    payload = typeof fault.body === 'string' ? fault.body : JSON.stringify(fault.body);
    if (!Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) {
      headers['content-type'] = typeof fault.body === 'string' ? 'text/plain' : 'application/json';
    }
  }
  headers['content-length'] = String(Buffer.byteLength(payload));
  res.writeHead(fault.status, headers);
  res.end(payload);
}

function truncateResponse(req: IncomingMessage, res: ServerResponse, upstream: Upstream): void {
  if (req.socket.destroyed) return;
  const headers = endToEnd(upstream.headers);
  // A body is cut to its first half under its full content-length; an empty one is announced as a
  // chunked body that never ends (there is nothing to cut): either way the client cannot finish reading.
  if (upstream.body.length > 0) headers['content-length'] = String(upstream.body.length);
  res.writeHead(upstream.status, headers);
  res.write(upstream.body.subarray(0, Math.floor(upstream.body.length / 2)), () => resetSocket(req.socket));
}

/** Holds the request until its client gives up (true) or `ms` pass (false); `onStop` gets a way to end the hold early. */
function holdUntilClientGivesUp(
  req: IncomingMessage,
  ms: number,
  timers: Set<NodeJS.Timeout>,
  onStop?: (stop: () => void) => void,
): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    if (req.socket.destroyed) return resolve(true);
    const end = (gaveUp: boolean) => {
      clearTimeout(t);
      timers.delete(t);
      resolve(gaveUp);
    };
    const t = setTimeout(() => end(false), ms);
    timers.add(t);
    onStop?.(() => end(req.socket.destroyed));
    req.socket.once('close', () => end(true));
  });
}

/** A loopback server on a free port that keeps track of its sockets (close destroys them). */
async function listen(
  sockets: Set<Socket>,
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<Server> {
  const server = createServer(handler);
  server.keepAliveTimeout = 5_000;
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return server;
}

/**
 * Starts a loopback HTTP proxy between an SDK and a sandbox server that injects faults per request
 * and records every request. Real TCP: the SDK sees real resets, timeouts and status codes.
 */
export async function startFaultProxy(options: FaultProxyOptions) {
  const target = assertLoopbackTarget(options.target);
  const basePath = target.pathname.replace(/\/$/, '');
  let script: FaultScript = options.faults ?? [];
  validateScript(script);
  const recordHeaders = new Set(['idempotency-key', ...(options.recordHeaders ?? []).map((h) => h.toLowerCase())]);
  const requests: ProxyRequest[] = [];
  const waiters = new Set<{ count: number; resolve: () => void }>();
  const scriptErrors: string[] = [];
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  const upstreamAgent = new Agent({ keepAlive: true });
  const upstreamOf = { target, basePath, agent: upstreamAgent };
  let closed = false;
  const late = createLateQueue(options.clock ?? { now: () => Date.now() });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    // A late commit that is due lands before this request reaches the provider.
    await late.applyDue(false).catch(() => undefined);
    const n = ++calls;
    const info: FaultRequestInfo = { method: req.method ?? 'GET', path: req.url ?? '/', headers: req.headers };
    let fault: Fault;
    try {
      fault = pick(script, n, info);
    } catch (err) {
      // A broken script is the test author's bug: answer 500 with the reason and keep it for assertions.
      scriptErrors.push(`call ${n}: ${(err as Error).message}`);
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(`fault proxy: ${(err as Error).message}`);
      return;
    }
    const index = requests.length;
    requests.push(requestEntry(n, info, recordHeaders, body, fault, proxy.label));
    for (const w of waiters) {
      if (requests.length < w.count) continue;
      waiters.delete(w);
      w.resolve();
    }
    const note = (patch: Partial<ProxyRequest>) => {
      requests[index] = { ...requests[index]!, ...patch };
    };
    /** Forwards the request and notes the upstream's status; the error when the upstream failed. */
    const send = async (patch: Partial<ProxyRequest> = {}): Promise<Upstream | Error> => {
      try {
        const up = await forwardTo(upstreamOf, req, body);
        note({ ...patch, upstreamStatus: up.status });
        return up;
      } catch (err) {
        note({ forwarded: false });
        return err as Error;
      }
    };

    if (fault === 'reset-before') return resetSocket(req.socket);
    if (typeof fault === 'object' && fault.kind === 'status') {
      if (fault.forward === true) {
        await send();
        if (req.socket.destroyed) return;
      }
      return answerWithStatus(res, fault);
    }
    if (typeof fault === 'object' && fault.kind === 'late-commit') {
      const onGaveUp = (clientGaveUp: boolean) => note({ clientGaveUp });
      return late.hold(req, fault.afterMs, timers, onGaveUp, async () => {
        await send({ forwarded: true });
      });
    }
    const upstream = await send();
    if (upstream instanceof Error) {
      if (!res.headersSent && !req.socket.destroyed) {
        res.writeHead(502, { 'content-type': 'text/plain' });
        res.end(`fault proxy: upstream failed: ${upstream.message}`);
      }
      return;
    }
    if (fault === 'pass') {
      if (!req.socket.destroyed) relay(res, upstream);
      return;
    }
    if (fault === 'drop-response') return resetSocket(req.socket);
    if (fault === 'truncate-response') return truncateResponse(req, res, upstream);
    // delay: the provider committed; hold the answer past the client's timeout, then drop it.
    note({ clientGaveUp: await holdUntilClientGivesUp(req, fault.ms, timers) });
    resetSocket(req.socket);
  }

  let calls = 0;
  const server = await listen(sockets, (req, res) => {
    handle(req, res).catch(() => {
      if (!req.socket.destroyed) resetSocket(req.socket);
    });
  });
  const proxy = {
    /** `http://127.0.0.1:PORT` — point the SDK here. */
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    /** Every request seen, in arrival order. */
    requests: requests as readonly ProxyRequest[],
    /** Errors thrown by (or invalid faults returned from) a fault script; such calls were answered 500. */
    scriptErrors: scriptErrors as readonly string[],
    /** Replaces the fault script; call numbering continues. */
    setFaults(next: FaultScript): void {
      validateScript(next);
      script = next;
    },
    /** A label recorded on requests arriving from now on (the drill attributes requests to adapter calls with it). */
    label: undefined as string | undefined,
    /** Resolves once `count` requests have arrived (and been recorded). */
    waitForRequests(count: number): Promise<void> {
      if (requests.length >= count) return Promise.resolve();
      return new Promise((resolve) => waiters.add({ count, resolve }));
    },
    /** Lets the provider apply every request a `late-commit` still holds (before counting records). */
    flushLate: () => late.applyDue(true),
    /** Requests a `late-commit` holds right now (not yet applied). */
    get heldLate(): number {
      return late.held.length;
    },
    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      for (const t of timers) clearTimeout(t);
      timers.clear();
      for (const s of sockets) s.destroy();
      upstreamAgent.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return proxy;
}

export type FaultProxy = Awaited<ReturnType<typeof startFaultProxy>>;
