import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** One answer: `body` is sent as JSON (nothing when undefined). */
export interface SandboxReply {
  readonly status: number;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: unknown;
}

/** One request, body read in full. */
export interface LoopbackRequest {
  /** As sent (the server does not change its case). */
  readonly method: string;
  /** Path without the query. */
  readonly path: string;
  readonly query: URLSearchParams;
  /** The query string with its `?`, '' when none. */
  readonly search: string;
  readonly headers: IncomingHttpHeaders;
  readonly rawBody: string;
  /** The raw exchange, for the rare answer that is not a reply (a sandbox that holds an answer past a timeout). */
  readonly raw: { readonly req: IncomingMessage; readonly res: ServerResponse };
}

/** Returned by a handler that wrote (or deliberately did not write) the response itself. */
export const ANSWERED: unique symbol = Symbol('retrysafe.sandbox.answered');

export type LoopbackHandler = (
  req: LoopbackRequest,
) => SandboxReply | typeof ANSWERED | Promise<SandboxReply | typeof ANSWERED>;

export interface LoopbackServerOptions {
  /** 0 (default) picks a free port. */
  readonly port?: number;
  /** Loopback only: 127.0.0.1 (default), ::1 or localhost. */
  readonly host?: string;
  readonly handle: LoopbackHandler;
  /** The answer when the handler throws (a sandbox bug). Default 500 `{ error: { code: 'sandbox_bug', message } }`. */
  readonly onError?: (err: unknown, req: LoopbackRequest) => SandboxReply;
  /** Headers every reply carries unless the reply sets them (request ids, versions). */
  readonly headers?: (req: LoopbackRequest, reply: SandboxReply) => Record<string, string>;
  /** Content type of JSON bodies (default `application/json`). */
  readonly contentType?: string;
  /** Called with each reply just before it is written (request logs). */
  readonly onReply?: (req: LoopbackRequest, reply: SandboxReply) => void;
  /** Append `/` to `url` (a client that joins paths onto a root). Default false. */
  readonly trailingSlash?: boolean;
  /** Node's keep-alive timeout for idle connections. Default 1000 ms. */
  readonly keepAliveTimeoutMs?: number;
}

export interface LoopbackServer {
  /** `http://127.0.0.1:PORT` (with `/` when `trailingSlash`). */
  readonly url: string;
  readonly port: number;
  /** Stops listening and drops every open connection (also ones waiting on an answer). */
  close(): Promise<void>;
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

/** Writes a reply: JSON body with its content type, a content-length always. */
export function writeReply(res: ServerResponse, reply: SandboxReply, contentType = 'application/json'): void {
  const headers: Record<string, string> = { ...(reply.headers ?? {}) };
  let payload = '';
  if (reply.body !== undefined) {
    payload = JSON.stringify(reply.body);
    if (!Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) headers['content-type'] = contentType;
  }
  // A 204 or 304 has no body and no content-length (RFC 9110 §8.6).
  if (reply.status !== 204 && reply.status !== 304) headers['content-length'] = String(Buffer.byteLength(payload));
  res.writeHead(reply.status, headers).end(payload);
}

/**
 * A loopback HTTP server for a sandbox provider: reads each body in full, lets the handler run to
 * completion (the "commit") and only then writes its reply, so a fault proxy that drops the reply
 * leaves the effect in place — the case drills test.
 */
export async function startLoopbackServer(options: LoopbackServerOptions): Promise<LoopbackServer> {
  const host = options.host ?? '127.0.0.1';
  if (!LOOPBACK.has(host))
    throw new TypeError(`sandbox server: host must be loopback (127.0.0.1, ::1, localhost), got ${host}`);
  const sockets = new Set<Socket>();
  const onError =
    options.onError ??
    ((err: unknown) => ({
      status: 500,
      body: { error: { code: 'sandbox_bug', message: String((err as Error)?.message ?? err) } },
    }));

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const u = new URL(req.url ?? '/', 'http://127.0.0.1');
    const view: LoopbackRequest = {
      method: req.method ?? 'GET',
      path: u.pathname,
      query: u.searchParams,
      search: u.search,
      headers: req.headers,
      rawBody: Buffer.concat(chunks).toString('utf8'),
      raw: { req, res },
    };
    let reply: SandboxReply | typeof ANSWERED;
    try {
      reply = await options.handle(view);
    } catch (err) {
      reply = onError(err, view);
    }
    if (reply === ANSWERED) return;
    if (options.headers) reply = { ...reply, headers: { ...options.headers(view, reply), ...(reply.headers ?? {}) } };
    options.onReply?.(view, reply);
    if (res.destroyed || req.socket.destroyed || res.headersSent) return;
    writeReply(res, reply, options.contentType);
  }

  const server = createServer((req, res) => {
    serve(req, res).catch(() => {
      if (!res.headersSent && !res.destroyed)
        writeReply(res, { status: 500, body: { error: { code: 'sandbox_bug', message: 'unreadable request' } } });
      else res.destroy();
    });
  });
  server.keepAliveTimeout = options.keepAliveTimeoutMs ?? 1000;
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const hostInUrl = host.includes(':') ? `[${host}]` : host;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${hostInUrl}:${port}${options.trailingSlash ? '/' : ''}`,
    port,
    // Idempotent: a second close waits for the first.
    close: () =>
      (closing ??= new Promise<void>((resolve, reject) => {
        server.close((e) => (e ? reject(e) : resolve()));
        for (const s of sockets) s.destroy();
      })),
  };
}

/** A JSON body: `{ ok: true, value }` (value undefined for an empty body) or `{ ok: false }` when it is not JSON. */
export function parseJsonBody(raw: string): { readonly ok: true; readonly value: unknown } | { readonly ok: false } {
  if (raw.length === 0) return { ok: true, value: undefined };
  try {
    return { ok: true, value: JSON.parse(raw) as unknown };
  } catch {
    return { ok: false };
  }
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** One route: a method and a path pattern; a RegExp's groups reach the handler. */
export interface Route<C, Q = LoopbackRequest> {
  readonly method: string;
  readonly path: string | RegExp;
  readonly handle: (req: Q, match: RegExpExecArray | null) => C;
}

/** The first route whose method and path match, with its handler's result; undefined when none does. */
export function routeRequest<C, Q extends { readonly method: string; readonly path: string } = LoopbackRequest>(
  routes: readonly Route<C, Q>[],
  req: Q,
): { readonly value: C } | undefined {
  for (const r of routes) {
    if (r.method !== req.method) continue;
    if (typeof r.path === 'string') {
      if (r.path === req.path) return { value: r.handle(req, null) };
      continue;
    }
    const m = r.path.exec(req.path);
    if (m) return { value: r.handle(req, m) };
  }
  return undefined;
}
