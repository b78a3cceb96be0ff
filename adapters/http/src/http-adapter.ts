import http from 'node:http';
import https from 'node:https';
import {
  type AccountOption,
  AdapterConfigurationError,
  type AdapterV1,
  defineAdapter,
  type ExecuteContext,
  type FramedLookupContext,
  InvalidIntentError,
  type LookupResult,
  type Outcome,
  type TypedAdapter,
} from '@retrysafe/contract';
import {
  checkBaseUrl,
  lookupFromOutcome,
  lookupMiss,
  noAnswerOutcome,
  retryAfterOf,
  saysMoreFollow,
} from '@retrysafe/contract/provider';
import { resendSafety } from '@retrysafe/contract/rules';
import axios, { type AxiosRequestConfig } from 'axios';
import {
  absoluteLocation,
  classifyResponse,
  type HttpResponseView,
  providerRefAt,
  readHeader,
  requestIdOf,
} from './http-errors.js';
import {
  buildOperation,
  defaultBody,
  fillPath,
  type HttpLookupSpec,
  type HttpOperation,
  type HttpOperationSpec,
  headerRefusal,
  type Ids,
  type LookupReadContext,
  readPath,
  type StatusReading,
  scalarText,
  sfString,
} from './http-operations.js';

export interface HttpAdapterOptions extends AccountOption {
  /** Provider name; every card's operation is `<provider>.<operation name>`. */
  readonly provider: string;
  /** Origin (and optional base path) of the API, e.g. `https://api.example.com/v1`. */
  readonly baseUrl: string;
  /** Client timeout per request. Required: axios waits forever by default. */
  readonly timeoutMs: number;
  /** Static headers sent with every request (e.g. Authorization). Never written to receipts. */
  readonly headers?: Readonly<Record<string, string>>;
  readonly operations: Readonly<Record<string, HttpOperationSpec>>;
}

export interface HttpAdapter extends AdapterV1 {
  close(): Promise<void>;
}

type Params = Readonly<Record<string, unknown>>;
type Lookup<M extends HttpLookupSpec['method']> = Extract<HttpLookupSpec, { method: M }>;

type Conn = ReturnType<typeof connect>;

/** An adapter for any HTTP API from declarations, each checked against its card; typed for `runner.run` by operation name. */
export function createHttpAdapter<const O extends Readonly<Record<string, HttpOperationSpec>>>(
  options: HttpAdapterOptions & { readonly operations: O },
): HttpAdapter &
  TypedAdapter<{ readonly [K in keyof O & string]: { readonly params: Params; readonly result: unknown } }>;
export function createHttpAdapter(options: HttpAdapterOptions): HttpAdapter {
  const { provider } = options;
  const c = connect(provider, options);
  const operations = Object.entries(options.operations).map(([n, spec]) => [n, buildOperation(provider, n, spec)]);
  return defineAdapter({
    provider,
    account: options.account,
    operations: Object.fromEntries(operations) as Record<string, HttpOperation>,
    execute: (o, params, ctx) => send(c, o, params as Record<string, unknown>, ctx),
    lookup: (o, ctx) => lookup(c, o, ctx),
    close: async () => c.close(),
  });
}

/** No retries, no redirects (a followed 307/308 re-sends a POST body), no proxy variables: the runner alone re-sends. */
function connect(provider: string, options: HttpAdapterOptions) {
  const base = checkBaseUrl(provider, options.baseUrl);
  if (!(Number.isFinite(options.timeoutMs) && options.timeoutMs > 0))
    throw new AdapterConfigurationError(
      provider,
      'timeoutMs must be a positive number (axios has no timeout by default, so a lost response would hang forever)',
    );
  for (const [name, value] of Object.entries(options.headers ?? {})) {
    const refusal = headerRefusal(name, value);
    if (refusal) throw new AdapterConfigurationError(provider, `headers: ${refusal}`);
  }
  const baseURL = base.toString().replace(/\/$/, '');
  const httpAgent = new http.Agent({ keepAlive: false });
  const httpsAgent = new https.Agent({ keepAlive: false });
  const client = axios.create({
    baseURL,
    timeout: options.timeoutMs,
    maxRedirects: 0,
    proxy: false,
    validateStatus: () => true,
    httpAgent,
    httpsAgent,
    headers: { Accept: 'application/json', ...options.headers },
  });
  const close = () => {
    httpAgent.destroy();
    httpsAgent.destroy();
  };
  return { provider, client, base, baseURL, close };
}

async function request(c: Conn, config: AxiosRequestConfig & { url: string }): Promise<HttpResponseView | Outcome> {
  try {
    const res = await c.client.request(config);
    // As axios joined it: a path that starts with / keeps the base URL's own path (new URL would drop it).
    const url = c.client.getUri(config);
    return { status: res.status, headers: res.headers as Record<string, unknown>, data: res.data, url };
  } catch (err) {
    return noAnswerOutcome(err);
  }
}

/** Throws only for bad input (typed, nothing sent). */
async function send(
  c: Conn,
  o: HttpOperation,
  params: Record<string, unknown>,
  ids: Ids & Pick<ExecuteContext, 'attempt' | 'signal'>,
): Promise<Outcome> {
  const { http: spec } = o;
  const url = fillPath(spec.path, params, ids);
  const headers: Record<string, string> = {};
  const query: Record<string, string> = {};
  let body = spec.method === 'DELETE' ? undefined : spec.body ? spec.body(params, ids) : defaultBody(spec, params);
  const k = spec.key;
  const key = ids.providerKey!;
  if (k.travels === 'header') headers[k.name] = k.encoding === 'sf-string' ? sfString(key) : key;
  else if (k.travels === 'query') query[k.name] = key;
  else if (k.travels === 'body') {
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      throw new AdapterConfigurationError(
        c.provider,
        `operation ${o.name}: the key travels in body field ${k.name} but the body is not a JSON object`,
      );
    body = { ...body, [k.name]: key };
  }
  const pc = spec.precondition;
  if (pc) {
    const v = scalarText(params[pc.param]);
    if (!v)
      throw new InvalidIntentError(
        pc.param,
        'the precondition value must be a non-empty string or number; an operation declared with a precondition is never sent without it',
      );
    if ('header' in pc) headers[pc.header] = v;
    else query[pc.query] = v;
  }
  const res = await request(c, { method: spec.method, url, params: query, data: body, headers, signal: ids.signal });
  return 'kind' in res ? res : classifyResponse(spec, res, ids.attempt);
}

type Ask = {
  readonly c: Conn;
  readonly o: HttpOperation;
  readonly ctx: FramedLookupContext;
  readonly r: LookupReadContext;
};

async function get(a: Ask, url: string, what: string): Promise<HttpResponseView | LookupResult> {
  const res = await request(a.c, { method: 'GET', url, signal: a.ctx.signal });
  return 'kind' in res ? lookupFromOutcome(res, what) : res;
}

type Found = Extract<LookupResult, { kind: 'found' }>['outcome'];
const found = (outcome: Found): LookupResult => ({ kind: 'found', outcome });
const absent = ({ o, ctx }: Ask, res: HttpResponseView, reason: string) =>
  lookupMiss(o.card, ctx, reason, { status: res.status });
const cannotTell = (res: HttpResponseView, reason: string): Extract<LookupResult, { kind: 'cannot-tell' }> => ({
  kind: 'cannot-tell',
  reason,
  status: res.status,
  ...retryAfterOf(readHeader(res.headers, 'retry-after'), readHeader(res.headers, 'date')),
});
/** One page's matches: two are a duplicate; none or one proves something only when the page is the whole list, as a
 * page not read may hold this operation's item, or a second one. */
function judgePage(
  a: Ask,
  res: HttpResponseView,
  matches: readonly unknown[],
  more: string | undefined,
  refPath: string | undefined,
  what: string,
): LookupResult | undefined {
  if (matches.length > 1) return several(res, matches, refPath);
  const seen = `${matches.length === 0 ? 'no match' : 'one match'} ${what} on this page`;
  if (saysNextPage(readHeader(res.headers, 'link')))
    return cannotTell(res, `${seen}, and the provider links a next page (Link rel="next") that was not read`);
  if (more !== undefined && saysMoreFollow(readPath(res.data, more)))
    return cannotTell(res, `${seen}, and its ${more} says more follow, not read`);
  return matches.length === 0 ? absent(a, res, `no match ${what}`) : undefined;
}

function saysNextPage(link: string | undefined): boolean {
  for (const [, params] of (link ?? '').matchAll(/<[^>]*>([^<]*)/g)) {
    const rel = /;\s*rel\s*=\s*(?:"([^"]*)"|([^\s;,]+))/i.exec(params!);
    if ((rel?.[1] ?? rel?.[2])?.toLowerCase().split(/\s+/).includes('next')) return true;
  }
  return false;
}
/** Two items of this operation are a duplicate already made: adopting one would hide the other from a person. */
function several(res: HttpResponseView, items: readonly unknown[], refPath: string | undefined): LookupResult {
  const ids = items.map((i) => String(readPath(i, refPath ?? 'id')));
  return { ...cannotTell(res, `${items.length} items match this operation: ${ids.join(', ')}`), duplicates: ids };
}
/** The work item exists (a 303 said done, a search matched it): a later request that cannot tell leaves it in progress. */
const exists = (r: LookupResult, statusRef: string): LookupResult => {
  if (r.kind !== 'cannot-tell') return r;
  const { kind: _, reason, ...refs } = r;
  return found({ kind: 'in-progress', statusRef, ...refs, message: `the work item exists; ${reason}` });
};
const succeeded = (a: Ask, res: HttpResponseView, data: unknown, refPath = a.o.http.refPath) => {
  const refs = { ...requestIdOf(a.o.http, res.headers), ...providerRefAt(data, refPath) };
  return found({ kind: 'succeeded', result: data, status: 200, ...refs });
};

async function lookup(c: Conn, o: HttpOperation, ctx: FramedLookupContext): Promise<LookupResult> {
  const l = o.http.lookup;
  if (l.method === 'none') throw new Error('unreachable: the frame refuses lookup.method none');
  if (typeof ctx.params !== 'object' || ctx.params === null || Array.isArray(ctx.params))
    throw new InvalidIntentError('', 'params must be a plain object');
  const a: Ask = { c, o, ctx, r: { ...ctx, params: ctx.params as Record<string, unknown> } };
  switch (l.method) {
    case 'resend-same-key':
      return resendSameKey(a);
    case 'status-url':
      return ctx.statusRef ? pollStatus(a, l.status, ctx.statusRef) : findStatus(a, l);
    case 'search':
      return search(a, l);
    case 'get-by-key':
      return getByKey(a, l);
  }
}

/** Re-sends with the same key, only while re-sending is safe (the card rule resendSafety). */
async function resendSameKey({ c, o, ctx, r }: Ask): Promise<LookupResult> {
  // The frame's judgement (the runner's, else the card rule with the caller's margin); the rule again only for its why.
  if (!ctx.keyReusable) {
    const why = resendSafety(o.card, ctx.firstDispatchedAt, ctx.now, ctx.clockSkewMarginMs);
    const reason = why.safe
      ? "the key is too old to rely on (past its retention, counting the policy's clock-skew margin)"
      : why.why;
    return { kind: 'cannot-tell', reason: `no re-send with the same key: ${reason}` };
  }
  if (ctx.firstDispatchedAt === null) return { kind: 'not-found', reason: 'never dispatched' };
  return lookupFromOutcome(await send(c, o, r.params, { ...ctx, attempt: 2 }), 're-send with the same key');
}

async function search(a: Ask, l: Lookup<'search'>): Promise<LookupResult> {
  const res = await get(a, fillPath(l.path, a.r.params, a.r), 'lookup request');
  if ('kind' in res) return res;
  if (res.status !== 200) return cannotTell(res, `search answered HTTP ${res.status}`);
  const matches = l.match(res.data, a.r);
  const refPath = l.refPath ?? a.o.http.refPath;
  return judgePage(a, res, matches, l.more, refPath, 'in the search results') ?? succeeded(a, res, matches[0], refPath);
}

async function getByKey(a: Ask, l: Lookup<'get-by-key'>): Promise<LookupResult> {
  const res = await get(a, fillPath(l.path, a.r.params, a.r), 'lookup request');
  if ('kind' in res) return res;
  if (res.status === 404 || res.status === 410) return absent(a, res, `HTTP ${res.status} for the lookup resource`);
  if (res.status !== 200) return cannotTell(res, `lookup answered HTTP ${res.status}`);
  const pc = a.o.http.precondition;
  if (!pc) {
    if (l.applied && !l.applied(res.data, a.r)) return absent(a, res, 'the resource does not show this operation');
    return succeeded(a, res, res.data);
  }
  const current = pc.validatorHeader
    ? readHeader(res.headers, pc.validatorHeader)
    : pc.validatorField
      ? readPath(res.data, pc.validatorField)
      : undefined;
  if (current === undefined)
    return cannotTell(res, 'the resource carries no validator to compare with the precondition');
  // Still the validator this operation required: nothing (ours or anyone's) has been written.
  if (String(current) === String(a.r.params[pc.param]))
    return absent(
      a,
      res,
      'the resource still carries the validator this operation was conditioned on, so the write has not applied',
    );
  if (!l.applied)
    return cannotTell(
      res,
      'the validator moved on and the operation declares no way (lookup.applied) to recognise its own write',
    );
  if (l.applied(res.data, a.r)) return succeeded(a, res, res.data);
  const message = 'the validator moved on and the resource does not show this write: another writer changed it';
  return found({ kind: 'rejected', reason: 'conflict', message, status: 200, ...requestIdOf(a.o.http, res.headers) });
}

/** Without a status URL (the 202 was lost, or a worker died before recording it): the declared fallback. */
async function findStatus(a: Ask, l: Lookup<'status-url'>): Promise<LookupResult> {
  const w = l.withoutStatusRef;
  if (w === 'resend-same-key') return resendSameKey(a);
  if (typeof w !== 'object')
    return {
      kind: 'cannot-tell',
      reason: 'no status URL is known (the 202 response was lost) and the operation declares no other way to find it',
    };
  const res = await get(a, fillPath(w.path, a.r.params, a.r), 'status search');
  if ('kind' in res) return res;
  if (res.status !== 200) return cannotTell(res, `status search answered HTTP ${res.status}`);
  const matches = w.match(res.data, a.r);
  const judged = judgePage(a, res, matches, w.more, w.statusUrlPath, 'for this operation in the status search');
  if (judged) return judged;
  const url = readPath(matches[0], w.statusUrlPath);
  if (typeof url !== 'string') return cannotTell(res, `the matched work item has no status URL at ${w.statusUrlPath}`);
  const statusRef = new URL(url, res.url).toString();
  return exists(await pollStatus(a, l.status, statusRef), statusRef);
}

// These refuse the poll itself (credentials, method, Accept, routing, headers, rate) or say the status resource is
// missing or expired (404, 410), which says nothing about the work item.
const NOT_ABOUT_THE_ITEM = [401, 403, 404, 405, 406, 408, 410, 421, 429, 431];

async function pollStatus(a: Ask, reading: StatusReading, statusRef: string): Promise<LookupResult> {
  const { c } = a;
  const spec = a.o.http;
  const sameOrigin = (url: string) => URL.parse(url)?.origin === c.base.origin;
  // A status URL on another origin would receive this adapter's headers (credentials).
  if (!sameOrigin(statusRef))
    return {
      kind: 'cannot-tell',
      reason: `status URL ${new URL(statusRef, c.baseURL).origin} is not on ${c.base.origin}; not polled with this adapter's credentials`,
    };
  const res = await get(a, statusRef, 'status poll');
  if ('kind' in res) return res;
  const rid = requestIdOf(spec, res.headers);
  if (res.status === 303) {
    const target = absoluteLocation(res);
    if (!target || !sameOrigin(target))
      return exists(cannotTell(res, '303 See Other without a same-origin Location'), statusRef);
    const done = await get(a, target, 'fetching the finished resource');
    if ('kind' in done) return exists(done, statusRef);
    if (done.status !== 200)
      return exists(cannotTell(done, `finished resource answered HTTP ${done.status}`), statusRef);
    return succeeded(a, res, done.data);
  }
  if (res.status === 200) {
    const s = readPath(res.data, reading.field) as string; // only a string can equal a declared value
    const wait = retryAfterOf(readHeader(res.headers, 'retry-after'), readHeader(res.headers, 'date'));
    if (reading.pending.includes(s))
      return found({ kind: 'in-progress', statusRef, status: 200, ...rid, ...wait, message: `status ${s}` });
    if (reading.done.includes(s)) return succeeded(a, res, res.data);
    if (reading.failed?.includes(s))
      return found({ kind: 'rejected', reason: 'other', message: `status ${s}`, status: 200, ...rid });
    return cannotTell(res, `status field ${reading.field} is ${JSON.stringify(s)}, not a declared value`);
  }
  if (res.status >= 400 && res.status < 500 && !NOT_ABOUT_THE_ITEM.includes(res.status)) {
    // An error persisted at the status resource: the work item failed for good.
    const outcome = classifyResponse(spec, res, 1);
    const reason = outcome.kind === 'rejected' ? outcome.reason : 'other';
    const message = `persisted ${'message' in outcome && outcome.message ? outcome.message : 'HTTP ' + res.status}`;
    const code = outcome.code !== undefined ? { code: outcome.code } : {};
    return found({ kind: 'rejected', reason, message, status: res.status, ...code, ...rid });
  }
  return cannotTell(res, `status resource answered HTTP ${res.status}`);
}
