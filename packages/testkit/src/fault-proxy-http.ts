// The fault proxy's HTTP plumbing: forwarding to the sandbox, relaying or cutting its answer, resets and holds.

import {
  type Agent,
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { Socket } from 'node:net';
import type { Fault } from './fault-proxy.js';

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
export function resetSocket(socket: Socket): void {
  if (!socket.destroyed) socket.resetAndDestroy();
}

export type Upstream = { status: number; headers: IncomingHttpHeaders; body: Buffer };

/** Sends the request on to the sandbox and reads its whole answer. */
export function forwardTo(
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

export function relay(res: ServerResponse, upstream: Upstream): void {
  const headers = endToEnd(upstream.headers);
  headers['content-length'] = String(upstream.body.length);
  res.writeHead(upstream.status, headers);
  res.end(upstream.body);
}

/** The fault's own answer (status, headers, body) in place of the provider's. */
export function answerWithStatus(res: ServerResponse, fault: Extract<Fault, { kind: 'status' }>): void {
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

export function truncateResponse(req: IncomingMessage, res: ServerResponse, upstream: Upstream): void {
  if (req.socket.destroyed) return;
  const headers = endToEnd(upstream.headers);
  // A body is cut to its first half under its full content-length; an empty one is announced as a
  // chunked body that never ends (there is nothing to cut): either way the client cannot finish reading.
  if (upstream.body.length > 0) headers['content-length'] = String(upstream.body.length);
  res.writeHead(upstream.status, headers);
  res.write(upstream.body.subarray(0, Math.floor(upstream.body.length / 2)), () => resetSocket(req.socket));
}

/** Holds the request until its client gives up (true) or `ms` pass (false); `onStop` gets a way to end the hold early. */
export function holdUntilClientGivesUp(
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
export async function listen(
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
