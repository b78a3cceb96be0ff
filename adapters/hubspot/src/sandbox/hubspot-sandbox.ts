import { randomUUID } from 'node:crypto';
import {
  nonNegative as checkNonNegative,
  createFaultQueue,
  createRequestLog,
  createSandboxClock,
  type LoopbackRequest,
  type SandboxReply as Reply,
  type Route,
  routeRequest,
  startLoopbackServer,
} from '@retrysafe/sandbox-kit';
import {
  authenticationError,
  type HubSpotErrorBody,
  missingScopesError,
  notFoundError,
  type RateLimitPolicy,
  rateLimitError,
  serverError,
  validationError,
} from './hubspot-errors-shapes.js';
import {
  type CrmStore,
  createCrmStore,
  type SandboxObjectType,
  type StoredRecord,
  type TypeStore,
} from './hubspot-store.js';

export type { SandboxObjectType } from './hubspot-store.js';

export interface HubSpotSandboxOptions {
  /** Port to bind on 127.0.0.1 (default 0: any free port). */
  readonly port?: number;
  /** When set, any other bearer token gets a 401. Default: any non-empty bearer token is accepted. */
  readonly accessToken?: string;
  /** Unique-value property added to tickets and the custom object type (default `retrysafe_operation_id`). */
  readonly idProperty?: string;
  /** How long after a write the record becomes visible to CRM search (default 0). HubSpot says "a few moments". */
  readonly searchIndexingDelayMs?: number;
  /** EQ compares strings without letter case, so an EQ search may answer other records and page (default false: exact). */
  readonly searchEqFoldsCase?: boolean;
  /** CRM search requests allowed per second (default 5, as HubSpot documents); null turns the limit off. */
  readonly searchPerSecond?: number | null;
  /** Requests allowed per rolling 10 s (default 190); null turns it off. */
  readonly tenSecondlyMax?: number | null;
  /** Requests allowed per day (default 1,000,000). */
  readonly dailyMax?: number;
  /** Object types; default: contacts, tickets and one custom object (`2-100` / `p100_orders`). */
  readonly objectTypes?: readonly SandboxObjectType[];
  /** Time source for indexing delays and rate-limit windows (e.g. the drill's virtual clock); default the real clock. */
  readonly clock?: { now(): number };
}

/** What kind of request the sandbox saw. */
export type SandboxRequestKind = 'create' | 'update' | 'upsert' | 'search' | 'read' | 'other';

export interface SandboxRequest {
  readonly n: number;
  readonly method: string;
  readonly path: string;
  /** Canonical object type name (first of `names`), when the path names one. */
  readonly objectType: string | null;
  readonly kind: SandboxRequestKind;
  readonly status: number;
}

export interface SandboxRecord {
  readonly objectType: string;
  readonly id: string;
  readonly properties: Readonly<Record<string, string>>;
  readonly createdAt: string;
  readonly updatedAt: string;
}

export interface FailOptions {
  /** Status to answer (default 500). */
  readonly status?: number;
  /** Apply the write first, then answer the error (a 5xx after the effect: "may have been applied"). */
  readonly commit?: boolean;
}

export interface HubSpotSandbox {
  /** `http://127.0.0.1:PORT` */
  readonly url: string;
  /** Records held (not archived) of an object type (`tickets`, `contacts`, `2-100`…) or of an adapter operation's kind (`tickets.create`, `objects.upsert`, `contacts.update`). */
  count(kind: string): number;
  /** Records held, all types or one. */
  records(kind?: string): SandboxRecord[];
  /** Writes applied (creates, updates, upserts) to a type or an operation's kind; all when omitted. */
  writes(kind?: string): number;
  /** Every request the sandbox answered, in order. */
  readonly requests: readonly SandboxRequest[];
  /** Adds a record directly (no request counted), e.g. the contact a `contacts.update` changes. */
  seed(objectType: string, properties: Record<string, string>): SandboxRecord;
  /** Moves the sandbox clock forward (search indexing, rate-limit windows). */
  advance(ms: number): void;
  setSearchIndexingDelay(ms: number): void;
  /** The next `times` requests get a 429 of the given policy, with the X-HubSpot-RateLimit-* headers. */
  throttle(times: number, policy?: RateLimitPolicy): void;
  /** The next `times` write requests (create, update, upsert) answer `status`; with `commit` the write is applied first. */
  failNext(times: number, options?: FailOptions): void;
  /** Answers 403 MISSING_SCOPES for this object type until `allowScope`. */
  denyScope(objectType: string): void;
  allowScope(objectType: string): void;
  close(): Promise<void>;
}

export const DEFAULT_ID_PROPERTY = 'retrysafe_operation_id';
/** Which object type each adapter operation writes, for `count('tickets.create')` and friends. */
const OPERATION_KINDS: Readonly<Record<string, string>> = {
  'tickets.create': 'tickets',
  'hubspot.tickets.create': 'tickets',
  'contacts.update': 'contacts',
  'hubspot.contacts.update': 'contacts',
  'objects.upsert': '2-100',
  'hubspot.objects.upsert': '2-100',
};

export function defaultObjectTypes(idProperty: string = DEFAULT_ID_PROPERTY): SandboxObjectType[] {
  return [
    {
      names: ['contacts', '0-1'],
      label: 'Contact',
      properties: ['email', 'firstname', 'lastname', 'phone', 'company', 'jobtitle', 'lifecyclestage', 'contract_date'],
      unique: ['email'],
      scope: 'crm.objects.contacts.write',
    },
    {
      names: ['tickets', '0-5'],
      label: 'Ticket',
      properties: [
        'subject',
        'content',
        'hs_pipeline',
        'hs_pipeline_stage',
        'hs_ticket_priority',
        'hs_ticket_category',
        idProperty,
      ],
      unique: [idProperty],
      required: ['subject', 'hs_pipeline_stage'],
      scope: 'tickets',
    },
    {
      names: ['2-100', 'p100_orders'],
      label: 'Order',
      properties: ['name', 'amount', 'status', 'order_ref', idProperty],
      unique: [idProperty],
      scope: 'crm.objects.custom.write',
    },
  ];
}

/** What a route does once the request is past the gates: the store's answer for the named type. */
type Action = (crm: CrmStore, store: TypeStore, body: Record<string, unknown>, req: LoopbackRequest) => Reply;
interface Routed {
  readonly kind: SandboxRequestKind;
  /** The object type the path names (URL-decoded). */
  readonly typeName: string;
  readonly act: Action;
}

const OBJECTS = '/crm/v3/objects/([^/]+)';
const part = (s: string) => decodeURIComponent(s);
/** The properties a GET asks for: the SDK repeats the parameter (properties=a&properties=b); HubSpot also takes a comma list. */
const selected = (q: URLSearchParams) => {
  const props = q
    .getAll('properties')
    .flatMap((v) => v.split(','))
    .filter(Boolean);
  return props.length ? props : null;
};

/** The CRM v3 objects API the adapter uses. */
const ROUTES: readonly Route<Routed>[] = [
  {
    method: 'POST',
    path: new RegExp(`^${OBJECTS}/batch/upsert/?$`),
    handle: (_r, m) => ({ kind: 'upsert', typeName: part(m![1]!), act: (crm, store, body) => crm.upsert(store, body) }),
  },
  {
    method: 'POST',
    path: new RegExp(`^${OBJECTS}/search/?$`),
    handle: (_r, m) => ({ kind: 'search', typeName: part(m![1]!), act: (crm, store, body) => crm.search(store, body) }),
  },
  {
    method: 'POST',
    path: new RegExp(`^${OBJECTS}/?$`),
    handle: (_r, m) => ({ kind: 'create', typeName: part(m![1]!), act: (crm, store, body) => crm.create(store, body) }),
  },
  {
    method: 'PATCH',
    path: new RegExp(`^${OBJECTS}/([^/]+)/?$`),
    handle: (_r, m) => ({
      kind: 'update',
      typeName: part(m![1]!),
      act: (crm, store, body, req) => crm.update(store, part(m![2]!), req.query.get('idProperty'), body),
    }),
  },
  {
    method: 'GET',
    path: new RegExp(`^${OBJECTS}/([^/]+)/?$`),
    handle: (_r, m) => ({
      kind: 'read',
      typeName: part(m![1]!),
      act: (crm, store, _b, req) => crm.read(store, part(m![2]!), req.query.get('idProperty'), selected(req.query)),
    }),
  },
];

/** Any other request under an object type: answered 405 once past the gates. */
function unsupported(req: LoopbackRequest): Routed | undefined {
  const m = new RegExp(`^${OBJECTS}(?:/.*)?$`).exec(req.path);
  return m
    ? {
        kind: 'other',
        typeName: part(m[1]!),
        act: () => ({ status: 405, body: validationError(`${req.method} is not supported on ${req.path}`) }),
      }
    : undefined;
}

/** The request body as an object ({} when empty), or the 400 HubSpot gives. */
function bodyOf(raw: string): { ok: true; value: Record<string, unknown> } | { ok: false; reply: Reply } {
  if (!raw.length) return { ok: true, value: {} };
  try {
    const parsed: unknown = JSON.parse(raw);
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
      return { ok: false, reply: { status: 400, body: validationError('Invalid input JSON: expected an object') } };
    return { ok: true, value: parsed as Record<string, unknown> };
  } catch {
    return { ok: false, reply: { status: 400, body: validationError('Invalid input JSON on line 1') } };
  }
}

/** HubSpot's rate limiters (daily, ten-secondly rolling, search per second) and scripted throttles. */
function createRateLimiter(o: {
  readonly dailyMax: number;
  readonly tenSecondlyMax: number | null;
  readonly searchPerSecond: number | null;
  readonly now: () => number;
}) {
  const { dailyMax, tenSecondlyMax, searchPerSecond, now } = o;
  let dailyUsed = 0;
  const recent: number[] = [];
  const recentSearches: number[] = [];
  const throttled = createFaultQueue<RateLimitPolicy>('hubspot sandbox');

  function rateLimitHeaders(remaining: number): Record<string, string> {
    return {
      'X-HubSpot-RateLimit-Daily': String(dailyMax),
      'X-HubSpot-RateLimit-Daily-Remaining': String(Math.max(0, dailyMax - dailyUsed)),
      'X-HubSpot-RateLimit-Interval-Milliseconds': '10000',
      'X-HubSpot-RateLimit-Max': String(tenSecondlyMax ?? 190),
      'X-HubSpot-RateLimit-Remaining': String(Math.max(0, remaining)),
    };
  }

  function rateLimited(policy: RateLimitPolicy): Reply {
    const headers = rateLimitHeaders(0);
    if (policy === 'SECONDLY') headers['X-HubSpot-RateLimit-Interval-Milliseconds'] = '1000';
    if (policy === 'DAILY') headers['X-HubSpot-RateLimit-Daily-Remaining'] = '0';
    return { status: 429, body: rateLimitError(policy), headers };
  }

  /** Counts the request and answers a 429 when a window (or a scripted throttle) is full. */
  function limit(kind: SandboxRequestKind): Reply | null {
    const t = now();
    dailyUsed++;
    while (recent.length && recent[0]! <= t - 10_000) recent.shift();
    recent.push(t);
    const throttle = throttled.take();
    if (throttle) return rateLimited(throttle);
    if (dailyUsed > dailyMax) return rateLimited('DAILY');
    if (tenSecondlyMax !== null && recent.length > tenSecondlyMax) return rateLimited('TEN_SECONDLY_ROLLING');
    if (kind === 'search' && searchPerSecond !== null) {
      while (recentSearches.length && recentSearches[0]! <= t - 1000) recentSearches.shift();
      if (recentSearches.length >= searchPerSecond) return rateLimited('SECONDLY');
      recentSearches.push(t);
    }
    return null;
  }

  return {
    throttled,
    limit,
    headers: () => rateLimitHeaders(tenSecondlyMax === null ? 190 : tenSecondlyMax - recent.length),
  };
}

/**
 * Starts a loopback HTTP server that behaves as HubSpot's CRM v3 objects API does for the adapter's
 * operations: the records (hubspot-store.ts), a route table, and the gates every request passes in
 * HubSpot's order (token, scope, rate limits, body, scripted faults). Server, clock, fault queues and
 * request log are the sandbox kit (@retrysafe/sandbox-kit).
 */
export async function startHubSpotSandbox(options: HubSpotSandboxOptions = {}): Promise<HubSpotSandbox> {
  const idProperty = options.idProperty ?? DEFAULT_ID_PROPERTY;
  const clock = createSandboxClock(options.clock, 'hubspot sandbox');
  const now = clock.now;
  const crm = createCrmStore(
    options.objectTypes ?? defaultObjectTypes(idProperty),
    now,
    nonNegative(options.searchIndexingDelayMs ?? 0, 'searchIndexingDelayMs'),
    options.searchEqFoldsCase ?? false,
  );
  const searchPerSecond = options.searchPerSecond === undefined ? 5 : options.searchPerSecond;
  const tenSecondlyMax = options.tenSecondlyMax === undefined ? 190 : options.tenSecondlyMax;
  const dailyMax = options.dailyMax ?? 1_000_000;
  const limiter = createRateLimiter({ dailyMax, tenSecondlyMax, searchPerSecond, now });
  const failing = createFaultQueue<{ readonly status: number; readonly commit: boolean }>('hubspot sandbox');
  const denied = new Set<TypeStore>();
  const log = createRequestLog<SandboxRequest>('hubspot sandbox');
  const canonical = (store: TypeStore) => store.type.names[0]!;

  function answer(req: LoopbackRequest, routed: Routed | undefined, store: TypeStore | undefined): Reply {
    const auth = req.headers.authorization;
    const token = typeof auth === 'string' && auth.startsWith('Bearer ') ? auth.slice(7) : '';
    if (!token || (options.accessToken !== undefined && token !== options.accessToken))
      return { status: 401, body: authenticationError() };
    if (!routed || !store) return { status: 404, body: notFoundError() };
    if (denied.has(store)) return { status: 403, body: missingScopesError(store.type.scope) };
    const limited = limiter.limit(routed.kind);
    if (limited) return limited;
    const body = bodyOf(req.rawBody);
    if (!body.ok) return body.reply;
    const isWrite = routed.kind === 'create' || routed.kind === 'update' || routed.kind === 'upsert';
    const fail = isWrite ? failing.take() : undefined;
    if (fail && !fail.commit) return { status: fail.status, body: serverError(fail.status) };
    const reply = routed.act(crm, store, body.value, req);
    return fail ? { status: fail.status, body: serverError(fail.status) } : reply;
  }

  const server = await startLoopbackServer({
    port: options.port ?? 0,
    contentType: 'application/json;charset=utf-8',
    keepAliveTimeoutMs: 5_000, // Node's default, which this sandbox always had (the kit defaults to 1 s)
    handle: (req) => {
      const routed = routeRequest(ROUTES, req)?.value ?? unsupported(req);
      const store = routed && crm.typeOf(routed.typeName);
      let reply: Reply;
      try {
        reply = answer(req, routed, store);
      } catch {
        reply = { status: 500, body: serverError(500) };
      }
      log.record({
        method: req.method,
        path: req.path + req.search,
        objectType: store ? canonical(store) : null,
        kind: routed?.kind ?? 'other',
        status: reply.status,
      });
      return reply;
    },
    headers: (_req, reply) => ({
      'X-HubSpot-Correlation-Id': (reply.body as HubSpotErrorBody | undefined)?.correlationId ?? randomUUID(),
      ...limiter.headers(),
    }),
  });

  const need = (kind: string): TypeStore => {
    const store = crm.typeOf(OPERATION_KINDS[kind] ?? kind);
    if (!store)
      throw new RangeError(
        `hubspot sandbox: unknown object type or operation "${kind}" (known: ${crm
          .types()
          .flatMap((t) => t.type.names)
          .join(', ')})`,
      );
    return store;
  };
  const recordOf = (store: TypeStore, rec: StoredRecord): SandboxRecord => ({
    objectType: canonical(store),
    id: rec.id,
    properties: { ...rec.properties },
    createdAt: new Date(rec.createdAt).toISOString(),
    updatedAt: new Date(rec.updatedAt).toISOString(),
  });

  return {
    url: server.url,
    requests: log.entries,
    count: (kind) => need(kind).records.size,
    records: (kind) =>
      (kind === undefined ? crm.types() : [need(kind)]).flatMap((s) =>
        [...s.records.values()].map((r) => recordOf(s, r)),
      ),
    writes: (kind) => (kind === undefined ? crm.types().reduce((n, s) => n + s.writes, 0) : need(kind).writes),
    seed(objectType, properties) {
      const store = need(objectType);
      return recordOf(store, crm.seed(store, properties));
    },
    advance: clock.advance,
    setSearchIndexingDelay(ms) {
      crm.setIndexingDelay(nonNegative(ms, 'searchIndexingDelayMs'));
    },
    throttle(times, policy = 'TEN_SECONDLY_ROLLING') {
      limiter.throttled.replace(policy, nonNegative(times, 'throttle(times)'));
    },
    failNext(times, opts = {}) {
      failing.replace(
        { status: opts.status ?? 500, commit: opts.commit ?? false },
        nonNegative(times, 'failNext(times)'),
      );
    },
    denyScope(objectType) {
      denied.add(need(objectType));
    },
    allowScope(objectType) {
      denied.delete(need(objectType));
    },
    close: server.close,
  };
}

const nonNegative = (n: number, what: string): number => checkNonNegative(n, `hubspot sandbox: ${what}`);
