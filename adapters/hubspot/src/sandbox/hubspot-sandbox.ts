import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import {
  createFaultQueue,
  createRequestLog,
  createSandboxClock,
  nonNegative as checkNonNegative,
  startLoopbackServer,
  type SandboxReply as Reply,
} from '@retrysafe/sandbox-kit';
import {
  authenticationError,
  conflictError,
  missingScopesError,
  notFoundError,
  propertyValidationError,
  rateLimitError,
  serverError,
  validationError,
  type HubSpotErrorBody,
  type PropertyProblem,
  type RateLimitPolicy,
} from './hubspot-errors-shapes.js';

/** One CRM object type the sandbox holds. */
export interface SandboxObjectType {
  /** Names it is addressed by in paths: `tickets`, or a custom object's `2-100` and `p100_orders`. */
  readonly names: readonly string[];
  /** Singular label used in conflict messages (`Contact already exists. Existing ID: 7`). */
  readonly label: string;
  /** Property names that exist; any other name is a `PROPERTY_DOESNT_EXIST` validation error. */
  readonly properties: readonly string[];
  /** Unique-value properties (`hasUniqueValue: true`): a second record with the same value is refused. */
  readonly unique: readonly string[];
  /** Properties a create must carry. */
  readonly required?: readonly string[];
  /** The scope a 403 names when this type is denied. */
  readonly scope: string;
}

export interface HubSpotSandboxOptions {
  /** Port to bind on 127.0.0.1 (default 0: any free port). */
  readonly port?: number;
  /** When set, any other bearer token gets a 401. Default: any non-empty bearer token is accepted. */
  readonly accessToken?: string;
  /** Unique-value property added to tickets and the custom object type (default `retrysafe_operation_id`). */
  readonly idProperty?: string;
  /** How long after a write the record becomes visible to CRM search (default 0). HubSpot says "a few moments". */
  readonly searchIndexingDelayMs?: number;
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
      properties: ['subject', 'content', 'hs_pipeline', 'hs_pipeline_stage', 'hs_ticket_priority', 'hs_ticket_category', idProperty],
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

interface Version {
  readonly visibleAt: number;
  readonly properties: Readonly<Record<string, string>>;
}

interface StoredRecord {
  readonly id: string;
  properties: Record<string, string>;
  readonly createdAt: number;
  updatedAt: number;
  /** What CRM search sees: the latest version whose visibleAt has passed. */
  readonly versions: Version[];
}

interface TypeStore {
  readonly type: SandboxObjectType;
  readonly records: Map<string, StoredRecord>;
  writes: number;
}

const BATCH_MAX = 100;
const SEARCH_PAGE_MAX = 200;

/**
 * Starts a loopback HTTP server that behaves as HubSpot's CRM v3 objects API does for the adapter's
 * operations. Server, clock, fault queues and request log are the sandbox kit (@retrysafe/sandbox-kit).
 */
export async function startHubSpotSandbox(options: HubSpotSandboxOptions = {}): Promise<HubSpotSandbox> {
  const idProperty = options.idProperty ?? DEFAULT_ID_PROPERTY;
  const types = options.objectTypes ?? defaultObjectTypes(idProperty);
  const stores = new Map<string, TypeStore>();
  for (const type of types) {
    const store: TypeStore = { type, records: new Map(), writes: 0 };
    for (const name of type.names) stores.set(name, store);
  }
  const clock = createSandboxClock(options.clock, 'hubspot sandbox');
  const now = clock.now;
  let indexingDelayMs = nonNegative(options.searchIndexingDelayMs ?? 0, 'searchIndexingDelayMs');
  const searchPerSecond = options.searchPerSecond === undefined ? 5 : options.searchPerSecond;
  const tenSecondlyMax = options.tenSecondlyMax === undefined ? 190 : options.tenSecondlyMax;
  const dailyMax = options.dailyMax ?? 1_000_000;
  let nextId = 1001;
  let dailyUsed = 0;
  const recent: number[] = [];
  const recentSearches: number[] = [];
  const throttled = createFaultQueue<RateLimitPolicy>('hubspot sandbox');
  const failing = createFaultQueue<{ readonly status: number; readonly commit: boolean }>('hubspot sandbox');
  const denied = new Set<TypeStore>();
  const log = createRequestLog<SandboxRequest>('hubspot sandbox');

  const storeOf = (kind: string): TypeStore | undefined => stores.get(OPERATION_KINDS[kind] ?? kind);
  const canonical = (store: TypeStore) => store.type.names[0]!;

  function toJson(rec: StoredRecord, select: readonly string[] | null) {
    const all = systemProperties(rec);
    const properties: Record<string, string | null> = {};
    const names = select ?? Object.keys(all);
    for (const name of names) properties[name] = all[name] ?? null;
    return {
      id: rec.id,
      properties,
      createdAt: new Date(rec.createdAt).toISOString(),
      updatedAt: new Date(rec.updatedAt).toISOString(),
      archived: false,
    };
  }

  function systemProperties(rec: StoredRecord): Record<string, string> {
    return {
      ...rec.properties,
      hs_object_id: rec.id,
      createdate: new Date(rec.createdAt).toISOString(),
      hs_lastmodifieddate: new Date(rec.updatedAt).toISOString(),
    };
  }

  function findByUnique(store: TypeStore, property: string, value: string, except?: string): StoredRecord | undefined {
    for (const rec of store.records.values()) {
      if (rec.id !== except && rec.properties[property] === value) return rec;
    }
    return undefined;
  }

  function checkProperties(store: TypeStore, props: unknown, forCreate: boolean): Checked<Record<string, string>> {
    if (typeof props !== 'object' || props === null || Array.isArray(props)) return refuse({ status: 400, body: validationError('Invalid input JSON: "properties" must be an object') });
    const problems: PropertyProblem[] = [];
    const out: Record<string, string> = {};
    for (const [name, value] of Object.entries(props as Record<string, unknown>)) {
      if (!store.type.properties.includes(name)) {
        problems.push({ name, error: 'PROPERTY_DOESNT_EXIST', message: `Property "${name}" does not exist` });
        continue;
      }
      if (value === null || typeof value === 'object') {
        problems.push({ name, error: 'INVALID_PROPERTY_VALUE', message: `Property "${name}" must be a string, number or boolean` });
        continue;
      }
      out[name] = String(value);
    }
    if (forCreate) {
      for (const name of store.type.required ?? []) {
        if (out[name] === undefined || out[name] === '') problems.push({ name, error: 'REQUIRED_PROPERTY', message: `Property "${name}" is required` });
      }
    }
    if (problems.length) return refuse({ status: 400, body: propertyValidationError(problems) });
    return { ok: true, value: out };
  }

  /** A conflict with another record holding one of the unique values, or null. */
  function uniqueConflict(store: TypeStore, props: Record<string, string>, except?: string): Reply | null {
    for (const property of store.type.unique) {
      const value = props[property];
      if (value === undefined || value === '') continue;
      const other = findByUnique(store, property, value, except);
      if (other) return { status: 409, body: conflictError(store.type.label, other.id) };
    }
    return null;
  }

  function write(store: TypeStore, rec: StoredRecord | null, props: Record<string, string>): StoredRecord {
    const t = now();
    if (rec === null) {
      rec = { id: String(nextId++), properties: {}, createdAt: t, updatedAt: t, versions: [] };
      store.records.set(rec.id, rec);
    }
    for (const [name, value] of Object.entries(props)) {
      if (value === '') delete rec.properties[name];
      else rec.properties[name] = value;
    }
    rec.updatedAt = t;
    rec.versions.push({ visibleAt: t + indexingDelayMs, properties: { ...systemProperties(rec) } });
    store.writes++;
    return rec;
  }

  function locate(store: TypeStore, id: string, idProp: string | null): Checked<StoredRecord | undefined> {
    if (idProp === null || idProp === 'hs_object_id') return { ok: true, value: store.records.get(id) };
    if (!store.type.unique.includes(idProp)) return refuse({ status: 400, body: validationError(`${idProp} is not a unique identifier property for this object type`) });
    return { ok: true, value: findByUnique(store, idProp, id) };
  }

  function create(store: TypeStore, body: Record<string, unknown>): Reply {
    const props = checkProperties(store, body.properties, true);
    if (!props.ok) return props.reply;
    const conflict = uniqueConflict(store, props.value);
    if (conflict) return conflict;
    const rec = write(store, null, props.value);
    return { status: 201, body: toJson(rec, null) };
  }

  function update(store: TypeStore, id: string, idProp: string | null, body: Record<string, unknown>): Reply {
    const located = locate(store, id, idProp);
    if (!located.ok) return located.reply;
    const found = located.value;
    if (!found) return { status: 404, body: notFoundError() };
    const props = checkProperties(store, body.properties, false);
    if (!props.ok) return props.reply;
    const conflict = uniqueConflict(store, props.value, found.id);
    if (conflict) return conflict;
    const rec = write(store, found, props.value);
    return { status: 200, body: toJson(rec, null) };
  }

  function read(store: TypeStore, id: string, idProp: string | null, select: string[] | null): Reply {
    const located = locate(store, id, idProp);
    if (!located.ok) return located.reply;
    const found = located.value;
    if (!found) return { status: 404, body: notFoundError() };
    return { status: 200, body: toJson(found, select) };
  }

  function upsert(store: TypeStore, body: Record<string, unknown>): Reply {
    const inputs = body.inputs;
    if (!Array.isArray(inputs) || inputs.length === 0) return { status: 400, body: validationError('Invalid input JSON: "inputs" must be a non-empty array') };
    if (inputs.length > BATCH_MAX) return { status: 400, body: validationError(`Batch input is limited to ${BATCH_MAX} inputs`) };
    const startedAt = new Date(now()).toISOString();
    // Validate every input before applying any, as a batch does.
    const planned: { idProp: string; id: string; props: Record<string, string> }[] = [];
    const seen = new Set<string>();
    for (const input of inputs as Record<string, unknown>[]) {
      const idProp = typeof input?.idProperty === 'string' ? input.idProperty : 'hs_object_id';
      const id = input?.id;
      if (typeof id !== 'string' || id === '') return { status: 400, body: validationError('Each input needs a non-empty "id"') };
      if (!store.type.unique.includes(idProp)) return { status: 400, body: validationError(`${idProp} is not a unique identifier property for this object type`) };
      if (seen.has(`${idProp}=${id}`)) return { status: 400, body: validationError(`Duplicate IDs found in batch input: [${id}]. IDs must be unique`) };
      seen.add(`${idProp}=${id}`);
      const props = checkProperties(store, input.properties ?? {}, false);
      if (!props.ok) return props.reply;
      if (props.value[idProp] !== undefined && props.value[idProp] !== id) return { status: 400, body: validationError(`"${idProp}" in properties differs from the input id`) };
      planned.push({ idProp, id, props: props.value });
    }
    const results = planned.map(({ idProp, id, props }) => {
      const existing = findByUnique(store, idProp, id);
      const rec = write(store, existing ?? null, { ...props, [idProp]: id });
      return { ...toJson(rec, null), new: existing === undefined };
    });
    return { status: 200, body: { status: 'COMPLETE', results, startedAt, completedAt: new Date(now()).toISOString() } };
  }

  function search(store: TypeStore, body: Record<string, unknown>): Reply {
    const limit = body.limit === undefined ? 10 : Number(body.limit);
    if (!Number.isInteger(limit) || limit < 0 || limit > SEARCH_PAGE_MAX) return { status: 400, body: validationError(`limit must be between 0 and ${SEARCH_PAGE_MAX}`) };
    const groups = Array.isArray(body.filterGroups) ? (body.filterGroups as { filters?: unknown }[]) : [];
    const select = Array.isArray(body.properties) && body.properties.length ? (body.properties as string[]) : null;
    const after = body.after === undefined ? 0 : Number(body.after);
    const t = now();
    const visible: { rec: StoredRecord; props: Readonly<Record<string, string>> }[] = [];
    for (const rec of store.records.values()) {
      let seenVersion: Version | undefined;
      for (const v of rec.versions) if (v.visibleAt <= t) seenVersion = v;
      if (!seenVersion) continue;
      if (groups.length && !groups.some((g) => matchesGroup(seenVersion!.properties, g))) continue;
      visible.push({ rec, props: seenVersion.properties });
    }
    visible.sort((a, b) => Number(a.rec.id) - Number(b.rec.id));
    const page = visible.slice(after, after + limit);
    const results = page.map(({ rec, props }) => {
      const properties: Record<string, string | null> = {};
      for (const name of select ?? ['hs_object_id', 'createdate', 'hs_lastmodifieddate']) properties[name] = props[name] ?? null;
      return { id: rec.id, properties, createdAt: new Date(rec.createdAt).toISOString(), updatedAt: props.hs_lastmodifieddate, archived: false };
    });
    const next = after + limit < visible.length ? { next: { after: String(after + limit) } } : {};
    return { status: 200, body: { total: visible.length, results, ...(Object.keys(next).length ? { paging: next } : {}) } };
  }

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

  function route(method: string, path: string, query: URLSearchParams, rawBody: string, headers: IncomingHttpHeaders): { reply: Reply; objectType: string | null; kind: SandboxRequestKind } {
    const m = /^\/crm\/v3\/objects\/([^/]+)(?:\/([^/]+)(?:\/([^/]+))?)?\/?$/.exec(path);
    const store = m ? stores.get(decodeURIComponent(m[1]!)) : undefined;
    const kind: SandboxRequestKind = !m
      ? 'other'
      : m[2] === 'batch' && m[3] === 'upsert'
        ? 'upsert'
        : m[2] === 'search'
          ? 'search'
          : method === 'POST' && !m[2]
            ? 'create'
            : method === 'PATCH'
              ? 'update'
              : method === 'GET'
                ? 'read'
                : 'other';
    const objectType = store ? canonical(store) : null;
    const done = (reply: Reply) => ({ reply, objectType, kind });

    const auth = headers.authorization;
    const token = typeof auth === 'string' && auth.startsWith('Bearer ') ? auth.slice(7) : '';
    if (!token || (options.accessToken !== undefined && token !== options.accessToken)) return done({ status: 401, body: authenticationError() });
    if (!m || !store) return done({ status: 404, body: notFoundError() });
    if (denied.has(store)) return done({ status: 403, body: missingScopesError(store.type.scope) });

    const t = now();
    dailyUsed++;
    while (recent.length && recent[0]! <= t - 10_000) recent.shift();
    recent.push(t);
    const throttle = throttled.take();
    if (throttle) return done(rateLimited(throttle));
    if (dailyUsed > dailyMax) return done(rateLimited('DAILY'));
    if (tenSecondlyMax !== null && recent.length > tenSecondlyMax) return done(rateLimited('TEN_SECONDLY_ROLLING'));
    if (kind === 'search' && searchPerSecond !== null) {
      while (recentSearches.length && recentSearches[0]! <= t - 1000) recentSearches.shift();
      if (recentSearches.length >= searchPerSecond) return done(rateLimited('SECONDLY'));
      recentSearches.push(t);
    }

    let body: Record<string, unknown> = {};
    if (rawBody.length) {
      try {
        const parsed: unknown = JSON.parse(rawBody);
        if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return done({ status: 400, body: validationError('Invalid input JSON: expected an object') });
        body = parsed as Record<string, unknown>;
      } catch {
        return done({ status: 400, body: validationError('Invalid input JSON on line 1') });
      }
    }

    const isWrite = kind === 'create' || kind === 'update' || kind === 'upsert';
    const fail = isWrite ? failing.take() : undefined;
    if (fail && !fail.commit) return done({ status: fail.status, body: serverError(fail.status) });
    const idProp = query.get('idProperty');
    let reply: Reply;
    if (kind === 'upsert' && method === 'POST') reply = upsert(store, body);
    else if (kind === 'search' && method === 'POST') reply = search(store, body);
    else if (kind === 'create') reply = create(store, body);
    else if (kind === 'update' && m[2] && !m[3]) reply = update(store, decodeURIComponent(m[2]), idProp, body);
    else if (kind === 'read' && m[2] && !m[3]) {
      // The SDK repeats the parameter (properties=a&properties=b); HubSpot also takes a comma list.
      const props = query.getAll('properties').flatMap((v) => v.split(',')).filter(Boolean);
      reply = read(store, decodeURIComponent(m[2]), idProp, props.length ? props : null);
    } else reply = { status: 405, body: validationError(`${method} is not supported on ${path}`) };
    if (fail) return done({ status: fail.status, body: serverError(fail.status) });
    return done(reply);
  }

  const server = await startLoopbackServer({
    port: options.port ?? 0,
    contentType: 'application/json;charset=utf-8',
    keepAliveTimeoutMs: 5_000, // Node's default, which this sandbox always had (the kit defaults to 1 s)
    handle: (req) => {
      let result: ReturnType<typeof route>;
      try {
        result = route(req.method, req.path, req.query, req.rawBody, req.headers);
      } catch {
        result = { reply: { status: 500, body: serverError(500) }, objectType: null, kind: 'other' };
      }
      const { reply, objectType, kind } = result;
      log.record({ method: req.method, path: req.path + req.search, objectType, kind, status: reply.status });
      return reply;
    },
    headers: (_req, reply) => ({
      'X-HubSpot-Correlation-Id': (reply.body as HubSpotErrorBody | undefined)?.correlationId ?? randomUUID(),
      ...rateLimitHeaders(tenSecondlyMax === null ? 190 : tenSecondlyMax - recent.length),
    }),
  });

  const need = (kind: string): TypeStore => {
    const store = storeOf(kind);
    if (!store) throw new RangeError(`hubspot sandbox: unknown object type or operation "${kind}" (known: ${[...stores.keys()].join(', ')})`);
    return store;
  };
  const uniqueStores = () => [...new Set(stores.values())];
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
    records: (kind) => (kind === undefined ? uniqueStores() : [need(kind)]).flatMap((s) => [...s.records.values()].map((r) => recordOf(s, r))),
    writes: (kind) => (kind === undefined ? uniqueStores().reduce((n, s) => n + s.writes, 0) : need(kind).writes),
    seed(objectType, properties) {
      const store = need(objectType);
      const props = checkProperties(store, properties, false);
      if (!props.ok) throw new RangeError(`hubspot sandbox: cannot seed ${objectType}: ${(props.reply.body as HubSpotErrorBody).message}`);
      const rec = write(store, null, props.value);
      store.writes--; // seeding is not a write the adapter made
      return recordOf(store, rec);
    },
    advance: clock.advance,
    setSearchIndexingDelay(ms) {
      indexingDelayMs = nonNegative(ms, 'searchIndexingDelayMs');
    },
    throttle(times, policy = 'TEN_SECONDLY_ROLLING') {
      throttled.replace(policy, nonNegative(times, 'throttle(times)'));
    },
    failNext(times, opts = {}) {
      failing.replace({ status: opts.status ?? 500, commit: opts.commit ?? false }, nonNegative(times, 'failNext(times)'));
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

type Checked<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly reply: Reply };

function refuse(reply: Reply): { readonly ok: false; readonly reply: Reply } {
  return { ok: false, reply };
}

const nonNegative = (n: number, what: string): number => checkNonNegative(n, `hubspot sandbox: ${what}`);

function matchesGroup(props: Readonly<Record<string, string>>, group: { filters?: unknown }): boolean {
  const filters = Array.isArray(group.filters) ? (group.filters as Record<string, unknown>[]) : [];
  return filters.every((f) => {
    const name = String(f.propertyName ?? '');
    const value = props[name];
    switch (f.operator) {
      case 'EQ':
        return value !== undefined && value === String(f.value);
      case 'NEQ':
        return value !== String(f.value);
      case 'IN':
        return value !== undefined && Array.isArray(f.values) && f.values.map(String).includes(value);
      case 'NOT_IN':
        return !(Array.isArray(f.values) && value !== undefined && f.values.map(String).includes(value));
      case 'HAS_PROPERTY':
        return value !== undefined && value !== '';
      case 'NOT_HAS_PROPERTY':
        return value === undefined || value === '';
      default:
        return false;
    }
  });
}
