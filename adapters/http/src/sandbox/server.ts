import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { canonicalJson, sha256Hex } from '@retrysafe/contract';

/** One request as the sandbox saw it (idempotency-related headers only; no auth, no bodies). */
export interface SandboxRequest {
  readonly n: number;
  readonly method: string;
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly status: number;
}

export interface SandboxRequestView {
  readonly method: string;
  readonly path: string;
  readonly query: URLSearchParams;
  readonly headers: http.IncomingHttpHeaders;
  readonly rawBody: string;
}

export interface SandboxReply {
  readonly status: number;
  readonly headers?: Record<string, string>;
  readonly body?: unknown;
}

export interface StartedServer {
  readonly url: string;
  readonly requests: readonly SandboxRequest[];
  close(): Promise<void>;
}

const LOGGED_HEADERS = ['idempotency-key', 'if-match', 'if-none-match', 'content-type'];

/**
 * A loopback JSON server. Every handler runs to completion (the "commit") before the reply is
 * written, so a fault proxy that drops the reply leaves the effect in place — the case the drill tests.
 */
export async function startJsonServer(port: number, handle: (req: SandboxRequestView) => Promise<SandboxReply> | SandboxReply): Promise<StartedServer> {
  const requests: SandboxRequest[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const u = new URL(req.url ?? '/', 'http://127.0.0.1');
      const view: SandboxRequestView = { method: req.method ?? 'GET', path: u.pathname, query: u.searchParams, headers: req.headers, rawBody: Buffer.concat(chunks).toString('utf8') };
      Promise.resolve()
        .then(() => handle(view))
        .catch((err: unknown): SandboxReply => ({ status: 500, body: { error: { code: 'SandboxFailure', message: String((err as Error)?.message ?? err) } } }))
        .then((reply) => {
          const logged: Record<string, string> = {};
          for (const h of LOGGED_HEADERS) if (typeof req.headers[h] === 'string') logged[h] = req.headers[h] as string;
          requests.push({ n: requests.length + 1, method: view.method, path: u.pathname + u.search, headers: logged, status: reply.status });
          const headers: Record<string, string> = { ...(reply.headers ?? {}) };
          let payload = '';
          if (reply.body !== undefined) {
            payload = JSON.stringify(reply.body);
            headers['content-type'] ??= 'application/json';
          }
          headers['content-length'] = String(Buffer.byteLength(payload));
          if (!res.destroyed) res.writeHead(reply.status, headers).end(payload);
        });
    });
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const addr = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${addr.port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Parses a JSON body; undefined when it is not JSON. */
export function parseJson(raw: string): unknown {
  if (raw.length === 0) return undefined;
  try {
    return JSON.parse(raw);
  } catch {
    return undefined;
  }
}

/** The server-side payload fingerprint: independent of key order and whitespace. */
export function payloadFingerprint(body: unknown): string {
  try {
    return sha256Hex(canonicalJson(body ?? null));
  } catch {
    return sha256Hex(String(body));
  }
}

/** A clock the tests can move forward (retention expiry) without waiting; `base` is e.g. the drill's virtual clock. */
export function sandboxClock(base?: { now(): number }) {
  let offset = 0;
  const source = base ?? Date;
  return {
    now: () => source.now() + offset,
    advance: (ms: number) => {
      offset += ms;
    },
  };
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Resolves a record kind: the sandbox's kind or one of its operation names; anything else is a test bug. */
export function kindCounter(kinds: Readonly<Record<string, () => number>>) {
  return (kind?: string): number => {
    if (kind === undefined) {
      const first = Object.values(kinds)[0];
      return first ? first() : 0;
    }
    const bare = kind.includes('.') ? kind.split('.').slice(-2).join('.') : kind;
    const f = kinds[kind] ?? kinds[bare];
    if (!f) throw new Error(`this sandbox holds no records of kind ${JSON.stringify(kind)} (known: ${Object.keys(kinds).join(', ')})`);
    return f();
  };
}
