import { type Client, type GraphRequest, ResponseType } from '@microsoft/microsoft-graph-client';
import {
  type AccountOption,
  AdapterConfigurationError,
  defineAdapter,
  type FramedExecuteContext,
  type FramedLookupContext,
  type LookupResult,
  type Outcome,
  type TypedAdapter,
} from '@retrysafe/contract';
import {
  checkToken,
  goneDuringWalk,
  intentLookupFailure,
  type NoAnswerOutcome,
  noAnswerOutcome,
  operationParamsErrors,
  positiveInteger,
} from '@retrysafe/contract/provider';
import { notFoundIsAuthoritative } from '@retrysafe/contract/rules';
import { assertNoSdkRetries, createGraphClient, type TokenProvider, TransportProbe } from './msgraph-client.js';
import {
  cannotTellFromAnswer,
  type GraphHttpAnswer,
  outcomeFromErrorAnswer,
  outcomeFromTokenError,
  refsOf,
} from './msgraph-errors.js';
import {
  type BuildContext,
  DEFAULT_APPLICATION_NAME,
  DEFAULT_EXTENDED_PROPERTY_ID,
  type GraphOperation,
  isObj,
  type MsGraphOperationTypes,
  msGraphOperations,
} from './msgraph-operations.js';

export interface MsGraphAdapterOptions extends AccountOption {
  /** Bearer token or a function returning one (called per request). Required unless `client` is given. */
  readonly accessToken?: TokenProvider;
  /** Graph root, default `https://graph.microsoft.com/`; the sandbox URL in tests. */
  readonly baseUrl?: string;
  /** API version, default `v1.0`. */
  readonly version?: string;
  /** Per-request timeout in ms (default 30 000). A timeout after sending is an unknown outcome. */
  readonly timeoutMs?: number;
  /** A Graph client you built, without the SDK's RetryHandler (refused). Default: `createGraphClient({ token, baseUrl })`. */
  readonly client?: Client;
  /** The single-value extended property carrying the business-operation id on messages and events. */
  readonly extendedPropertyId?: string;
  /** `applicationName` of the linkedResource tagging To Do tasks. */
  readonly applicationName?: string;
}

export interface MsGraphAdapter extends TypedAdapter<MsGraphOperationTypes> {
  readonly provider: 'msgraph';
  /** The Graph client in use (no RetryHandler in its chain). */
  readonly client: Client;
}

const PROVIDER = 'msgraph';
/** The lookup's page size, and the pages it reads before it says it cannot tell (case-insensitive near-matches). */
const LOOKUP_TOP = 50;
const LOOKUP_PAGES = 5;
const EXTENDED_PROPERTY_ID = /^String \{[0-9a-fA-F-]{36}\} Name [A-Za-z0-9_.-]+$/;

/** What every call needs: the client, the timeout, and where the business-operation id is written. */
type Runtime = Pick<BuildContext, 'extendedPropertyId' | 'applicationName'> & {
  client: Client;
  timeoutMs: number;
  /** The path of the client's base URL without its trailing slash ('' at Graph itself). */
  basePath: string;
};

function configError(message: string): never {
  throw new AdapterConfigurationError(PROVIDER, message);
}

function buildClient(options: MsGraphAdapterOptions): Client {
  if (options.client) {
    if (options.accessToken !== undefined || options.baseUrl !== undefined)
      configError('pass either client, or accessToken/baseUrl to build one, not both');
    assertNoSdkRetries(options.client);
    return options.client;
  }
  if (options.accessToken === undefined || options.accessToken === '')
    configError('accessToken (a token or a function returning one) is required when no client is given');
  if (typeof options.accessToken === 'string') checkToken(PROVIDER, 'accessToken', options.accessToken);
  return createGraphClient({ token: options.accessToken, baseUrl: options.baseUrl, version: options.version });
}

/** Sends `request` with the timeout and a transport probe; RAW, so a non-2xx is an answer, not a throw. */
async function send(
  rt: Runtime,
  signal: AbortSignal,
  request: GraphRequest,
  call: (r: GraphRequest) => Promise<unknown>,
): Promise<{ answer: GraphHttpAnswer; unreadable: boolean } | { failed: NoAnswerOutcome }> {
  const probe = new TransportProbe();
  const timeout = AbortSignal.timeout(rt.timeoutMs);
  let raw: Response;
  try {
    // fetch follows 307/308 by itself (no RedirectHandler in the chain): a POST body would go to any Location.
    const r = request.responseType(ResponseType.RAW).middlewareOptions([probe]).option('redirect', 'manual');
    raw = (await call(r.option('signal', AbortSignal.any([signal, timeout])))) as Response;
  } catch (error) {
    const cause = probe.error ?? error;
    return { failed: probe.stage === 'token' ? outcomeFromTokenError(cause) : noAnswerOutcome(cause) };
  }
  const text = await raw.text().catch(() => undefined);
  let body: unknown = null;
  try {
    body = JSON.parse(text ?? '');
  } catch {
    // empty, unreadable or not JSON: no body
  }
  // unreadable: the status line arrived, the body did not
  return { answer: { status: raw.status, headers: raw.headers, body }, unreadable: text === undefined };
}

async function execute(rt: Runtime, o: GraphOperation, params: unknown, ctx: FramedExecuteContext): Promise<Outcome> {
  const req = o.build(params, { ...ctx, ...rt });
  const sent = await send(rt, ctx.signal, rt.client.api(req.path), (r) => r.post(req.body));
  if ('failed' in sent) return sent.failed;
  const { answer } = sent;
  if (answer.status < 200 || answer.status >= 300) return outcomeFromErrorAnswer(answer, o);
  if (sent.unreadable) {
    const message = `HTTP ${answer.status} whose body could not be read: applied, but its id was lost`;
    return { kind: 'unknown', cause: 'truncated-response', message, ...refsOf(answer) };
  }
  return { kind: 'succeeded', ...o.read(isObj(answer.body) ? answer.body : {}, false), ...refsOf(answer) };
}

/** Every page of the lookup, following `@odata.nextLink` (graph/paging: until it is no longer returned), bounded. */
async function readPages(
  rt: Runtime,
  ctx: FramedLookupContext,
  first: GraphRequest,
  what: string,
): Promise<{ pages: unknown[][]; answer: GraphHttpAnswer } | LookupResult> {
  const pages: unknown[][] = [];
  let request = first;
  for (let page = 1; ; page++) {
    // A page not read may hold this operation's item, or a second one: any failure is cannot-tell.
    const sent = await send(rt, ctx.signal, request, (r) => r.get());
    if ('failed' in sent) return { kind: 'cannot-tell', reason: `${what} got no answer: ${sent.failed.message}` };
    const { answer } = sent;
    if (sent.unreadable)
      return { kind: 'cannot-tell', reason: `${what}: HTTP ${answer.status} whose body could not be read` };
    if (answer.status !== 200) return cannotTellFromAnswer(answer, what);
    const body = answer.body as { value?: unknown; '@odata.nextLink'?: unknown } | null;
    if (!Array.isArray(body?.value))
      return { kind: 'cannot-tell', reason: `${what}: HTTP 200 without a value array`, ...refsOf(answer) };
    pages.push(body.value);
    const next = body['@odata.nextLink'];
    if (typeof next !== 'string') return { pages, answer };
    if (page === LOOKUP_PAGES)
      return { kind: 'cannot-tell', reason: `${what}: ${page} pages read and more follow`, ...refsOf(answer) };
    // The link's path and query on this client's own host: the token goes nowhere else.
    const url = new URL(next);
    // Behind a base URL with a path prefix the link carries the prefix, which the client adds again.
    const { pathname } = url;
    const rest = pathname.startsWith(`${rt.basePath}/`) ? pathname.slice(rt.basePath.length) : pathname;
    const [, version, ...path] = rest.split('/');
    request = rt.client.api(`/${path.join('/')}${url.search}`).version(version ?? '');
  }
}

const idOf = (item: unknown) => (isObj(item) ? item.id : undefined);

async function lookup(rt: Runtime, o: GraphOperation, ctx: FramedLookupContext): Promise<LookupResult> {
  const what = `${o.name} lookup`;
  if (operationParamsErrors(o, ctx.params).length > 0)
    return {
      kind: 'cannot-tell',
      reason: `${what}: the recorded params are not valid for this operation, so there is nothing to search by`,
    };
  const b = { ...ctx, ...rt };
  const q = o.lookup(ctx.params, b);
  const query = rt.client
    .api(q.path)
    .filter(q.filter)
    .select([...q.select])
    .expand(q.expand)
    .top(LOOKUP_TOP);
  const read = await readPages(rt, ctx, query, what);
  if ('kind' in read) return read;
  // Pages by $skip: an item deleted from a page already read moves the first of the next one onto it, unread (a
  // second of ours hidden). A second read must still list all the first read before its last page.
  if (read.pages.length > 1) {
    const again = await readPages(rt, ctx, query, what);
    if ('kind' in again) return again;
    const gone = goneDuringWalk(read.pages, again.pages, idOf);
    if (gone > 0) return { kind: 'cannot-tell', reason: `${what}: ${gone} items gone from the list during the read` };
  }
  const { answer } = read;
  const items = read.pages.flat();
  // Keyed by id: an item on two pages (the list moved between the reads) is one item, not a duplicate.
  const tagged = items.filter((i): i is Record<string, unknown> => isObj(i) && o.owns(i, b));
  const own = [...new Map(tagged.map((i) => [i.id, i])).values()];
  const first = own[0];
  if (!first) {
    const miss = `${what}: nothing tagged with exactly this business-operation id is visible (${items.length} matched ignoring case)`;
    if (notFoundIsAuthoritative(o.card, ctx)) return { kind: 'not-found', reason: miss, ...refsOf(answer) };
    const why = "the card's late-apply and visibility bounds do not prove absence yet (Graph documents none)";
    return { kind: 'cannot-tell', reason: `${miss}; ${why}`, ...refsOf(answer) };
  }
  // A second item with this tag is a duplicate already made: adopting one would hide the other from a person.
  if (own.length > 1) {
    const ids = own.map((i) => String(i.id));
    const reason = `${what}: ${own.length} items carry this id's tag: ${ids.join(', ')}`;
    return { kind: 'cannot-tell', reason, duplicates: ids, ...refsOf(answer) };
  }
  const { result, ...ref } = o.read(first, true);
  return { kind: 'found', outcome: { kind: 'succeeded', result, ...ref, ...refsOf(answer) } };
}

const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A mailbox as the id reads it: `me` for the signed-in user however it is spelled, else Graph's object id of the user
 * (docs/evidence/msgraph.md, The mailbox: `/me` is `/users/{signed-in id}`; an id is case-insensitive). */
function mailboxResolver(rt: Runtime) {
  let me: Promise<string | null> | undefined;
  const idOf = async (path: string, signal: AbortSignal): Promise<string | null> => {
    const sent = await send(rt, signal, rt.client.api(path).select(['id']), (r) => r.get());
    const what = `Graph could not say which user ${path} is, so the operation's id cannot be told`;
    if ('failed' in sent) throw intentLookupFailure('mailbox', what, sent.failed);
    const { status, body } = sent.answer;
    if (path === '/me' && status === 400) return null; // an app-only token: no signed-in user
    const id = isObj(body) && typeof body.id === 'string' ? body.id.toLowerCase() : null;
    if (status === 200 && id !== null) return id;
    const grant =
      path === '/me' ? 'User.Read' : 'User.ReadBasic.All or User.Read.All, or name the mailbox by its object id';
    const why = status === 403 ? `${what} (grant ${grant})` : what;
    throw intentLookupFailure('mailbox', why, outcomeFromErrorAnswer(sent.answer));
  };
  return async (mailbox: string, signal: AbortSignal): Promise<string> => {
    if (mailbox === 'me') return mailbox;
    const user = GUID.test(mailbox)
      ? mailbox.toLowerCase()
      : await idOf(`/users/${encodeURIComponent(mailbox)}`, signal);
    me ??= idOf('/me', signal).catch((e: unknown) => {
      me = undefined;
      throw e;
    });
    return user === (await me) ? 'me' : String(user);
  };
}

/** Microsoft Graph adapter: `mail.send`, `events.create`, `todo.tasks.create`; SDK retries off (the runner retries). */
export function createMsGraphAdapter(options: MsGraphAdapterOptions): MsGraphAdapter {
  const timeoutMs = positiveInteger(PROVIDER, 'timeoutMs', options.timeoutMs, 30_000);
  const extendedPropertyId = options.extendedPropertyId ?? DEFAULT_EXTENDED_PROPERTY_ID;
  if (!EXTENDED_PROPERTY_ID.test(extendedPropertyId))
    configError(
      `extendedPropertyId must look like "String {GUID} Name someName", got ${JSON.stringify(extendedPropertyId)}`,
    );
  const client = buildClient(options);
  // The SDK keeps the base URL in its (untyped) config: an injected client has its own.
  const baseUrl = (client as unknown as { config: { baseUrl: string } }).config.baseUrl;
  const rt: Runtime = {
    client,
    timeoutMs,
    basePath: new URL(baseUrl).pathname.replace(/\/+$/, ''),
    extendedPropertyId,
    applicationName: options.applicationName ?? DEFAULT_APPLICATION_NAME,
  };
  const mailbox = mailboxResolver(rt);
  // close: the Graph client holds no sockets of its own (global fetch); nothing to release.
  return defineAdapter(
    {
      provider: PROVIDER,
      account: options.account,
      operations: msGraphOperations,
      execute: (o, params, ctx) => execute(rt, o, params, ctx),
      lookup: (o, ctx) => lookup(rt, o, ctx),
      resolveIntent: async (_o, intent, signal) => ({
        ...intent,
        mailbox: await mailbox(String(intent.mailbox), signal),
      }),
    },
    { client },
  );
}
