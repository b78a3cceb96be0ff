import http from 'node:http';
import https from 'node:https';
import {
  AdapterConfigurationError,
  type AdapterV1,
  type BusinessOperationId,
  defineAdapter,
  InvalidIntentError,
  type LookupContext,
  type LookupResult,
  type Outcome,
  type ProviderKey,
  type TypedAdapter,
} from '@retrysafe/contract';
import { checkBaseUrl, lookupFromOutcome } from '@retrysafe/contract/provider';
import { resendSafety } from '@retrysafe/contract/rules';
import axios, { type AxiosInstance, type AxiosResponse } from 'axios';
import {
  absoluteLocation,
  classifyNetworkError,
  classifyResponse,
  type HttpResponseView,
  parseRetryAfter,
  readHeader,
} from './http-errors.js';
import {
  buildOperation,
  defaultBody,
  fillPath,
  type HttpOperation,
  type HttpOperationSpec,
  type LookupReadContext,
  readPath,
  sfString,
} from './http-operations.js';

export interface HttpAdapterOptions {
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

/** The declared operation names, typed for `runner.run` (params are the declared body's object; results are the API's JSON). */
export type TypedHttpOperations<O> = TypedAdapter<{
  readonly [K in keyof O & string]: { readonly params: Readonly<Record<string, unknown>>; readonly result: unknown };
}>;

type Ids = { businessOperationId: BusinessOperationId; providerKey: ProviderKey | null };

/**
 * Builds an adapter for any HTTP API from explicit declarations. The axios client never retries,
 * never follows redirects (a followed 307/308 re-sends a POST body: a hidden second retrying layer)
 * and ignores proxy environment variables; the runner is the only layer that re-sends.
 */
export function createHttpAdapter<const O extends Readonly<Record<string, HttpOperationSpec>>>(
  options: HttpAdapterOptions & { readonly operations: O },
): HttpAdapter & TypedHttpOperations<O>;
export function createHttpAdapter(options: HttpAdapterOptions): HttpAdapter {
  const provider = options?.provider;
  if (typeof provider !== 'string' || !/^[A-Za-z][A-Za-z0-9_-]*$/.test(provider)) {
    throw new AdapterConfigurationError(
      String(provider),
      'provider must be an identifier such as "acme" (letters, digits, _ and -)',
    );
  }
  const base = checkBaseUrl(provider, options?.baseUrl);
  if (typeof options.timeoutMs !== 'number' || !Number.isFinite(options.timeoutMs) || options.timeoutMs <= 0) {
    throw new AdapterConfigurationError(
      provider,
      'timeoutMs must be a positive number (axios has no timeout by default, so a lost response would hang forever)',
    );
  }
  if (!options.operations || Object.keys(options.operations).length === 0)
    throw new AdapterConfigurationError(provider, 'declare at least one operation');

  const operations: Record<string, HttpOperation> = {};
  for (const [name, spec] of Object.entries(options.operations))
    operations[name] = buildOperation(provider, name, spec);

  const baseURL = base.toString().replace(/\/$/, '');
  const httpAgent = new http.Agent({ keepAlive: false });
  const httpsAgent = new https.Agent({ keepAlive: false });
  const client: AxiosInstance = axios.create({
    baseURL,
    timeout: options.timeoutMs,
    maxRedirects: 0,
    proxy: false,
    validateStatus: () => true,
    httpAgent,
    httpsAgent,
    headers: { Accept: 'application/json', ...(options.headers ?? {}) },
  });

  const c: Conn = { provider, client, base, baseURL };

  return defineAdapter({
    provider,
    operations,

    async execute(o, params, ctx): Promise<Outcome> {
      return send(
        c,
        o,
        params as Record<string, unknown>,
        { businessOperationId: ctx.businessOperationId, providerKey: ctx.providerKey },
        ctx.attempt,
        ctx.signal,
      );
    },

    async lookup(o, ctx): Promise<LookupResult> {
      const spec = o.http;
      const lookup = spec.lookup;
      if (lookup.method === 'none') throw new Error('unreachable: the frame refuses lookup.method none');
      const params = asParams(ctx.params);
      const ids: Ids = { businessOperationId: ctx.businessOperationId, providerKey: ctx.providerKey };
      const readCtx: LookupReadContext = { ...ids, params };

      if (lookup.method === 'resend-same-key') return resendSameKey(c, o, ctx, params, ids);

      if (lookup.method === 'status-url') {
        if (ctx.statusRef) return pollStatus(c, o, ctx.statusRef, ctx.signal);
        const fallback = lookup.withoutStatusRef;
        if (fallback === 'resend-same-key') return resendSameKey(c, o, ctx, params, ids);
        if (typeof fallback === 'object') {
          const res = await get(c, fillPath(fallback.path, params, ids), ctx.signal);
          if ('error' in res) return lookupFromOutcome(res.error, 'status search');
          if (res.status !== 200) return cannotTell(res, `status search answered HTTP ${res.status}`);
          const match = fallback.match(res.data, readCtx);
          if (match === undefined || match === null) {
            // Whether this absence proves anything (late apply, consistency delay) is decide's judgement, not the adapter's.
            return {
              kind: 'not-found',
              reason: 'no work item carries this operation in the status search',
              status: res.status,
            };
          }
          const url = readPath(match, fallback.statusUrlPath);
          if (typeof url !== 'string')
            return cannotTell(res, `the matched work item has no status URL at ${fallback.statusUrlPath}`);
          return pollStatus(c, o, new URL(url, res.url).toString(), ctx.signal);
        }
        return {
          kind: 'cannot-tell',
          reason:
            'no status URL is known (the 202 response was lost) and the operation declares no other way to find it',
        };
      }

      const url = fillPath(lookup.path, params, ids);
      const res = await get(c, url, ctx.signal);
      if ('error' in res) return lookupFromOutcome(res.error, 'lookup request');
      // An absence is reported as it is seen; decide's not-found row judges when it proves anything.
      const absent = (reason: string): LookupResult => ({ kind: 'not-found', reason, status: res.status });
      const requestId = spec.requestIdHeader ? readHeader(res.headers, spec.requestIdHeader) : undefined;
      const rid = requestId !== undefined ? { requestId } : {};
      const refOf = (v: unknown) => {
        const path = lookup.method === 'search' ? (lookup.refPath ?? spec.refPath) : spec.refPath;
        const ref = path ? readPath(v, path) : undefined;
        return typeof ref === 'string' || typeof ref === 'number' ? { providerRef: String(ref) } : {};
      };

      if (lookup.method === 'search') {
        if (res.status !== 200) return cannotTell(res, `search answered HTTP ${res.status}`);
        const match = lookup.match(res.data, readCtx);
        if (match === undefined || match === null) return absent('no match in the search results');
        return { kind: 'found', outcome: { kind: 'succeeded', result: match, status: 200, ...rid, ...refOf(match) } };
      }

      // get-by-key
      if (res.status === 404 || res.status === 410) return absent(`HTTP ${res.status} for the lookup resource`);
      if (res.status !== 200) return cannotTell(res, `lookup answered HTTP ${res.status}`);
      const pc = spec.precondition;
      if (pc) {
        const current = pc.validatorHeader
          ? readHeader(res.headers, pc.validatorHeader)
          : pc.validatorField
            ? readPath(res.data, pc.validatorField)
            : undefined;
        if (current === undefined)
          return cannotTell(res, 'the resource carries no validator to compare with the precondition');
        if (String(current) === String(params[pc.param])) {
          // Still the validator this operation required: nothing (ours or anyone's) has been written.
          return absent(
            'the resource still carries the validator this operation was conditioned on, so the write has not applied',
          );
        }
        if (!lookup.applied)
          return cannotTell(
            res,
            'the validator moved on and the operation declares no way (lookup.applied) to recognise its own write',
          );
        if (lookup.applied(res.data, readCtx))
          return {
            kind: 'found',
            outcome: { kind: 'succeeded', result: res.data, status: 200, ...rid, ...refOf(res.data) },
          };
        return {
          kind: 'found',
          outcome: {
            kind: 'rejected',
            reason: 'conflict',
            message: 'the validator moved on and the resource does not show this write: another writer changed it',
            status: 200,
            ...rid,
          },
        };
      }
      if (lookup.applied && !lookup.applied(res.data, readCtx))
        return absent('the resource does not show this operation');
      return {
        kind: 'found',
        outcome: { kind: 'succeeded', result: res.data, status: 200, ...rid, ...refOf(res.data) },
      };
    },

    async close(): Promise<void> {
      httpAgent.destroy();
      httpsAgent.destroy();
    },
  });
}

/** What the adapter's requests go through: one axios client on the base URL, no redirects, the caller's timeout. */
interface Conn {
  readonly provider: string;
  readonly client: AxiosInstance;
  readonly base: URL;
  readonly baseURL: string;
}

function asParams(params: unknown): Record<string, unknown> {
  if (typeof params !== 'object' || params === null || Array.isArray(params))
    throw new InvalidIntentError('', 'params must be a plain object');
  return params as Record<string, unknown>;
}

function view(c: Conn, res: AxiosResponse, fallbackUrl: string): HttpResponseView {
  const url = new URL(res.config.url ?? fallbackUrl, c.baseURL + '/').toString();
  return { status: res.status, headers: res.headers as Record<string, unknown>, data: res.data, url };
}

/** One request for the operation. Throws only for bad input (typed, nothing sent). */
async function send(
  c: Conn,
  o: HttpOperation,
  params: Record<string, unknown>,
  ids: Ids,
  attempt: number,
  signal?: AbortSignal,
): Promise<Outcome> {
  const spec = o.http;
  const path = fillPath(spec.path, params, ids);
  const headers: Record<string, string> = {};
  const query: Record<string, string> = {};
  let body: unknown;
  if (spec.method !== 'DELETE') body = spec.body ? spec.body(params, ids) : defaultBody(spec, params);
  const k = spec.key;
  if (k.travels !== 'none') {
    const key = ids.providerKey!;
    if (k.travels === 'header') headers[k.name] = k.encoding === 'sf-string' ? sfString(key) : key;
    else if (k.travels === 'query') query[k.name] = key;
    else {
      if (typeof body !== 'object' || body === null || Array.isArray(body))
        throw new AdapterConfigurationError(
          c.provider,
          `operation ${o.name}: the key travels in body field ${k.name} but the body is not a JSON object`,
        );
      body = { ...(body as Record<string, unknown>), [k.name]: key };
    }
  }
  const pc = spec.precondition;
  if (pc) {
    const v = params[pc.param];
    if (typeof v !== 'string' && typeof v !== 'number')
      throw new InvalidIntentError(
        pc.param,
        'the precondition value must be a string or number; an operation declared with a precondition is never sent without it',
      );
    if ('header' in pc) headers[pc.header] = String(v);
    else query[pc.query] = String(v);
  }
  try {
    const res = await c.client.request({
      method: spec.method,
      url: path,
      params: query,
      data: body,
      headers,
      ...(signal ? { signal } : {}),
    });
    return classifyResponse(spec, view(c, res, path), attempt);
  } catch (err) {
    return classifyNetworkError(err);
  }
}

async function get(c: Conn, url: string, signal?: AbortSignal): Promise<HttpResponseView | { error: Outcome }> {
  try {
    const res = await c.client.request({ method: 'GET', url, ...(signal ? { signal } : {}) });
    return view(c, res, url);
  } catch (err) {
    return { error: classifyNetworkError(err) };
  }
}

/** Whether re-sending with the same key is safe (the card rule resendSafety). Returns a reason when it is not. */
function outsideRetention(o: HttpOperation, ctx: LookupContext): string | null {
  // The runner's judgement (the rule with the policy's clock-skew margin) wins; without it (a direct call) the same
  // rule with the card's margin. Either way the reason comes from the rule.
  const own = resendSafety(o.card, ctx.firstDispatchedAt, ctx.now);
  if (ctx.keyReusable === undefined ? own.safe : ctx.keyReusable) return null;
  return own.safe
    ? "the key is too old to rely on (past its retention, counting the policy's clock-skew margin)"
    : own.why;
}

function cannotTell(res: HttpResponseView, reason: string): LookupResult {
  const retryAfterMs = parseRetryAfter(readHeader(res.headers, 'retry-after'));
  return { kind: 'cannot-tell', reason, status: res.status, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) };
}

async function resendSameKey(
  c: Conn,
  o: HttpOperation,
  ctx: LookupContext,
  params: Record<string, unknown>,
  ids: Ids,
): Promise<LookupResult> {
  const why = outsideRetention(o, ctx);
  if (why) return { kind: 'cannot-tell', reason: `no re-send with the same key: ${why}` };
  if (ctx.firstDispatchedAt === null) return { kind: 'not-found', reason: 'never dispatched' };
  return lookupFromOutcome(await send(c, o, params, ids, 2, ctx.signal), 're-send with the same key');
}

function sameOrigin(c: Conn, url: string): boolean {
  try {
    return new URL(url).origin === c.base.origin;
  } catch {
    return false;
  }
}

async function pollStatus(c: Conn, o: HttpOperation, statusRef: string, signal?: AbortSignal): Promise<LookupResult> {
  const spec = o.http;
  if (spec.lookup.method !== 'status-url') throw new Error('unreachable');
  const reading = spec.lookup.status;
  // A status URL on another origin would receive this adapter's headers (credentials).
  if (!sameOrigin(c, statusRef))
    return {
      kind: 'cannot-tell',
      reason: `status URL ${new URL(statusRef, c.baseURL).origin} is not on ${c.base.origin}; not polled with this adapter's credentials`,
    };
  const res = await get(c, statusRef, signal);
  if ('error' in res) return lookupFromOutcome(res.error, 'status poll');
  const retryAfterMs = parseRetryAfter(readHeader(res.headers, 'retry-after'));
  const ra = retryAfterMs !== undefined ? { retryAfterMs } : {};
  const requestId = spec.requestIdHeader ? readHeader(res.headers, spec.requestIdHeader) : undefined;
  const rid = requestId !== undefined ? { requestId } : {};
  if (res.status === 303) {
    const target = absoluteLocation(res);
    if (!target || !sameOrigin(c, target)) return cannotTell(res, '303 See Other without a same-origin Location');
    const done = await get(c, target, signal);
    if ('error' in done) return lookupFromOutcome(done.error, 'fetching the finished resource');
    if (done.status !== 200) return cannotTell(done, `finished resource answered HTTP ${done.status}`);
    const ref = spec.refPath ? readPath(done.data, spec.refPath) : undefined;
    return {
      kind: 'found',
      outcome: {
        kind: 'succeeded',
        result: done.data,
        status: 200,
        ...rid,
        ...(typeof ref === 'string' || typeof ref === 'number' ? { providerRef: String(ref) } : {}),
      },
    };
  }
  if (res.status === 200) {
    const state = readPath(res.data, reading.field);
    const s = typeof state === 'string' ? state : undefined;
    if (s !== undefined && reading.pending.includes(s))
      return {
        kind: 'found',
        outcome: { kind: 'in-progress', statusRef, status: 200, ...rid, ...ra, message: `status ${s}` },
      };
    if (s !== undefined && reading.done.includes(s)) {
      const ref = spec.refPath ? readPath(res.data, spec.refPath) : undefined;
      return {
        kind: 'found',
        outcome: {
          kind: 'succeeded',
          result: res.data,
          status: 200,
          ...rid,
          ...(typeof ref === 'string' || typeof ref === 'number' ? { providerRef: String(ref) } : {}),
        },
      };
    }
    if (s !== undefined && reading.failed?.includes(s))
      return {
        kind: 'found',
        outcome: { kind: 'rejected', reason: 'other', message: `status ${s}`, status: 200, ...rid },
      };
    return cannotTell(res, `status field ${reading.field} is ${JSON.stringify(state)}, not a declared value`);
  }
  if (res.status >= 400 && res.status < 500 && res.status !== 404 && res.status !== 408 && res.status !== 429) {
    // An error persisted at the status resource: the work item failed for good.
    const outcome = classifyResponse(spec, res, 1);
    const reason = outcome.kind === 'rejected' ? outcome.reason : 'other';
    return {
      kind: 'found',
      outcome: {
        kind: 'rejected',
        reason,
        message: `persisted ${'message' in outcome && outcome.message ? outcome.message : 'HTTP ' + res.status}`,
        status: res.status,
        ...(outcome.code !== undefined ? { code: outcome.code } : {}),
        ...rid,
      },
    };
  }
  return cannotTell(res, `status resource answered HTTP ${res.status}`);
}
