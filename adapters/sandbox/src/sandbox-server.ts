import { type LoopbackRequest, parseJsonBody, type SandboxReply, startLoopbackServer } from '@retrysafe/sandbox-kit';
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

const retryAfter = (ms: number) => String(Math.max(0, Math.ceil(ms / 1000)));
const reply = (status: number, body: unknown, headers?: Record<string, string>): SandboxReply =>
  headers ? { status, body, headers } : { status, body };
const error = (status: number, code: string, message: string, headers?: Record<string, string>) =>
  reply(status, { error: { code, message } }, headers);

/**
 * Serves a sandbox provider over loopback HTTP, the way an IETF Idempotency-Key API does:
 * `POST /records` (key in `Idempotency-Key`) → 201 (replays carry `Idempotent-Replayed: true`),
 * 202 + Location while processing, 409 in progress, 422 key reused with other params, 400 invalid,
 * 429 + Retry-After, 500/503. `GET /records?key=` looks a record up by key (300 when several hold it); `GET /records/:id` reads one;
 * `GET /_sandbox/count` returns `{ count }` for drills running in other processes.
 * The loopback scaffold (host check, body reading, JSON replies, close) is the sandbox kit's.
 */
export async function startSandboxServer(options: SandboxServerOptions): Promise<SandboxServer> {
  const provider = options.provider;
  let requestNo = 0;
  const ids = new WeakMap<LoopbackRequest, string>();

  async function handle(req: LoopbackRequest): Promise<SandboxReply> {
    ids.set(req, `req_${++requestNo}`);
    const path = req.path.replace(/\/+$/, '') || '/';
    if (req.method === 'POST' && path === '/records') {
      const body = parseJsonBody(req.rawBody);
      if (!body.ok) return error(400, 'invalid_json', 'body is not JSON');
      const keyHeader = req.headers['idempotency-key'];
      const key = typeof keyHeader === 'string' && keyHeader.length > 0 ? keyHeader : null;
      const r = await provider.execute({ key, params: body.value ?? null });
      switch (r.type) {
        case 'created':
          return reply(201, { record: r.record });
        case 'replayed':
          return reply(201, { record: r.record }, { 'idempotent-replayed': 'true' });
        case 'accepted':
          return reply(
            202,
            { record: r.record },
            { location: `/records/${r.record.id}`, 'retry-after': retryAfter(r.retryAfterMs) },
          );
        case 'in-progress':
          return error(409, 'idempotency_key_in_use', 'a request with this key is still processing', {
            'retry-after': retryAfter(r.retryAfterMs),
          });
        case 'mismatch':
          return error(422, 'idempotency_key_mismatch', r.message);
        case 'rejected':
          return error(400, 'invalid_request', r.message);
        case 'throttled':
          return error(429, 'rate_limited', 'too many requests', { 'retry-after': retryAfter(r.retryAfterMs) });
        case 'server-error':
          return error(r.status, 'server_error', 'internal error');
      }
    }
    if (req.method === 'GET' && path === '/records') {
      const key = req.query.get('key');
      if (provider.behaviour.lookup === 'none') return error(501, 'no_lookup', 'lookup by key is not offered');
      if (!key) return error(400, 'missing_key', 'key query parameter required');
      const answer = provider.answerLookup(key);
      if (answer.type === 'unavailable')
        return error(503, 'unavailable', 'try again later', { 'retry-after': retryAfter(answer.retryAfterMs) });
      if (answer.type === 'several') return reply(300, { records: answer.records });
      return answer.type === 'found'
        ? reply(200, { record: answer.record })
        : error(404, 'not_found', 'no record with this key');
    }
    const m = /^\/records\/([A-Za-z0-9_]+)$/.exec(path);
    if (req.method === 'GET' && m) {
      const rec: SandboxRecord | undefined = provider.records().find((r) => r.id === m[1]);
      return rec ? reply(200, { record: rec }) : error(404, 'not_found', 'no such record');
    }
    if (req.method === 'GET' && path === '/_sandbox/count')
      return reply(200, { count: provider.count(), calls: provider.calls() });
    return error(404, 'no_route', `${req.method} ${path}`);
  }

  const server = await startLoopbackServer({
    port: options.port,
    host: options.host,
    handle,
    headers: (req) => ({ 'x-request-id': ids.get(req) ?? `req_${++requestNo}` }),
    trailingSlash: true,
  });
  return { url: server.url, port: server.port, provider, close: () => server.close() };
}
