import { randomBytes } from 'node:crypto';
import {
  createFaultQueue,
  createKeyStore,
  createRequestLog,
  createSandboxClock,
  startLoopbackServer,
  type LoopbackRequest,
  type SandboxReply as Reply,
} from '@retrysafe/sandbox-kit';
import { paramsFingerprint, parseForm } from './form.js';
import { matches, parseSearchQuery, SearchQueryError } from './search-query.js';

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
 * sandbox kit (@retrysafe/sandbox-kit); this file keeps Stripe's answers, objects and search.
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
  waitFor(predicate: (requests: readonly SandboxRequest[], sandbox: StripeSandbox) => boolean, timeoutMs?: number): Promise<void>;
  setSearchDelayMs(ms: number): void;
  close(): Promise<void>;
}

const RESOURCES: Record<string, { kind: StripeRecordKind; prefix: string; search: boolean }> = {
  customers: { kind: 'customer', prefix: 'cus_', search: true },
  payment_intents: { kind: 'payment_intent', prefix: 'pi_', search: true },
  invoices: { kind: 'invoice', prefix: 'in_', search: true },
  refunds: { kind: 'refund', prefix: 're_', search: false },
};

const OPERATION_KIND: Record<string, StripeRecordKind> = {
  'customers.create': 'customer',
  'paymentIntents.create': 'payment_intent',
  'invoices.create': 'invoice',
  'refunds.create': 'refund',
};

function newId(prefix: string): string {
  return prefix + randomBytes(12).toString('base64url').replace(/[-_]/g, 'x').slice(0, 14);
}

function err(status: number, type: string, message: string, extra: Record<string, unknown> = {}): Reply {
  return { status, body: { error: { type, message, ...extra } } };
}

const isIntString = (v: unknown): v is string => typeof v === 'string' && /^\d+$/.test(v);

export async function startStripeSandbox(options: StripeSandboxOptions = {}): Promise<StripeSandbox> {
  const clock = createSandboxClock(options.now, 'stripe sandbox');
  const now = clock.now;
  const retentionMs = options.retentionMs ?? 24 * 60 * 60 * 1000;
  let searchDelayMs = options.searchDelayMs ?? 0;
  let processingMs = options.processingMs ?? 0;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  let gate: Promise<void> | null = null;

  const records: SandboxRecord[] = [];
  const byId = new Map<string, SandboxRecord>();
  const keys = createKeyStore<{ path: string }>({
    retentionMs,
    clock,
    answers: {
      inFlight: err(409, 'idempotency_error', 'There is currently another in-progress request using this Idempotency-Key. Please try again later.', { code: 'idempotency_key_in_use' }),
      mismatch: (first, request) =>
        err(
          400,
          'idempotency_error',
          first.meta.path !== request.meta!.path
            ? `Keys for idempotent requests can only be used for the same endpoint they were first used for ('${first.meta.path}' vs '${request.meta!.path}').`
            : `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${first.key}' if you meant to execute a different request.`,
        ),
      replayHeaders: { 'idempotent-replayed': 'true' },
    },
  });
  const log = createRequestLog<SandboxRequest>('sandbox');
  /** 429s, taken at the door by the next matching request. */
  const rateLimits = createFaultQueue<'POST' | 'GET' | 'ANY'>('stripe sandbox');
  /** 500s, taken by the next write that reaches endpoint execution. */
  const executionFaults = createFaultQueue<Exclude<SandboxFault, 'rate-limit'>>('stripe sandbox');

  function add(kind: StripeRecordKind, object: Record<string, unknown>, fixture = false): Record<string, unknown> {
    const rec: SandboxRecord = { kind, id: String(object.id), object, createdAt: now(), fixture };
    records.push(rec);
    byId.set(rec.id, rec);
    return object;
  }

  if (options.fixtures !== false) {
    const created = Math.floor(now() / 1000);
    add('customer', { id: 'cus_fixture', object: 'customer', created, email: null, name: 'Fixture customer', metadata: {}, livemode: false }, true);
    add('customer', { id: 'cus_123', object: 'customer', created, email: null, name: 'README customer', metadata: {}, livemode: false }, true);
    add('payment_intent', { id: 'pi_fixture', object: 'payment_intent', created, amount: 10_000, amount_received: 10_000, currency: 'eur', customer: 'cus_fixture', status: 'succeeded', metadata: {}, livemode: false }, true);
  }

  // ---- parameter validation (before the idempotency layer: nothing stored) ----
  function validate(resource: string, p: Record<string, unknown>): Reply | null {
    const allowed: Record<string, string[]> = {
      customers: ['email', 'name', 'phone', 'description', 'metadata'],
      payment_intents: ['amount', 'currency', 'customer', 'description', 'payment_method', 'payment_method_types', 'confirm', 'capture_method', 'metadata'],
      invoices: ['customer', 'description', 'collection_method', 'days_until_due', 'auto_advance', 'currency', 'metadata'],
      refunds: ['payment_intent', 'amount', 'reason', 'metadata'],
    };
    const invalid = (param: string, message: string) => err(400, 'invalid_request_error', message, { code: 'parameter_invalid', param });
    for (const k of Object.keys(p)) if (!allowed[resource]!.includes(k)) return err(400, 'invalid_request_error', `Received unknown parameter: ${k}`, { code: 'parameter_unknown', param: k });
    if (p.metadata !== undefined) {
      if (typeof p.metadata !== 'object' || p.metadata === null || Array.isArray(p.metadata)) return invalid('metadata', 'Invalid metadata');
      const entries = Object.entries(p.metadata);
      if (entries.length > 50) return invalid('metadata', 'Metadata can have at most 50 keys');
      for (const [k, v] of entries) {
        if (k.length > 40) return invalid(`metadata[${k}]`, 'Metadata keys can be at most 40 characters');
        if (typeof v !== 'string' || v.length > 500) return invalid(`metadata[${k}]`, 'Metadata values can be at most 500 characters');
      }
    }
    const missing = (param: string) => err(400, 'invalid_request_error', `Missing required param: ${param}.`, { code: 'parameter_missing', param });
    if (resource === 'payment_intents') {
      if (p.amount === undefined) return missing('amount');
      if (!isIntString(p.amount) || Number(p.amount) < 1) return invalid('amount', 'Invalid integer: amount');
      if (p.currency === undefined) return missing('currency');
      if (typeof p.currency !== 'string' || !/^[a-z]{3}$/.test(p.currency)) return invalid('currency', `Invalid currency: ${String(p.currency)}`);
      if (p.confirm !== undefined && p.confirm !== 'true' && p.confirm !== 'false') return invalid('confirm', 'Invalid boolean: confirm');
    }
    if (resource === 'invoices') {
      if (p.customer === undefined) return missing('customer');
      if (p.collection_method === 'send_invoice' && p.days_until_due === undefined) return missing('days_until_due');
    }
    if (resource === 'refunds') {
      if (p.payment_intent === undefined) return missing('payment_intent');
      if (p.amount !== undefined && (!isIntString(p.amount) || Number(p.amount) < 1)) return invalid('amount', 'Invalid integer: amount');
    }
    return null;
  }

  // ---- endpoint execution (stored for the key) ----
  function execute(resource: string, p: Record<string, unknown>): Reply {
    const created = Math.floor(now() / 1000);
    const metadata = (p.metadata as Record<string, string> | undefined) ?? {};
    const missingObject = (kind: string, id: unknown, param: string) =>
      err(404, 'invalid_request_error', `No such ${kind}: '${String(id)}'`, { code: 'resource_missing', param });
    switch (resource) {
      case 'customers':
        return { status: 200, body: add('customer', { id: newId('cus_'), object: 'customer', created, email: p.email ?? null, name: p.name ?? null, phone: p.phone ?? null, description: p.description ?? null, metadata, livemode: false }) };
      case 'payment_intents': {
        if (p.customer !== undefined && byId.get(String(p.customer))?.kind !== 'customer') return missingObject('customer', p.customer, 'customer');
        const confirm = p.confirm === 'true';
        // A declined create+confirm still creates the PaymentIntent: it stays in requires_payment_method
        // and the 402's error body carries it (https://docs.stripe.com/api/errors, payment_intent).
        const declined = confirm && p.payment_method === 'pm_card_chargeDeclined';
        const status = declined ? 'requires_payment_method' : confirm && p.payment_method ? (p.capture_method === 'manual' ? 'requires_capture' : 'succeeded') : p.payment_method ? 'requires_confirmation' : 'requires_payment_method';
        const decline = { type: 'card_error', code: 'card_declined', decline_code: 'generic_decline', message: 'Your card was declined.' };
        const pi = add('payment_intent', {
          id: newId('pi_'), object: 'payment_intent', created, amount: Number(p.amount), amount_received: status === 'succeeded' ? Number(p.amount) : 0,
          currency: p.currency, customer: p.customer ?? null, description: p.description ?? null, payment_method: declined ? null : (p.payment_method ?? null),
          capture_method: p.capture_method ?? 'automatic', status, last_payment_error: declined ? { ...decline, payment_method: { id: p.payment_method } } : null, metadata, livemode: false,
        });
        if (declined) return err(402, 'card_error', decline.message, { code: decline.code, decline_code: decline.decline_code, payment_intent: pi });
        return { status: 200, body: pi };
      }
      case 'invoices': {
        if (byId.get(String(p.customer))?.kind !== 'customer') return missingObject('customer', p.customer, 'customer');
        return {
          status: 200,
          body: add('invoice', {
            id: newId('in_'), object: 'invoice', created, customer: p.customer, status: 'draft', description: p.description ?? null,
            collection_method: p.collection_method ?? 'charge_automatically', days_until_due: p.days_until_due === undefined ? null : Number(p.days_until_due),
            auto_advance: p.auto_advance === 'true', currency: p.currency ?? 'eur', amount_due: 0, metadata, livemode: false,
          }),
        };
      }
      case 'refunds': {
        const pi = byId.get(String(p.payment_intent));
        if (pi?.kind !== 'payment_intent') return missingObject('payment_intent', p.payment_intent, 'payment_intent');
        if (pi.object.status !== 'succeeded') {
          return err(400, 'invalid_request_error', `PaymentIntent ${pi.id} does not have a successful charge to refund.`, { code: 'charge_not_refundable' });
        }
        const refunded = records.filter((r) => r.kind === 'refund' && r.object.payment_intent === pi.id).reduce((s, r) => s + Number(r.object.amount), 0);
        const remaining = Number(pi.object.amount_received) - refunded;
        const amount = p.amount === undefined ? remaining : Number(p.amount);
        if (amount <= 0 || amount > remaining) {
          return err(400, 'invalid_request_error', `Refund amount (${amount}) is greater than the unrefunded amount on the charge (${remaining}).`, { code: 'amount_too_large', param: 'amount' });
        }
        return {
          status: 200,
          body: add('refund', { id: newId('re_'), object: 'refund', created, amount, currency: pi.object.currency, payment_intent: pi.id, reason: p.reason ?? null, status: 'succeeded', metadata }),
        };
      }
    }
    return err(404, 'invalid_request_error', 'Unrecognized request URL');
  }

  async function write(resource: string, path: string, body: string, key: string | null): Promise<{ reply: Reply; result: SandboxRequestResult }> {
    const params = parseForm(body);
    const invalid = validate(resource, params);
    if (invalid) return { reply: invalid, result: 'invalid' };

    const endpoint = async () => {
      if (gate) await gate;
      if (processingMs > 0) await sleep(processingMs);
      return runWithFaults(resource, params);
    };
    if (key === null) return { reply: await endpoint(), result: 'executed' };
    if (key.length > 255) return { reply: err(400, 'invalid_request_error', 'Idempotency-Key must be at most 255 characters.', { code: 'idempotency_key_too_long' }), result: 'invalid' };
    // The same key means the same endpoint and the same params.
    const { reply, result } = await keys.run(key, { fingerprint: `${path} ${paramsFingerprint(body)}`, meta: { path } }, endpoint);
    return { reply, result: result === 'in-flight' ? 'in-progress' : result === 'mismatch' ? 'key-mismatch' : result };
  }

  function runWithFaults(resource: string, params: Record<string, unknown>): Reply {
    const fault = executionFaults.take();
    if (fault === 'server-error') return err(500, 'api_error', 'An unknown error occurred while processing the request.');
    const reply = execute(resource, params);
    if (fault === 'server-error-after-commit') return err(500, 'api_error', 'An unknown error occurred after the request was processed.');
    return reply;
  }

  function read(resource: string, rest: string[], query: URLSearchParams): { reply: Reply; result: SandboxRequestResult } {
    const info = RESOURCES[resource]!;
    if (rest.length === 1 && rest[0] === 'search') {
      if (!info.search) return { reply: err(404, 'invalid_request_error', `Unrecognized request URL (GET: /v1/${resource}/search).`), result: 'not-found' };
      let parsed;
      try {
        parsed = parseSearchQuery(query.get('query') ?? '');
      } catch (e) {
        return { reply: err(400, 'invalid_request_error', `Invalid search query: ${(e as SearchQueryError).message}`, { param: 'query' }), result: 'invalid' };
      }
      const limit = Math.min(Math.max(Number(query.get('limit') ?? 10) || 10, 1), 100);
      const visibleBefore = now() - searchDelayMs;
      const data = records
        .filter((r) => r.kind === info.kind && r.createdAt <= visibleBefore && matches(r.object, parsed))
        .reverse()
        .map((r) => r.object);
      return { reply: { status: 200, body: { object: 'search_result', url: `/v1/${resource}/search`, has_more: data.length > limit, next_page: null, data: data.slice(0, limit) } }, result: 'read' };
    }
    if (rest.length === 1) {
      const rec = byId.get(rest[0]!);
      if (!rec || rec.kind !== info.kind) return { reply: err(404, 'invalid_request_error', `No such ${info.kind}: '${rest[0]}'`, { code: 'resource_missing', param: 'id' }), result: 'not-found' };
      return { reply: { status: 200, body: rec.object }, result: 'read' };
    }
    if (rest.length === 0) {
      // List: newest first, optional equality filters on customer / payment_intent, starting_after pagination. Not delayed.
      const limit = Math.min(Math.max(Number(query.get('limit') ?? 10) || 10, 1), 100);
      let data = records.filter((r) => r.kind === info.kind).reverse().map((r) => r.object);
      for (const f of ['customer', 'payment_intent'] as const) {
        const v = query.get(f);
        if (v !== null) data = data.filter((o) => o[f] === v);
      }
      const after = query.get('starting_after');
      if (after !== null) {
        const i = data.findIndex((o) => o.id === after);
        data = i < 0 ? [] : data.slice(i + 1);
      }
      return { reply: { status: 200, body: { object: 'list', url: `/v1/${resource}`, has_more: data.length > limit, data: data.slice(0, limit) } }, result: 'read' };
    }
    return { reply: err(404, 'invalid_request_error', 'Unrecognized request URL'), result: 'not-found' };
  }

  /** The key a request carries: GET/DELETE ignore keys. */
  const keyOf = (req: LoopbackRequest): string | null => {
    const keyHeader = req.headers['idempotency-key'];
    return req.method.toUpperCase() === 'POST' && typeof keyHeader === 'string' ? keyHeader : null;
  };

  async function handle(req: LoopbackRequest): Promise<{ reply: Reply; result: SandboxRequestResult; path: string; key: string | null }> {
    const method = req.method.toUpperCase();
    const key = keyOf(req);
    const { path, rawBody: body } = req;

    if (rateLimits.take((m) => m === 'ANY' || m === method)) {
      return { reply: err(429, 'invalid_request_error', 'Too many requests hit the API too quickly.', { code: 'rate_limit' }), result: 'rate-limited', path, key };
    }
    const auth = req.headers.authorization ?? '';
    const m = /^Bearer\s+(\S+)$/.exec(auth);
    if (!m || !/^(sk|rk)_test_\w+$/.test(m[1]!)) {
      return { reply: err(401, 'invalid_request_error', 'Invalid API Key provided.'), result: 'unauthenticated', path, key };
    }
    const parts = path.split('/').filter(Boolean);
    if (parts[0] !== 'v1' || !parts[1] || !(parts[1] in RESOURCES)) {
      return { reply: err(404, 'invalid_request_error', `Unrecognized request URL (${method}: ${path}).`), result: 'not-found', path, key };
    }
    const resource = parts[1];
    if (method === 'GET') return { ...read(resource, parts.slice(2), req.query), path, key };
    if (method !== 'POST' || parts.length !== 2) {
      return { reply: err(404, 'invalid_request_error', `Unrecognized request URL (${method}: ${path}).`), result: 'not-found', path, key };
    }
    if (m[1]!.startsWith('rk_test_')) {
      return { reply: err(403, 'invalid_request_error', 'The provided key does not have the required permissions for this endpoint.', { code: 'secret_key_required' }), result: 'forbidden', path, key };
    }
    return { ...(await write(resource, path, body, key)), path, key };
  }

  const server = await startLoopbackServer({
    port: options.port ?? 0,
    handle: async (req) => {
      const { reply, result, path, key } = await handle(req);
      log.record({ method: req.method, path, idempotencyKey: key, status: reply.status, result });
      return reply;
    },
    onError: (e, req) => {
      log.record({ method: req.method, path: req.path + req.search, idempotencyKey: null, status: 500, result: 'invalid' });
      return { status: 500, body: { error: { type: 'api_error', message: `sandbox bug: ${String(e)}` } } };
    },
    headers: (req) => {
      const key = keyOf(req);
      return { 'request-id': `req_${randomBytes(9).toString('base64url').replace(/[-_]/g, 'x')}`, 'stripe-version': '2026-sandbox', ...(key ? { 'idempotency-key': key } : {}) };
    },
  });

  const kindOf = (k: string): StripeRecordKind | undefined =>
    (Object.values(RESOURCES).some((r) => r.kind === k) ? (k as StripeRecordKind) : OPERATION_KIND[k.replace(/^stripe\./, '')]);

  const sandbox: StripeSandbox = {
    url: server.url,
    port: server.port,
    count(kindOrOperation) {
      if (kindOrOperation === undefined) return records.filter((r) => !r.fixture).length;
      const kind = kindOf(kindOrOperation);
      if (!kind) throw new TypeError(`unknown record kind or operation: ${JSON.stringify(kindOrOperation)}`);
      return records.filter((r) => !r.fixture && r.kind === kind).length;
    },
    records: (kind) => records.filter((r) => kind === undefined || r.kind === kind).map((r) => ({ ...r, object: structuredClone(r.object) })),
    requests: () => log.entries.slice(),
    requestCount: (filter = {}) => log.count((r) => (!filter.method || r.method === filter.method) && (!filter.path || r.path.startsWith(filter.path))),
    keys: () => keys.keys(),
    now,
    advance: clock.advance,
    expireKeys: (filter) => keys.expire(filter && ((k) => filter(k))),
    failNext(fault, opts = {}) {
      const times = opts.times ?? 1;
      if (!Number.isInteger(times) || times < 1) throw new RangeError(`times must be a positive integer, got ${times}`);
      if (fault !== 'rate-limit' && opts.method !== undefined && opts.method !== 'POST') throw new RangeError(`${fault} happens during endpoint execution, i.e. on a POST`);
      if (fault === 'rate-limit') rateLimits.add(opts.method ?? 'POST', times);
      else executionFaults.add(fault, times);
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
