import type { IncomingHttpHeaders } from 'node:http';
import { canonicalJson, sha256Hex } from '@retrysafe/contract';
import { parseJsonBody, type SandboxReply, startLoopbackServer } from '@retrysafe/sandbox-kit';

export { createSandboxClock as sandboxClock, isPlainObject } from '@retrysafe/sandbox-kit';
export type { SandboxReply };

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
  readonly headers: IncomingHttpHeaders;
  readonly rawBody: string;
}

export interface StartedServer {
  readonly url: string;
  readonly requests: readonly SandboxRequest[];
  close(): Promise<void>;
}

const LOGGED_HEADERS = ['idempotency-key', 'if-match', 'if-none-match', 'content-type'];

/**
 * The pattern sandboxes' loopback JSON server (the sandbox kit, @retrysafe/sandbox-kit), logging the
 * idempotency-related headers of every request. Every handler runs to completion (the "commit")
 * before the reply is written, so a fault proxy that drops the reply leaves the effect in place.
 */
export async function startJsonServer(
  port: number,
  handle: (req: SandboxRequestView) => Promise<SandboxReply> | SandboxReply,
): Promise<StartedServer> {
  const requests: SandboxRequest[] = [];
  const server = await startLoopbackServer({
    port,
    handle,
    onError: (err) => ({
      status: 500,
      body: { error: { code: 'SandboxFailure', message: String((err as Error)?.message ?? err) } },
    }),
    onReply: (req, reply) => {
      const logged: Record<string, string> = {};
      for (const h of LOGGED_HEADERS) if (typeof req.headers[h] === 'string') logged[h] = req.headers[h] as string;
      requests.push({
        n: requests.length + 1,
        method: req.method,
        path: req.path + req.search,
        headers: logged,
        status: reply.status,
      });
    },
  });
  return { url: server.url, requests, close: server.close };
}

/** Parses a JSON body; undefined when it is not JSON. */
export function parseJson(raw: string): unknown {
  const parsed = parseJsonBody(raw);
  return parsed.ok ? parsed.value : undefined;
}

/** The server-side payload fingerprint: independent of key order and whitespace. */
export function payloadFingerprint(body: unknown): string {
  try {
    return sha256Hex(canonicalJson(body ?? null));
  } catch {
    return sha256Hex(String(body));
  }
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
    if (!f)
      throw new Error(
        `this sandbox holds no records of kind ${JSON.stringify(kind)} (known: ${Object.keys(kinds).join(', ')})`,
      );
    return f();
  };
}
