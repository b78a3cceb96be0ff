import { createHash } from 'node:crypto';
import { EventEmitter, once } from 'node:events';
import { Agent, createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { buffer } from 'node:stream/consumers';
import type { DrillFault } from '@retrysafe/contract';
import { loopTurns } from './drill-clock.js';

/** The contract's `DrillFault`, or `'truncate-response'`: status, headers and half the body, then a reset. */
export type Fault = DrillFault | 'truncate-response';

export type FaultRequestInfo = Readonly<{ method: string; path: string; headers: IncomingMessage['headers'] }>;

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
const FIELD_RULES: Record<string, Record<string, [ok: (v: unknown) => boolean, want: string]>> = {
  delay: { ms: [isMs, 'ms >= 0'] },
  'late-commit': { afterMs: [isMs, 'afterMs >= 0'] },
  status: {
    status: [isStatus, 'an HTTP status 100–599'],
    retryAfterS: [(v) => v === undefined || isMs(v), 'retryAfterS >= 0'],
  },
};

/** Every fault the proxy takes, written from the lists above so the refusal cannot leave one out. */
const FAULT_SHAPES = [
  ...SIMPLE_FAULTS.map((f) => `'${f}'`),
  ...Object.entries(FIELD_RULES).map(([kind, rules]) => `{ kind: '${kind}', ${Object.keys(rules).join(', ')} }`),
].join(' | ');

/** A script is the caller's code: a bad fault is a TypeError naming the problem. */
function validateFault(fault: unknown, where = 'fault'): asserts fault is Fault {
  if (SIMPLE_FAULTS.includes(fault)) return;
  const f = (typeof fault === 'object' && fault !== null ? fault : {}) as Record<string, unknown>;
  const rules = typeof f.kind === 'string' && Object.hasOwn(FIELD_RULES, f.kind) ? FIELD_RULES[f.kind] : undefined;
  if (!rules) throw new TypeError(`${where}: expected ${FAULT_SHAPES}, got ${JSON.stringify(fault)}`);
  for (const [field, [ok, want]] of Object.entries(rules))
    if (!ok(f[field])) throw new TypeError(`${where}: ${f.kind} needs ${want}, got ${JSON.stringify(f[field])}`);
}

function validateScript(script: FaultScript): FaultScript {
  if (typeof script !== 'function')
    for (const [i, f] of script.entries()) validateFault(f, `faults[${i}] (call ${i + 1})`);
  return script;
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
function requestEntry(n: number, info: FaultRequestInfo, body: Buffer, fault: Fault, keep: ReadonlySet<string>) {
  const recorded: Record<string, string> = {};
  for (const name of keep) {
    const v = info.headers[name];
    if (v !== undefined) recorded[name] = Array.isArray(v) ? v.join(', ') : v;
  }
  return {
    /** 1-based call number at this proxy. */
    n,
    method: info.method,
    path: info.path,
    /** `idempotency-key` plus `recordHeaders` (lower-case names). */
    headers: recorded as Readonly<Record<string, string>>,
    bodyHash: 'sha256:' + createHash('sha256').update(body).digest('hex'),
    bodyBytes: body.length,
    fault,
    /** Whether the request reached the upstream (a late commit is forwarded later, when it lands). */
    forwarded:
      typeof fault === 'string'
        ? fault !== 'reset-before'
        : fault.kind === 'delay' || (fault.kind === 'status' && fault.forward === true),
    at: Date.now(),
  };
}

/** One request as the proxy saw it, with `proxy.label` when it arrived; `clientGaveUp`: a held request's client timed out first. */
export type ProxyRequest = Readonly<
  ReturnType<typeof requestEntry> & { label?: string; upstreamStatus?: number; clientGaveUp?: boolean }
>;

/** late-commit: requests held until their client gives up, then applied in arrival order once due (or on flush). */
function createLateQueue(clock: { now(): number }) {
  const held: { readonly dueAt: number; readonly apply: () => Promise<unknown> }[] = [];
  /** Holds still waiting for their client to give up (a flush ends them), and their follow-ups. */
  const holds = new Set<() => void>();
  const queued = new Set<Promise<boolean>>();
  async function applyDue(all: boolean): Promise<void> {
    if (all) {
      for (const stop of [...holds]) stop();
      await Promise.all(queued);
    }
    const now = clock.now();
    while (held.length > 0 && (all || held[0]!.dueAt <= now)) await held.shift()!.apply();
  }
  /** The client times out (or, if its timeout does not work, is reset after a long hold); then it is queued. */
  function hold(req: IncomingMessage, afterMs: number, apply: () => Promise<unknown>): Promise<boolean> {
    const dueAt = clock.now() + afterMs;
    const q = holdUntilClientGivesUp(req, 30_000, holds).then((gaveUp) => {
      resetSocket(req.socket);
      queued.delete(q);
      held.push({ dueAt, apply });
      return gaveUp;
    });
    queued.add(q);
    return q;
  }
  return { held, applyDue, hold };
}

/** Hop-by-hop headers that must not be relayed (RFC 9110 §7.6.1). */
const HOP_BY_HOP = new Set(
  'connection keep-alive proxy-connection transfer-encoding upgrade te trailer proxy-authorization proxy-authenticate'.split(
    ' ',
  ),
);

/** The headers worth relaying: neither hop-by-hop nor content-length (set anew). */
function endToEnd(from: IncomingMessage['headers']): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(from))
    if (v !== undefined && !HOP_BY_HOP.has(k) && k !== 'content-length') headers[k] = v;
  return headers;
}

function resetSocket(socket: Socket): void {
  if (!socket.destroyed) socket.resetAndDestroy();
}

type Upstream = { status: number; headers: IncomingMessage['headers']; body: Buffer };

async function forwardTo(target: URL, agent: Agent, req: IncomingMessage, body: Buffer): Promise<Upstream> {
  const headers = endToEnd(req.headers);
  headers.host = target.host;
  headers['content-length'] = String(body.length);
  const request = httpRequest({
    hostname: target.hostname.replace(/^\[|\]$/g, ''),
    port: target.port || 80,
    method: req.method,
    path: target.pathname.replace(/\/$/, '') + (req.url ?? '/'),
    headers,
    agent,
  });
  request.on('error', () => {}); // before the response, `once` rejects with it; after, the body read does
  request.end(body);
  const [res] = (await once(request, 'response')) as [IncomingMessage];
  return { status: res.statusCode ?? 502, headers: res.headers, body: await buffer(res) };
}

/** The provider's answer; `truncated`: half the body under its full length, then a reset (an empty body never ends). */
function relay(req: IncomingMessage, res: ServerResponse, up: Upstream, truncated: boolean): void {
  if (req.socket.destroyed) return;
  const headers = endToEnd(up.headers);
  if (!truncated || up.body.length > 0) headers['content-length'] = String(up.body.length);
  res.writeHead(up.status, headers);
  if (!truncated) res.end(up.body);
  else res.write(up.body.subarray(0, Math.floor(up.body.length / 2)), () => resetSocket(req.socket));
}

/** The fault's own answer (status, headers, body) in place of the provider's. */
function answerWithStatus(res: ServerResponse, fault: Extract<Fault, { kind: 'status' }>): void {
  // Lower-case names: the fault's own Retry-After and length replace a header of that name instead of doubling it.
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(fault.headers ?? {})) headers[name.toLowerCase()] = value;
  if (fault.retryAfterS !== undefined) headers['retry-after'] = String(fault.retryAfterS);
  let payload = '';
  if (fault.body !== undefined) {
    payload = typeof fault.body === 'string' ? fault.body : JSON.stringify(fault.body);
    headers['content-type'] ??= typeof fault.body === 'string' ? 'text/plain' : 'application/json';
  }
  headers['content-length'] = String(Buffer.byteLength(payload));
  res.writeHead(fault.status, headers);
  res.end(payload);
}

/** Holds the request until its client gives up (true) or `ms` pass (false); `holds` gets a way to end it early. */
function holdUntilClientGivesUp(req: IncomingMessage, ms: number, holds?: Set<() => void>): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    if (req.socket.destroyed) return resolve(true);
    const end = (gaveUp: boolean) => {
      clearTimeout(t);
      holds?.delete(stop);
      resolve(gaveUp);
    };
    const stop = () => end(req.socket.destroyed);
    // A stalled process fires the client's timeout and this one in one pass; the client's close is I/O, read later.
    const t = setTimeout(() => void loopTurns().then(() => end(false)), ms);
    holds?.add(stop);
    req.socket.once('close', () => end(true));
  });
}

/** A loopback HTTP proxy between an SDK and a sandbox: a fault per request over real TCP, every request recorded. */
export async function startFaultProxy(options: FaultProxyOptions) {
  const target = assertLoopbackTarget(options.target);
  let script = validateScript(options.faults ?? []);
  const recordHeaders = new Set(['idempotency-key', ...(options.recordHeaders ?? []).map((h) => h.toLowerCase())]);
  const requests: ProxyRequest[] = [];
  const arrivals = new EventEmitter();
  const scriptErrors: string[] = [];
  const upstreamAgent = new Agent({ keepAlive: true });
  let closed = false;
  const late = createLateQueue(options.clock ?? { now: () => Date.now() });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await buffer(req);
    // A late commit that is due lands before this request reaches the provider.
    await late.applyDue(false).catch(() => undefined);
    const n = ++calls;
    const info: FaultRequestInfo = { method: req.method ?? 'GET', path: req.url ?? '/', headers: req.headers };
    let fault: Fault;
    try {
      fault = typeof script === 'function' ? script(n, info) : (script[n - 1] ?? 'pass');
      validateFault(fault, `fault for call ${n}`);
    } catch (err) {
      // A broken script is the test author's bug: answer 500 with the reason and keep it for assertions.
      scriptErrors.push(`call ${n}: ${(err as Error).message}`);
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(`fault proxy: ${(err as Error).message}`);
      return;
    }
    const index = requests.length;
    const { label } = proxy;
    requests.push({ ...requestEntry(n, info, body, fault, recordHeaders), ...(label !== undefined ? { label } : {}) });
    arrivals.emit('request');
    const note = (patch: Partial<ProxyRequest>) => {
      requests[index] = { ...requests[index]!, ...patch };
    };
    /** Forwards the request and notes the upstream's status; the error when the upstream failed. */
    const send = async (): Promise<Upstream | Error> => {
      try {
        const up = await forwardTo(target, upstreamAgent, req, body);
        note({ forwarded: true, upstreamStatus: up.status });
        return up;
      } catch (err) {
        note({ forwarded: false });
        return err as Error;
      }
    };

    if (fault === 'reset-before') return resetSocket(req.socket);
    if (typeof fault === 'object' && fault.kind === 'status') {
      if (fault.forward === true) await send();
      if (!req.socket.destroyed) answerWithStatus(res, fault);
      return;
    }
    if (typeof fault === 'object' && fault.kind === 'late-commit')
      return note({ clientGaveUp: await late.hold(req, fault.afterMs, send) });
    const upstream = await send();
    if (upstream instanceof Error) {
      if (!res.headersSent && !req.socket.destroyed) {
        res.writeHead(502, { 'content-type': 'text/plain' });
        res.end(`fault proxy: upstream failed: ${upstream.message}`);
      }
      return;
    }
    if (fault === 'pass' || fault === 'truncate-response')
      return relay(req, res, upstream, fault === 'truncate-response');
    if (fault === 'drop-response') return resetSocket(req.socket);
    // delay: the provider committed; hold the answer past the client's timeout, then drop it.
    note({ clientGaveUp: await holdUntilClientGivesUp(req, fault.ms) });
    resetSocket(req.socket);
  }

  let calls = 0;
  const server = createServer((req, res) => {
    handle(req, res).catch(() => resetSocket(req.socket));
  });
  server.keepAliveTimeout = 5_000;
  await once(server.listen(0, '127.0.0.1'), 'listening');
  const proxy = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests: requests as readonly ProxyRequest[],
    /** Errors thrown by (or invalid faults returned from) a fault script; such calls were answered 500. */
    scriptErrors: scriptErrors as readonly string[],
    /** Replaces the fault script; call numbering continues. */
    setFaults(next: FaultScript): void {
      script = validateScript(next);
    },
    /** A label recorded on requests arriving from now on (the drill attributes requests to adapter calls with it). */
    label: undefined as string | undefined,
    /** Resolves once `count` requests have arrived (and been recorded); rejects if they have not within `timeoutMs`. */
    async waitForRequests(count: number, timeoutMs = 10_000): Promise<void> {
      const signal = AbortSignal.timeout(timeoutMs);
      try {
        while (requests.length < count) await once(arrivals, 'request', { signal });
      } catch (e) {
        if (!signal.aborted) throw e;
        // A stalled process fires the timeout before it reads the requests that reached it meanwhile.
        await loopTurns();
        if (requests.length >= count) return;
        throw new Error(`fault proxy: ${requests.length} of ${count} requests within ${timeoutMs} ms`);
      }
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
      server.closeAllConnections(); // a held request's client is gone: its hold ends
      upstreamAgent.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return proxy;
}

export type FaultProxy = Awaited<ReturnType<typeof startFaultProxy>>;
