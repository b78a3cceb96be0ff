import type { IncomingHttpHeaders } from 'node:http';
import { canonicalJson, sha256Hex } from '@retrysafe/contract';
import {
  type ClockSource,
  createKeyStore,
  createSandboxClock,
  type KeyAnswers,
  parseJsonBody,
  type Route,
  routeRequest,
  type SandboxClock,
  type SandboxReply,
  startLoopbackServer,
} from '@retrysafe/sandbox-kit';

export { createSandboxClock as sandboxClock, isPlainObject } from '@retrysafe/sandbox-kit';
export type { SandboxReply };

/**
 * The sandbox clock and a key store on it, keeping keys `retentionMs` (default 24 h). `run` answers a keyed
 * request by the fingerprint of its payload: a replay, a refusal, or `execute` once; `start` serves the
 * sandbox on that clock, with `expireKeys`.
 */
export function keyedState(
  options: { port?: number; clock?: ClockSource; retentionMs?: number },
  answers: KeyAnswers<undefined>,
) {
  const clock = createSandboxClock(options.clock);
  const retentionMs = options.retentionMs ?? 24 * 3_600_000;
  const keys = createKeyStore({ retentionMs, clock, answers });
  const run = async (key: string, payload: unknown, execute: () => SandboxReply | Promise<SandboxReply>) =>
    (await keys.run(key, { fingerprint: payloadFingerprint(payload) }, execute)).reply;
  const start = async <R>(setup: Omit<PatternSetup<R>, 'port' | 'clock'>): Promise<KeyedSandbox<R>> => ({
    ...(await startPatternSandbox({ ...setup, port: options.port, clock })),
    expireKeys: () => void keys.expire(),
  });
  return { retentionMs, run, start };
}

/** A route of a pattern sandbox: its handler sees the parsed JSON body. */
export type PatternRoute = Route<Promise<SandboxReply> | SandboxReply, SandboxRequestView>;

/** The reply of the first route that matches, else `notFound`. */
export const routed =
  (routes: readonly PatternRoute[], notFound: SandboxReply) =>
  (req: SandboxRequestView): Promise<SandboxReply> | SandboxReply =>
    routeRequest(routes, req)?.value ?? notFound;

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
  /** The JSON body, parsed; undefined when it is not JSON. */
  readonly body: unknown;
}

/** What every pattern sandbox offers a test or drill. */
export interface PatternSandbox<R> {
  readonly url: string;
  /** Records of the sandbox's kind (its record kind or its operation name). */
  count(kind?: string): number;
  records(): readonly R[];
  readonly requests: readonly SandboxRequest[];
  /** Moves the sandbox clock forward (key expiry). */
  advance(ms: number): void;
  close(): Promise<void>;
}

/** A pattern sandbox that keeps idempotency keys. */
export interface KeyedSandbox<R> extends PatternSandbox<R> {
  /** Forgets every stored key, as if all had aged past retention. */
  expireKeys(): void;
}

export interface PatternSetup<R> {
  readonly port: number | undefined;
  readonly clock: SandboxClock;
  /** Response header that carries a fresh request id on every reply, and the id's prefix. */
  readonly requestId: readonly [header: string, prefix: string];
  /** The record kind and the operation name `count` answers for. */
  readonly kinds: readonly [string, string];
  /** Default: the number of records. */
  count?(): number;
  /** The records as stored; callers get copies. */
  records(): readonly R[];
  handle(req: SandboxRequestView): Promise<SandboxReply> | SandboxReply;
}

const LOGGED_HEADERS = ['idempotency-key', 'if-match', 'if-none-match', 'content-type'];

/**
 * The pattern sandboxes' loopback JSON server (the sandbox kit, @retrysafe/sandbox-kit), logging the
 * idempotency-related headers of every request. Every handler runs to completion (the "commit")
 * before the reply is written, so a fault proxy that drops the reply leaves the effect in place.
 */
export async function startPatternSandbox<R>(setup: PatternSetup<R>): Promise<PatternSandbox<R>> {
  const requests: SandboxRequest[] = [];
  const [idHeader, idPrefix] = setup.requestId;
  let seq = 0;
  const server = await startLoopbackServer({
    port: setup.port ?? 0,
    handle: async (req) => {
      const rid = `${idPrefix}${++seq}`;
      const parsed = parseJsonBody(req.rawBody);
      const reply = await setup.handle({ ...req, body: parsed.ok ? parsed.value : undefined });
      return { ...reply, headers: { ...reply.headers, [idHeader]: rid } };
    },
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
  const [kind, operation] = setup.kinds;
  const count = setup.count ?? (() => setup.records().length);
  return {
    url: server.url,
    count: kindCounter({ [kind]: count, [operation]: count }),
    records: () => setup.records().map((r) => ({ ...r })),
    requests,
    advance: setup.clock.advance,
    close: server.close,
  };
}

/** A list endpoint's answer: the records whose `field` equals query parameter `name`, or all without it. */
export function filtered<R>(req: SandboxRequestView, name: string, records: readonly R[], field: keyof R): R[] {
  const want = req.query.get(name);
  return records.filter((r) => want === null || r[field] === want);
}

/** One page (`?page=`, from 1) of `list` as `{ data }`, with an RFC 8288 `rel="next"` link while more follow. */
export function listPage(req: SandboxRequestView, list: readonly unknown[], pageSize = Infinity): SandboxReply {
  const page = Math.max(1, Number(req.query.get('page') ?? 1));
  const data = list.slice((page - 1) * pageSize, page * pageSize);
  if (page * pageSize >= list.length) return { status: 200, body: { data, has_more: false } };
  const next = new URLSearchParams(req.query);
  next.set('page', String(page + 1));
  // Both ways APIs say it: an RFC 8288 link, and a body flag (Stripe-style has_more) for a client that reads no headers.
  if (req.query.get('linkless') !== null) return { status: 200, body: { data, has_more: true } };
  return { status: 200, headers: { link: `<${req.path}?${next}>; rel="next"` }, body: { data, has_more: true } };
}

/** The server-side payload fingerprint: independent of key order and whitespace. */
function payloadFingerprint(body: unknown): string {
  try {
    return sha256Hex(canonicalJson(body ?? null));
  } catch {
    return sha256Hex(String(body));
  }
}

/** Resolves a record kind: the sandbox's kind or one of its operation names; anything else is a test bug. */
function kindCounter(kinds: Readonly<Record<string, () => number>>) {
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
