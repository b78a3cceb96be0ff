import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { SandboxProvider, SandboxRecord } from './sandbox-provider.js';

export interface SandboxServerOptions {
  readonly provider: SandboxProvider;
  /** 0 (default) picks a free port. */
  readonly port?: number;
  /** Loopback only; default 127.0.0.1. */
  readonly host?: string;
}

export interface SandboxServer {
  /** Base URL ending in `/`, e.g. `http://127.0.0.1:41234/`. */
  readonly url: string;
  readonly port: number;
  readonly provider: SandboxProvider;
  close(): Promise<void>;
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

const retryAfter = (ms: number) => String(Math.max(0, Math.ceil(ms / 1000)));

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Serves a sandbox provider over loopback HTTP, the way an IETF Idempotency-Key API does:
 * `POST /records` (key in `Idempotency-Key`) → 201 (replays carry `Idempotent-Replayed: true`),
 * 202 + Location while processing, 409 in progress, 422 key reused with other params, 400 invalid,
 * 429 + Retry-After, 500/503. `GET /records?key=` looks a record up by key; `GET /records/:id` reads one;
 * `GET /_sandbox/count` returns `{ count }` for drills running in other processes.
 */
export async function startSandboxServer(options: SandboxServerOptions): Promise<SandboxServer> {
  const host = options.host ?? '127.0.0.1';
  if (!LOOPBACK.has(host)) throw new TypeError(`sandbox server: host must be loopback (127.0.0.1, ::1, localhost), got ${host}`);
  const provider = options.provider;
  let requestNo = 0;
  const server = createServer((req, res) => {
    const requestId = `req_${++requestNo}`;
    res.setHeader('x-request-id', requestId);
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) send(res, 500, { error: { code: 'sandbox_bug', message: String((err as Error)?.message ?? err) } });
      else res.destroy();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const u = new URL(req.url ?? '/', 'http://sandbox');
    const path = u.pathname.replace(/\/+$/, '') || '/';
    if (req.method === 'POST' && path === '/records') {
      const raw = await readBody(req);
      let params: unknown;
      try {
        params = raw ? JSON.parse(raw) : null;
      } catch {
        return send(res, 400, { error: { code: 'invalid_json', message: 'body is not JSON' } });
      }
      const keyHeader = req.headers['idempotency-key'];
      const key = typeof keyHeader === 'string' && keyHeader.length > 0 ? keyHeader : null;
      const r = await provider.execute({ key, params });
      switch (r.type) {
        case 'created':
          return send(res, 201, { record: r.record });
        case 'replayed':
          return send(res, 201, { record: r.record }, { 'idempotent-replayed': 'true' });
        case 'accepted':
          return send(res, 202, { record: r.record }, { location: `/records/${r.record.id}`, 'retry-after': retryAfter(r.retryAfterMs) });
        case 'in-progress':
          return send(res, 409, { error: { code: 'idempotency_key_in_use', message: 'a request with this key is still processing' } }, { 'retry-after': retryAfter(r.retryAfterMs) });
        case 'mismatch':
          return send(res, 422, { error: { code: 'idempotency_key_mismatch', message: r.message } });
        case 'rejected':
          return send(res, 400, { error: { code: 'invalid_request', message: r.message } });
        case 'throttled':
          return send(res, 429, { error: { code: 'rate_limited', message: 'too many requests' } }, { 'retry-after': retryAfter(r.retryAfterMs) });
        case 'server-error':
          return send(res, r.status, { error: { code: 'server_error', message: 'internal error' } });
      }
    }
    if (req.method === 'GET' && path === '/records') {
      const key = u.searchParams.get('key');
      if (provider.behaviour.lookup === 'none') return send(res, 501, { error: { code: 'no_lookup', message: 'lookup by key is not offered' } });
      if (!key) return send(res, 400, { error: { code: 'missing_key', message: 'key query parameter required' } });
      const answer = provider.answerLookup(key);
      if (answer.type === 'unavailable') return send(res, 503, { error: { code: 'unavailable', message: 'try again later' } }, { 'retry-after': retryAfter(answer.retryAfterMs) });
      return answer.type === 'found' ? send(res, 200, { record: answer.record }) : send(res, 404, { error: { code: 'not_found', message: 'no record with this key' } });
    }
    const m = /^\/records\/([A-Za-z0-9_]+)$/.exec(path);
    if (req.method === 'GET' && m) {
      const rec: SandboxRecord | undefined = provider.records().find((r) => r.id === m[1]);
      return rec ? send(res, 200, { record: rec }) : send(res, 404, { error: { code: 'not_found', message: 'no such record' } });
    }
    if (req.method === 'GET' && path === '/_sandbox/count') return send(res, 200, { count: provider.count(), calls: provider.calls() });
    return send(res, 404, { error: { code: 'no_route', message: `${req.method} ${path}` } });
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const hostInUrl = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${hostInUrl}:${port}/`,
    port,
    provider,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      }),
  };
}
