import { randomBytes } from 'node:crypto';
import {
  createFaultQueue,
  createKeyStore,
  createRequestLog,
  createSandboxClock,
  type KeyAnswers,
  type LoopbackRequest,
  type SandboxReply as Reply,
  type Route,
  routeRequest,
  startLoopbackServer,
} from '@retrysafe/sandbox-kit';
import { paramsFingerprint, parseForm } from './form.js';
import { createStripeStore, err, RESOURCES, type StripeStore } from './stripe-store.js';

/**
 * A loopback Stripe (API v1) that behaves as Stripe documents its idempotency layer
 * (docs/evidence/stripe.md): the status and body of the first request per Idempotency-Key are stored
 * once endpoint execution began (500s too) and replayed with `Idempotent-Replayed: true`; the same key
 * with other params is a 400 idempotency_error; the same key while the first is still running is a
 * 409 idempotency_key_in_use; validation failures, 429s, auth failures and concurrent conflicts are not
 * stored; keys are pruned after `retentionMs` (a pruned key creates a NEW object); the Search API lags
 * `searchDelayMs` behind, list APIs do not. It counts the objects it holds and the requests it got.
 *
 * Layers, in Stripe's order: rate limiter → authentication → parameter validation → idempotency layer
 * → endpoint execution (stored). The server, clock, key store, fault queues and request log are the
 * sandbox kit (@retrysafe/sandbox-kit); the objects and what the endpoints do with them are
 * stripe-store.ts; this file keeps the layers in front of them and the route table.
 */

export type StripeRecordKind = 'customer' | 'payment_intent' | 'invoice' | 'refund';

export interface SandboxRecord {
  readonly kind: StripeRecordKind;
  readonly id: string;
  /** The object as the API returns it. */
  readonly object: Record<string, unknown>;
  /** Sandbox-clock ms when it was created. */
  readonly createdAt: number;
  /** Seeded at start, not created through the API; not counted by `count()`. */
  readonly fixture: boolean;
}

/** What the sandbox did with one request. */
export type SandboxRequestResult =
  | 'executed'
  | 'replayed'
  | 'in-progress'
  | 'key-mismatch'
  | 'rate-limited'
  | 'unauthenticated'
  | 'forbidden'
  | 'invalid'
  | 'read'
  | 'not-found';

export interface SandboxRequest {
  readonly n: number;
  readonly method: string;
  readonly path: string;
  readonly idempotencyKey: string | null;
  readonly status: number;
  readonly result: SandboxRequestResult;
}

/**
 * Faults the sandbox itself produces (network faults belong to the testkit's fault proxy):
 * - `rate-limit`: 429 from the rate limiter, before the idempotency layer (not stored)
 * - `server-error`: endpoint execution fails with a 500 that is stored for the key; nothing created
 * - `server-error-after-commit`: the object is created, then a 500 is stored for the key
 */
export type SandboxFault = 'rate-limit' | 'server-error' | 'server-error-after-commit';

export interface StripeSandboxOptions {
  /** 0 (default) picks a free port on 127.0.0.1. */
  port?: number;
  /** Keys (and their stored responses) are pruned once this old. Default 24 h, as Stripe documents. */
  retentionMs?: number;
  /** How far the Search API lags behind writes. Default 0. */
  searchDelayMs?: number;
  /** Real time each write spends in endpoint execution (the window for 409 idempotency_key_in_use). Default 0. */
  processingMs?: number;
  /** Base clock; `advance()` adds to it. Default Date.now. Give it the runner's virtual clock in drills. */
  now?: () => number;
  /** How processing time passes. Default: a real timer. Give it the runner's virtual clock in drills. */
  sleep?: (ms: number) => Promise<void>;
  /**
   * Seed `cus_fixture`, `cus_123` (the customer the root README's example charges) and a succeeded
   * `pi_fixture` (10 000 eur) so payment intents, invoices and refunds have something to point at. Default true.
   */
  fixtures?: boolean;
}

export interface StripeSandbox {
  readonly url: string;
  readonly port: number;
  /** Objects created through the API (fixtures excluded), of one kind or for one operation (`paymentIntents.create`, `stripe.refunds.create`); all kinds when omitted. */
  count(kindOrOperation?: StripeRecordKind | string): number;
  records(kind?: StripeRecordKind): SandboxRecord[];
  /** Every request received, in order. */
  requests(): SandboxRequest[];
  /** Requests matching a method and/or path prefix. */
  requestCount(filter?: { method?: string; path?: string }): number;
  /** Idempotency keys currently retained. */
  keys(): string[];
  /** Sandbox clock (ms). */
  now(): number;
  /** Moves the sandbox clock forward: keys age (and are pruned past retention), search catches up. */
  advance(ms: number): void;
  /** Prunes every retained key now (as if older than the retention), or only those `filter` accepts. Returns how many. */
  expireKeys(filter?: (key: string) => boolean): number;
  /** The next `times` requests (default: POSTs) get `fault`. */
  failNext(fault: SandboxFault, options?: { times?: number; method?: 'POST' | 'GET' | 'ANY' }): void;
  setProcessingMs(ms: number): void;
  /**
   * Holds every write that reaches endpoint execution (its key stays "in progress") until the returned
   * function is called: a deterministic window for concurrent same-key requests and client timeouts.
   */
  hold(): () => void;
  /** Resolves once `predicate` holds for the request log (polls; for tests that wait on the sandbox). */
  waitFor(
    predicate: (requests: readonly SandboxRequest[], sandbox: StripeSandbox) => boolean,
    timeoutMs?: number,
  ): Promise<void>;
  setSearchDelayMs(ms: number): void;
  close(): Promise<void>;
}

const OPERATION_KIND: Record<string, StripeRecordKind> = {
  'customers.create': 'customer',
  'paymentIntents.create': 'payment_intent',
  'invoices.create': 'invoice',
  'refunds.create': 'refund',
};

/** What Stripe's idempotency layer answers besides the stored response. */
const KEY_ANSWERS: KeyAnswers<{ path: string }> = {
  inFlight: err(
    409,
    'idempotency_error',
    'There is currently another in-progress request using this Idempotency-Key. Please try again later.',
    { code: 'idempotency_key_in_use' },
  ),
  mismatch: (first, request) =>
    err(
      400,
      'idempotency_error',
      first.meta.path !== request.meta!.path
        ? `Keys for idempotent requests can only be used for the same endpoint they were first used for ('${first.meta.path}' vs '${request.meta!.path}').`
        : `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${first.key}' if you meant to execute a different request.`,
    ),
  replayHeaders: { 'idempotent-replayed': 'true' },
};

/** The key a request carries: GET/DELETE ignore keys. */
const keyOf = (req: LoopbackRequest): string | null => {
  const keyHeader = req.headers['idempotency-key'];
  return req.method.toUpperCase() === 'POST' && typeof keyHeader === 'string' ? keyHeader : null;
};
type Answer = { reply: Reply; result: SandboxRequestResult };
const unrecognized = (req: LoopbackRequest): Answer => ({
  reply: err(404, 'invalid_request_error', `Unrecognized request URL (${req.method.toUpperCase()}: ${req.path}).`),
  result: 'not-found',
});
const kindOf = (k: string): StripeRecordKind | undefined =>
  Object.values(RESOURCES).some((r) => r.kind === k)
    ? (k as StripeRecordKind)
    : OPERATION_KIND[k.replace(/^stripe\./, '')];

/** The records a test asked about (not the fixtures): all, one kind, or what one operation creates. */
function countRecords(records: readonly SandboxRecord[], kindOrOperation?: string): number {
  if (kindOrOperation === undefined) return records.filter((r) => !r.fixture).length;
  const kind = kindOf(kindOrOperation);
  if (!kind) throw new TypeError(`unknown record kind or operation: ${JSON.stringify(kindOrOperation)}`);
  return records.filter((r) => !r.fixture && r.kind === kind).length;
}

const replyHeaders = (req: LoopbackRequest) => {
  const key = keyOf(req);
  return {
    'request-id': `req_${randomBytes(9).toString('base64url').replace(/[-_]/g, 'x')}`,
    'stripe-version': '2026-sandbox',
    ...(key ? { 'idempotency-key': key } : {}),
  };
};

const RATE_LIMITED: Answer = {
  reply: err(429, 'invalid_request_error', 'Too many requests hit the API too quickly.', { code: 'rate_limit' }),
  result: 'rate-limited',
};
/** Restricted keys (rk_) may read but not create. */
const RESTRICTED_KEY: Answer = {
  reply: err(
    403,
    'invalid_request_error',
    'The provided key does not have the required permissions for this endpoint.',
    {
      code: 'secret_key_required',
    },
  ),
  result: 'forbidden',
};

/** How many times a scripted fault fires; execution faults happen on a POST. */
function faultTimes(fault: SandboxFault, opts: { times?: number; method?: string }): number {
  const times = opts.times ?? 1;
  if (!Number.isInteger(times) || times < 1) throw new RangeError(`times must be a positive integer, got ${times}`);
  if (fault !== 'rate-limit' && opts.method !== undefined && opts.method !== 'POST')
    throw new RangeError(`${fault} happens during endpoint execution, i.e. on a POST`);
  return times;
}

/** Endpoint execution with the scripted 500 that fires before it, or after it committed. */
function runWithFaults(
  execute: StripeStore['execute'],
  fault: Exclude<SandboxFault, 'rate-limit'> | undefined,
  resource: string,
  params: Record<string, unknown>,
): Reply {
  if (fault === 'server-error') return err(500, 'api_error', 'An unknown error occurred while processing the request.');
  const reply = execute(resource, params);
  if (fault === 'server-error-after-commit')
    return err(500, 'api_error', 'An unknown error occurred after the request was processed.');
  return reply;
}

export async function startStripeSandbox(options: StripeSandboxOptions = {}): Promise<StripeSandbox> {
  const clock = createSandboxClock(options.now, 'stripe sandbox');
  const now = clock.now;
  const retentionMs = options.retentionMs ?? 24 * 60 * 60 * 1000;
  let searchDelayMs = options.searchDelayMs ?? 0;
  let processingMs = options.processingMs ?? 0;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  let gate: Promise<void> | null = null;

  const store = createStripeStore(now, options.fixtures !== false);
  const records = store.records;
  const keys = createKeyStore<{ path: string }>({ retentionMs, clock, answers: KEY_ANSWERS });
  const log = createRequestLog<SandboxRequest>('sandbox');
  /** 429s, taken at the door by the next matching request. */
  const rateLimits = createFaultQueue<'POST' | 'GET' | 'ANY'>('stripe sandbox');
  /** 500s, taken by the next write that reaches endpoint execution. */
  const executionFaults = createFaultQueue<Exclude<SandboxFault, 'rate-limit'>>('stripe sandbox');

  async function write(
    resource: string,
    path: string,
    body: string,
    key: string | null,
  ): Promise<{ reply: Reply; result: SandboxRequestResult }> {
    const params = parseForm(body);
    const invalid = store.validate(resource, params);
    if (invalid) return { reply: invalid, result: 'invalid' };

    const endpoint = async () => {
      if (gate) await gate;
      if (processingMs > 0) await sleep(processingMs);
      return runWithFaults(store.execute, executionFaults.take(), resource, params);
    };
    if (key === null) return { reply: await endpoint(), result: 'executed' };
    if (key.length > 255)
      return {
        reply: err(400, 'invalid_request_error', 'Idempotency-Key must be at most 255 characters.', {
          code: 'idempotency_key_too_long',
        }),
        result: 'invalid',
      };
    // The same key means the same endpoint and the same params.
    const { reply, result } = await keys.run(
      key,
      { fingerprint: `${path} ${paramsFingerprint(body)}`, meta: { path } },
      endpoint,
    );
    return { reply, result: result === 'in-flight' ? 'in-progress' : result === 'mismatch' ? 'key-mismatch' : result };
  }

  /** Past the rate limiter and authentication: retrieve, list and search (GET), create (POST). */
  const routes: readonly Route<Answer | Promise<Answer>>[] = [
    {
      method: 'GET',
      path: /^\/v1\/([a-z_]+)(\/.*)?$/,
      handle: (req, m) => store.read(m![1]!, (m![2] ?? '').split('/').filter(Boolean), req.query, searchDelayMs),
    },
    {
      method: 'POST',
      path: /^\/v1\/([a-z_]+)\/?$/,
      handle: (req, m) =>
        /^Bearer\s+rk_test_/.test(req.headers.authorization ?? '')
          ? RESTRICTED_KEY
          : write(m![1]!, req.path, req.rawBody, keyOf(req)),
    },
  ];

  /** Stripe's layers in order: rate limiter, authentication, then the route (unknown resources: 404). */
  async function handle(req: LoopbackRequest): Promise<Answer> {
    const method = req.method.toUpperCase();
    if (rateLimits.take((m) => m === 'ANY' || m === method)) {
      return RATE_LIMITED;
    }
    const m = /^Bearer\s+(\S+)$/.exec(req.headers.authorization ?? '');
    if (!m || !/^(sk|rk)_test_\w+$/.test(m[1]!))
      return { reply: err(401, 'invalid_request_error', 'Invalid API Key provided.'), result: 'unauthenticated' };
    const resource = req.path.split('/').filter(Boolean)[1];
    if (resource === undefined || !(resource in RESOURCES)) return unrecognized(req);
    const routed = routeRequest(routes, { ...req, method });
    return routed ? routed.value : unrecognized(req);
  }

  const server = await startLoopbackServer({
    port: options.port ?? 0,
    handle: async (req) => {
      const { reply, result } = await handle(req);
      log.record({ method: req.method, path: req.path, idempotencyKey: keyOf(req), status: reply.status, result });
      return reply;
    },
    onError: (e, req) => {
      log.record({
        method: req.method,
        path: req.path + req.search,
        idempotencyKey: null,
        status: 500,
        result: 'invalid',
      });
      return { status: 500, body: { error: { type: 'api_error', message: `sandbox bug: ${String(e)}` } } };
    },
    headers: replyHeaders,
  });

  const sandbox: StripeSandbox = {
    url: server.url,
    port: server.port,
    count: (kindOrOperation) => countRecords(records, kindOrOperation),
    records: (kind) =>
      records
        .filter((r) => kind === undefined || r.kind === kind)
        .map((r) => ({ ...r, object: structuredClone(r.object) })),
    requests: () => log.entries.slice(),
    requestCount: (filter = {}) =>
      log.count(
        (r) => (!filter.method || r.method === filter.method) && (!filter.path || r.path.startsWith(filter.path)),
      ),
    keys: () => keys.keys(),
    now,
    advance: clock.advance,
    expireKeys: (filter) => keys.expire(filter && ((k) => filter(k))),
    failNext(fault, opts = {}) {
      if (fault === 'rate-limit') rateLimits.add(opts.method ?? 'POST', faultTimes(fault, opts));
      else executionFaults.add(fault, faultTimes(fault, opts));
    },
    setProcessingMs(ms) {
      processingMs = ms;
    },
    setSearchDelayMs(ms) {
      searchDelayMs = ms;
    },
    hold() {
      let release!: () => void;
      gate = new Promise<void>((r) => (release = r));
      return () => {
        gate = null;
        release();
      };
    },
    waitFor: (predicate, timeoutMs) => log.waitFor((entries) => predicate(entries, sandbox), timeoutMs),
    close: server.close,
  };
  return sandbox;
}
