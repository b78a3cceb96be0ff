import { randomUUID } from 'node:crypto';
import {
  createFaultScripts,
  createRequestLog,
  createSandboxClock,
  isPlainObject as isObj,
  type Route as KitRoute,
  parseJsonBody,
  routeRequest,
  type SandboxReply,
  startLoopbackServer,
} from '@retrysafe/sandbox-kit';
import { createDirectory, SANDBOX_SIGNED_IN_USER } from './msgraph-directory.js';
import type {
  DuplicateTransactionBehaviour,
  MsGraphSandbox,
  MsGraphSandboxOptions,
  SandboxEvent,
  SandboxFault,
  SandboxKind,
  SandboxMessage,
  SandboxRecord,
  SandboxRequest,
  SandboxTask,
} from './msgraph-sandbox-types.js';

/**
 * A loopback emulation of the Microsoft Graph endpoints the adapter uses, behaving as
 * docs/evidence/msgraph.md documents: sendMail answers 202 with no body and no idempotency; the sent
 * message reaches Sent Items only after a (configurable) delay; Sent Items, events and To Do tasks
 * can be searched with the `$filter`s the adapter sends; events honour transactionId (a duplicate
 * POST does not create a second event); scripted throttling (429/503/504 with Retry-After) and
 * answers Graph gives after applying the effect; every record and every request is counted. Network
 * faults — a lost response, an answer held past the client's timeout, a response cut off mid-body —
 * are the testkit's fault proxy's (`drop-response`, `delay`, `truncate-response`) in front of it:
 * `graphRequestKind` tells a proxy script which of this sandbox's kinds a request is.
 */

interface Route {
  kind: SandboxKind;
  mailbox: string;
  /** The user's object id the mailbox names now: Graph's mailbox is the user, however the path spells it. */
  user: string;
  listId?: string;
}

const V = '(?:v1\\.0|beta)';
const MAILBOX = '(me|users/([^/]+))';
/** The Graph endpoints the adapter uses, each with its sandbox kind (faults and counts are per kind). */
const ENDPOINTS: readonly { method: string; re: RegExp; kind: SandboxKind }[] = [
  { method: 'POST', re: new RegExp(`^/${V}/${MAILBOX}/sendMail$`, 'i'), kind: 'mail.send' },
  { method: 'GET', re: new RegExp(`^/${V}/${MAILBOX}/mailFolders/sentitems/messages$`, 'i'), kind: 'mail.lookup' },
  { method: 'POST', re: new RegExp(`^/${V}/${MAILBOX}/events$`, 'i'), kind: 'events.create' },
  { method: 'GET', re: new RegExp(`^/${V}/${MAILBOX}/events$`, 'i'), kind: 'events.lookup' },
  { method: 'POST', re: new RegExp(`^/${V}/${MAILBOX}/todo/lists/([^/]+)/tasks$`, 'i'), kind: 'todo.tasks.create' },
  { method: 'GET', re: new RegExp(`^/${V}/${MAILBOX}/todo/lists/([^/]+)/tasks$`, 'i'), kind: 'todo.tasks.lookup' },
];
/** The endpoints as the sandbox kit's route table. */
const ROUTES: readonly KitRoute<{ kind: SandboxKind; m: RegExpExecArray }>[] = ENDPOINTS.map((e) => ({
  method: e.method,
  path: e.re,
  handle: (_req, m) => ({ kind: e.kind, m: m! }),
}));

/**
 * The sandbox kind of a request (`path` with or without its query), or null for one the sandbox does
 * not serve: a fault proxy's script uses it to fault one kind among several on one sandbox.
 */
export function graphRequestKind(method: string, path: string): SandboxKind | null {
  const bare = path.split('?')[0]!;
  return ENDPOINTS.find((r) => r.method === method.toUpperCase() && r.re.test(bare))?.kind ?? null;
}

const EXT_FILTER =
  /^singleValueExtendedProperties\/Any\(\s*(\w+)\s*:\s*\1\/id eq '((?:[^']|'')*)' and \1\/value eq '((?:[^']|'')*)'\s*\)$/i;
const LINK_FILTER =
  /^linkedResources\/any\(\s*(\w+)\s*:\s*(?:\1\/applicationName eq '((?:[^']|'')*)' and )?\1\/externalId eq '((?:[^']|'')*)'\s*\)$/i;
const unquote = (s: string) => s.replace(/''/g, "'");
/** Relations Graph returns only when `$expand`ed. */
const EXPANDABLE = new Set(['singleValueExtendedProperties', 'linkedResources']);

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** What the sandbox holds: the records, and the settings the endpoints read. */
interface GraphState {
  readonly records: SandboxRecord[];
  readonly now: () => number;
  sentItemsDelayMs: number;
  readonly duplicateTx: DuplicateTransactionBehaviour;
  /** Events created before the last expireKeys(): their transactionId no longer folds a resend. */
  readonly expired: Set<SandboxEvent>;
  readonly todoLists: ReadonlySet<string>;
  readonly pageSize: number;
}

/** Validates and applies a create; returns the status and body of a normal answer. */
function apply(state: GraphState, route: Route, body: unknown): { status: number; body: unknown } {
  if (!isObj(body)) throw new HttpError(400, 'BadRequest', 'Empty or non-object payload.');
  const t = state.now();
  if (route.kind === 'mail.send') {
    const msg = body.message;
    if (!isObj(msg))
      throw new HttpError(400, 'ErrorInvalidParameter', "The value of the parameter 'Message' is empty.");
    const to = recipients(msg.toRecipients, true);
    recipients(msg.ccRecipients, false);
    recipients(msg.bccRecipients, false);
    const props = extProps(msg.singleValueExtendedProperties);
    const saved = body.saveToSentItems !== false;
    const rec: SandboxMessage = {
      kind: 'mail.send',
      id: `AAMkMsg${randomUUID().replace(/-/g, '')}`,
      mailbox: route.mailbox,
      user: route.user,
      internetMessageId: `<${randomUUID()}@sandbox.graph.test>`,
      subject: typeof msg.subject === 'string' ? msg.subject : null,
      toRecipients: to,
      extendedProperties: props,
      sentAt: t,
      visibleAt: saved ? t + state.sentItemsDelayMs : Number.POSITIVE_INFINITY,
    };
    state.records.push(rec);
    return { status: 202, body: undefined };
  }
  if (route.kind === 'events.create') {
    if (typeof body.subject !== 'string') throw new HttpError(400, 'ErrorInvalidRequest', 'subject is required.');
    for (const f of ['start', 'end'] as const) {
      const v = body[f];
      if (!isObj(v) || typeof v.dateTime !== 'string' || typeof v.timeZone !== 'string')
        throw new HttpError(400, 'ErrorInvalidRequest', `${f} must be a dateTimeTimeZone.`);
    }
    const props = extProps(body.singleValueExtendedProperties);
    const tx = typeof body.transactionId === 'string' ? body.transactionId : null;
    if (tx !== null && state.duplicateTx !== 'create-new') {
      const existing = state.records.find(
        (r): r is SandboxEvent =>
          r.kind === 'events.create' && r.user === route.user && r.transactionId === tx && !state.expired.has(r),
      );
      if (existing) {
        if (state.duplicateTx === 'conflict')
          throw new HttpError(409, 'ErrorDuplicateTransactionId', 'An event with this transactionId already exists.');
        return { status: 201, body: eventJson(existing) };
      }
    }
    const rec: SandboxEvent = {
      kind: 'events.create',
      id: `AAMkEvt${randomUUID().replace(/-/g, '')}`,
      mailbox: route.mailbox,
      user: route.user,
      iCalUId: `040000008200E00074C5B7101A82E008${randomUUID().replace(/-/g, '').toUpperCase()}`,
      transactionId: tx,
      subject: body.subject,
      start: body.start,
      end: body.end,
      extendedProperties: props,
      createdAt: t,
    };
    state.records.push(rec);
    return { status: 201, body: eventJson(rec) };
  }
  // todo.tasks.create
  if (!route.listId || !state.todoLists.has(route.listId))
    throw new HttpError(404, 'ErrorItemNotFound', 'The specified object was not found in the store.');
  if (typeof body.title !== 'string' || body.title.trim() === '')
    throw new HttpError(400, 'invalidRequest', 'title is required.');
  const links = body.linkedResources === undefined ? [] : body.linkedResources;
  if (!Array.isArray(links) || !links.every(isObj))
    throw new HttpError(400, 'invalidRequest', 'linkedResources must be an array of objects.');
  const rec: SandboxTask = {
    kind: 'todo.tasks.create',
    id: `AAMkTask${randomUUID().replace(/-/g, '')}`,
    mailbox: route.mailbox,
    user: route.user,
    listId: route.listId,
    title: body.title,
    linkedResources: links.map((l) => ({
      ...(typeof l.applicationName === 'string' ? { applicationName: l.applicationName } : {}),
      ...(typeof l.displayName === 'string' ? { displayName: l.displayName } : {}),
      ...(typeof l.externalId === 'string' ? { externalId: l.externalId } : {}),
    })),
    createdAt: t,
  };
  state.records.push(rec);
  return { status: 201, body: taskJson(rec) };
}

function lookup(
  state: GraphState,
  route: Route,
  query: URLSearchParams,
  self: string,
): { status: number; body: unknown } {
  const filter = query.get('$filter');
  const fields = query.get('$select');
  const top = Number(query.get('$top') ?? '10');
  if (!filter) throw new HttpError(400, 'BadRequest', 'This sandbox only answers filtered lookups.');
  let items: Record<string, unknown>[];
  if (route.kind === 'mail.lookup' || route.kind === 'events.lookup') {
    const m = EXT_FILTER.exec(filter.trim());
    if (!m) throw new HttpError(400, 'ErrorInvalidUrlQueryFilter', `Unsupported $filter: ${filter}`);
    const id = unquote(m[2]!).toLowerCase();
    // Graph documents the value comparison as case-insensitive.
    const value = unquote(m[3]!).toLowerCase();
    const tagged = (props: readonly { id: string; value: string }[]) =>
      props.some((p) => p.id.toLowerCase() === id && p.value.toLowerCase() === value);
    const tagOf = (props: readonly { id: string; value: string }[]) => props.filter((p) => p.id.toLowerCase() === id);
    if (route.kind === 'mail.lookup') {
      const t = state.now();
      items = state.records
        .filter(
          (r): r is SandboxMessage =>
            r.kind === 'mail.send' && r.user === route.user && r.visibleAt <= t && tagged(r.extendedProperties),
        )
        .map((r) => ({ ...messageJson(r), singleValueExtendedProperties: tagOf(r.extendedProperties) }));
    } else {
      items = state.records
        .filter(
          (r): r is SandboxEvent => r.kind === 'events.create' && r.user === route.user && tagged(r.extendedProperties),
        )
        .map((r) => ({ ...eventJson(r), singleValueExtendedProperties: tagOf(r.extendedProperties) }));
    }
  } else {
    if (!route.listId || !state.todoLists.has(route.listId))
      throw new HttpError(404, 'ErrorItemNotFound', 'The specified object was not found in the store.');
    const m = LINK_FILTER.exec(filter.trim());
    if (!m) throw new HttpError(400, 'invalidRequest', `Unsupported $filter: ${filter}`);
    const applicationName = m[2] === undefined ? undefined : unquote(m[2]);
    const externalId = unquote(m[3]!);
    items = state.records
      .filter(
        (r): r is SandboxTask =>
          r.kind === 'todo.tasks.create' &&
          r.user === route.user &&
          r.listId === route.listId &&
          // Case-sensitivity of this filter is not documented: the sandbox takes the case-insensitive worst case.
          r.linkedResources.some(
            (l) =>
              l.externalId?.toLowerCase() === externalId.toLowerCase() &&
              (applicationName === undefined || l.applicationName?.toLowerCase() === applicationName.toLowerCase()),
          ),
      )
      .map(taskJson);
  }
  // Paged by $skip, as Graph's message, event and task lists link their next page.
  const skip = Number(query.get('$skip') ?? '0');
  const end = skip + Math.min(Number.isFinite(top) && top > 0 ? top : 10, state.pageSize);
  const value = items.slice(skip, end).map((i) => select(i, fields, query.get('$expand')));
  if (end >= items.length) return { status: 200, body: { value } };
  const next = new URLSearchParams(query);
  next.set('$skip', String(end));
  return { status: 200, body: { value, '@odata.nextLink': `${self}?${next}` } };
}

function readJson(raw: string): unknown {
  const parsed = parseJsonBody(raw);
  if (!parsed.ok) throw new HttpError(400, 'BadRequest', 'Unable to read JSON request payload.');
  return parsed.value;
}

function extProps(v: unknown): { id: string; value: string }[] {
  if (v === undefined) return [];
  if (!Array.isArray(v) || !v.every((p) => isObj(p) && typeof p.id === 'string' && typeof p.value === 'string')) {
    throw new HttpError(400, 'ErrorInvalidExtendedProperty', 'singleValueExtendedProperties must be [{ id, value }].');
  }
  return v.map((p) => ({ id: p.id as string, value: p.value as string }));
}

function recipients(v: unknown, required: boolean): string[] {
  if (v === undefined && !required) return [];
  if (!Array.isArray(v) || (required && v.length === 0))
    throw new HttpError(400, 'ErrorInvalidRecipients', 'At least one recipient is not valid.');
  return v.map((r) => {
    const address = isObj(r) && isObj(r.emailAddress) ? r.emailAddress.address : undefined;
    if (typeof address !== 'string' || !/^[^@\s]+@[^@\s]+$/.test(address))
      throw new HttpError(400, 'ErrorInvalidRecipients', 'At least one recipient is not valid.');
    return address;
  });
}

function eventJson(e: SandboxEvent) {
  return {
    id: e.id,
    iCalUId: e.iCalUId,
    transactionId: e.transactionId,
    subject: e.subject,
    start: e.start,
    end: e.end,
    createdDateTime: new Date(e.createdAt).toISOString(),
    webLink: `https://outlook.sandbox.test/owa/?itemid=${e.id}`,
  };
}

function taskJson(t: SandboxTask) {
  return {
    id: t.id,
    title: t.title,
    status: 'notStarted',
    createdDateTime: new Date(t.createdAt).toISOString(),
    linkedResources: t.linkedResources,
  };
}

function messageJson(m: SandboxMessage) {
  return {
    id: m.id,
    internetMessageId: m.internetMessageId,
    subject: m.subject,
    sentDateTime: new Date(m.sentAt).toISOString(),
  };
}

/** The selected fields and the expanded relations (`$expand=name(...)`, whose own options the sandbox ignores). */
function select(item: Record<string, unknown>, fields: string | null, expand: string | null): Record<string, unknown> {
  const expanded = new Set((expand ?? '').split(',').map((e) => e.split('(')[0]!.trim()));
  const shown = Object.fromEntries(Object.entries(item).filter(([k]) => !EXPANDABLE.has(k) || expanded.has(k)));
  if (!fields) return shown;
  const keep = new Set([...fields.split(','), ...expanded].map((f) => f.trim()).filter(Boolean));
  return Object.fromEntries(Object.entries(shown).filter(([k]) => keep.has(k) || k === 'id'));
}

/** Starts the sandbox on 127.0.0.1 (port 0 = any free port). */
export async function startMsGraphSandbox(options: MsGraphSandboxOptions = {}): Promise<MsGraphSandbox> {
  const clock = createSandboxClock(options.now, 'msgraph sandbox');
  const now = clock.now;
  const faults = createFaultScripts<SandboxKind, SandboxFault>('pass', options.faults);
  const log = createRequestLog<{ -readonly [K in keyof SandboxRequest]: SandboxRequest[K] }>('msgraph sandbox');
  const signedIn = options.signedInUser === undefined ? SANDBOX_SIGNED_IN_USER : options.signedInUser;
  const directory = createDirectory(signedIn);
  // By object id: a user is there under its UPN and its id alike.
  const users = options.users ? new Set(options.users.map(directory.idOf)) : null;
  const state: GraphState = {
    records: [],
    now,
    sentItemsDelayMs: options.sentItemsDelayMs ?? 0,
    duplicateTx: options.duplicateTransactionId ?? 'return-existing',
    expired: new Set(),
    todoLists: new Set(options.todoLists ?? ['tasks']),
    pageSize: options.pageSize ?? Number.POSITIVE_INFINITY,
  };
  const records = state.records;

  function reply(status: number, body: unknown, requestId: string, extra: Record<string, string> = {}): SandboxReply {
    return { status, body, headers: { 'request-id': requestId, 'client-request-id': requestId, ...extra } };
  }

  function errorBody(code: string, message: string, requestId: string) {
    return {
      error: {
        code,
        message,
        innerError: { 'request-id': requestId, date: new Date(now()).toISOString().slice(0, 19) },
      },
    };
  }

  function mailboxOf(m: RegExpExecArray): Pick<Route, 'mailbox' | 'user'> {
    const user = m[2];
    if (user === undefined) return { mailbox: 'me', user: signedIn?.id ?? 'me' };
    const id = decodeURIComponent(user);
    if (users && !users.has(directory.idOf(id)))
      throw new HttpError(404, 'ErrorInvalidUser', `The requested user '${id}' is invalid.`);
    return { mailbox: id.toLowerCase(), user: directory.idOf(id) };
  }

  const server = await startLoopbackServer({
    port: options.port ?? 0,
    trailingSlash: true,
    keepAliveTimeoutMs: 5_000, // Node's default, which this sandbox always had (the kit defaults to 1 s)
    handle: async (req) => {
      const { method, path, search, query, headers, rawBody } = req;
      const requestId = randomUUID();
      const matched = routeRequest(ROUTES, req)?.value ?? null;
      const entry = {
        method,
        path,
        query: search,
        retryAttempt: (headers['retry-attempt'] as string | undefined) ?? null,
      };
      const user = directory.answer(method, path);
      if (!matched && user) {
        log.record({ ...entry, kind: 'other', call: 0, fault: 'pass', status: user.status });
        const body = user.code ? errorBody(user.code, String(user.body), requestId) : user.body;
        return reply(user.status, body, requestId);
      }
      if (!matched) {
        log.record({ ...entry, kind: 'other', call: 0, fault: 'pass', status: 404 });
        return reply(
          404,
          errorBody('UnknownRequest', `Resource not found for the segment '${path}'.`, requestId),
          requestId,
        );
      }
      const kind = matched.kind;
      const { call, fault } = faults.take(kind);
      const logged = log.record({
        ...entry,
        kind,
        call,
        fault: typeof fault === 'string' ? fault : `${fault.kind}${'status' in fault ? ':' + fault.status : ''}`,
        status: null,
      });
      const answer = (status: number, body: unknown, extra: Record<string, string> = {}) => {
        logged.status = status;
        return reply(status, body, requestId, extra);
      };
      try {
        const body = readJson(rawBody);
        if (options.accessToken !== undefined && headers.authorization !== `Bearer ${options.accessToken}`) {
          throw new HttpError(401, 'InvalidAuthenticationToken', 'Access token is empty or invalid.');
        }
        const route: Route = {
          kind,
          ...mailboxOf(matched.m),
          ...(matched.m[3] !== undefined ? { listId: decodeURIComponent(matched.m[3]) } : {}),
        };
        const isCreate = method === 'POST';
        if (typeof fault === 'object' && fault.kind === 'status') {
          if (fault.commit && isCreate) apply(state, route, body);
          const extra: Record<string, string> =
            fault.retryAfterS !== undefined ? { 'retry-after': String(fault.retryAfterS) } : {};
          const code =
            fault.code ??
            (fault.status === 429
              ? 'TooManyRequests'
              : fault.status === 503
                ? 'ServiceNotAvailable'
                : fault.status === 504
                  ? 'GatewayTimeout'
                  : 'generalException');
          return answer(fault.status, errorBody(code, `Sandbox scripted HTTP ${fault.status}.`, requestId), extra);
        }
        const result = isCreate
          ? apply(state, route, body)
          : lookup(state, route, query, `http://${headers.host}${path}`);
        const extra: Record<string, string> =
          typeof fault === 'object' && fault.kind === 'accepted-with-retry-after'
            ? { 'retry-after': String(fault.retryAfterS) }
            : {};
        return answer(result.status, result.body, extra);
      } catch (error) {
        if (error instanceof HttpError) return answer(error.status, errorBody(error.code, error.message, requestId));
        return answer(500, errorBody('generalException', 'Sandbox internal error.', requestId));
      }
    },
  });

  return {
    url: server.url,
    count: (kind) => records.filter((r) => r.kind === kind).length,
    requestCount: (kind) => log.count((r) => r.kind === kind),
    requests: () => log.entries.map((r) => ({ ...r })),
    records: () => records.map((r) => ({ ...r })),
    userId: directory.idOf,
    assignUser: directory.assign,
    deleteRecord: (id) => {
      const at = records.findIndex((r) => r.id === id);
      return at >= 0 && records.splice(at, 1).length === 1;
    },
    visibleSentItems: (mailbox) => {
      const t = now();
      return records.filter(
        (r): r is SandboxMessage =>
          r.kind === 'mail.send' && r.visibleAt <= t && (mailbox === undefined || r.mailbox === mailbox.toLowerCase()),
      );
    },
    setFaults: (kind, script) => faults.set(kind, script),
    setSentItemsDelay: (ms) => {
      state.sentItemsDelayMs = ms;
    },
    advance: clock.advance,
    expireKeys: () => {
      for (const r of records) if (r.kind === 'events.create') state.expired.add(r);
    },
    close: server.close,
  };
}
