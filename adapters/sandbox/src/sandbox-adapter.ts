import {
  type AccountOption,
  AdapterConfigurationError,
  defineAdapter,
  type FramedExecuteContext,
  type FramedLookupContext,
  type FrameOperation,
  type LookupContext,
  type LookupResult,
  type Outcome,
  type TypedAdapter,
} from '@retrysafe/contract';
import { checkBaseUrl, lookupMiss, noAnswerOutcome, retryAfterOf } from '@retrysafe/contract/provider';
import { SANDBOX_KEY_RULE, SANDBOX_PROVIDER, type SandboxLimits, sandboxCreateCard } from './sandbox-cards.js';
import type { SandboxBehaviour, SandboxProvider, SandboxRecord, SandboxResponse } from './sandbox-provider.js';

interface CommonOptions extends AccountOption {
  /** Card limits and backoff (defaults: 4 attempts, 2m, lookup window 30s, 200ms base, 10s cap, 60s Retry-After cap). */
  readonly limits?: SandboxLimits;
  /** Dot paths of the params naming the business intent (default `['ref']`). */
  readonly intentFields?: readonly string[];
  /** Params the runner must redact (e.g. `['email']`). */
  readonly sensitiveFields?: readonly string[];
}

export type SandboxAdapterOptions =
  /** In process: calls the provider object directly. */
  | (CommonOptions & { readonly provider: SandboxProvider })
  /** Over loopback HTTP (see startSandboxServer). The behaviour is needed to compute the card. */
  | (CommonOptions & { readonly baseUrl: string; readonly behaviour: SandboxBehaviour; readonly timeoutMs?: number });

export const SANDBOX_OPERATION = 'records.create';

/** The result the adapter hands back: the record's public view (never the request params). */
export interface SandboxResult {
  readonly id: string;
  readonly status: 'processing' | 'done';
  readonly createdAt: number;
}

/** `records.create` params: the intent fields (default `ref`) and anything else the record should carry. */
export interface SandboxParams {
  readonly ref?: string;
  readonly [field: string]: unknown;
}

/** The sandbox adapter, typed: `runner.run(sandbox, 'records.create', { params })`. */
export type SandboxAdapter = TypedAdapter<{
  readonly 'records.create': { readonly params: SandboxParams; readonly result: SandboxResult };
}>;

const toResult = (r: SandboxRecord): SandboxResult => ({ id: r.id, status: r.status, createdAt: r.createdAt });
const processing = (r: SandboxRecord) =>
  ({ kind: 'in-progress', statusRef: `/records/${r.id}`, providerRef: r.id }) as const;

/** Classifies one in-process sandbox response into exactly one outcome (docs/concepts.md, "Outcomes and the decision table"). */
export function classifySandboxResponse(res: SandboxResponse): Outcome {
  switch (res.type) {
    case 'created':
      return { kind: 'succeeded', result: toResult(res.record), providerRef: res.record.id, status: 201 };
    case 'replayed':
      return res.record.status === 'processing'
        ? { ...processing(res.record), status: 202 }
        : { kind: 'replayed', result: toResult(res.record), providerRef: res.record.id, status: 201 };
    case 'accepted':
      return { ...processing(res.record), retryAfterMs: res.retryAfterMs, status: 202 };
    case 'in-progress':
      return {
        kind: 'in-progress',
        retryAfterMs: res.retryAfterMs,
        status: 409,
        code: 'idempotency_key_in_use',
        message: 'a request with this key is still processing',
      };
    case 'mismatch':
      return {
        kind: 'rejected',
        reason: 'conflict',
        message: res.message,
        status: 422,
        code: 'idempotency_key_mismatch',
      };
    case 'rejected':
      return {
        kind: 'rejected',
        reason: 'validation',
        message: res.message,
        status: 400,
        code: 'invalid_request',
        ...(res.fields ? { fields: res.fields } : {}),
      };
    case 'throttled':
      return {
        kind: 'not-applied',
        message: 'rate limited before processing',
        retryAfterMs: res.retryAfterMs,
        status: 429,
        code: 'rate_limited',
      };
    case 'server-error':
      return { kind: 'unknown', cause: 'server-error', message: `sandbox answered ${res.status}`, status: res.status };
  }
}

/** Maps an HTTP answer of the sandbox server into one outcome. */
function classifyHttp(status: number, headers: Headers, body: unknown): Outcome {
  const requestId = headers.get('x-request-id') ?? undefined;
  const rec = (body as { record?: SandboxRecord } | null)?.record;
  const errCode = (body as { error?: { code?: string; message?: string } } | null)?.error;
  const message = errCode?.message ?? `HTTP ${status}`;
  const base = { status, ...(requestId ? { requestId } : {}) };
  const ra = retryAfterOf(headers.get('retry-after'), headers.get('date'));
  if (status === 201 && rec) {
    const kind = headers.get('idempotent-replayed') === 'true' ? 'replayed' : 'succeeded';
    return { kind, result: toResult(rec), providerRef: rec.id, ...base };
  }
  if (status === 202 && rec)
    return {
      kind: 'in-progress',
      statusRef: headers.get('location') ?? `/records/${rec.id}`,
      providerRef: rec.id,
      ...ra,
      ...base,
    };
  if (status === 409) return { kind: 'in-progress', message, code: errCode?.code ?? 'conflict', ...ra, ...base };
  if (status === 422)
    return { kind: 'rejected', reason: 'conflict', message, code: errCode?.code ?? 'unprocessable', ...base };
  if (status === 429) return { kind: 'not-applied', message, code: errCode?.code ?? 'rate_limited', ...ra, ...base };
  if (status === 401 || status === 403)
    return { kind: 'rejected', reason: status === 401 ? 'authentication' : 'permission', message, ...base };
  if (status >= 400 && status < 500)
    return {
      kind: 'rejected',
      reason: 'validation',
      message,
      ...(errCode?.code ? { code: errCode.code } : {}),
      ...base,
    };
  if (status >= 200 && status < 300)
    return { kind: 'unknown', cause: 'truncated-response', message: `HTTP ${status} without a record`, ...base };
  return { kind: 'unknown', cause: 'server-error', message, ...ra, ...base };
}

/** An adapter over a sandbox provider (in process) or its server (HTTP); the card of `records.create` follows the behaviour. */
export function createSandboxAdapter(options: SandboxAdapterOptions): SandboxAdapter {
  const behaviour = 'provider' in options ? options.provider.behaviour : options.behaviour;
  if (!behaviour) throw new AdapterConfigurationError(SANDBOX_PROVIDER, 'pass { provider } or { baseUrl, behaviour }');
  const intentFields = options.intentFields ?? ['ref'];
  const card = sandboxCreateCard(behaviour, options.limits, intentFields);
  const spec: FrameOperation = {
    name: SANDBOX_OPERATION,
    description: 'Creates one sandbox record (a no-op stand-in for any create operation).',
    card,
    sensitiveFields: options.sensitiveFields ?? [],
    paramsSchema: {
      type: 'object',
      properties: { ref: { type: 'string' } },
      required: [...intentFields].filter((f) => !f.includes('.')),
    },
    keyRule: SANDBOX_KEY_RULE,
  };
  const fromRecords = (recs: readonly SandboxRecord[], ctx: LookupContext, requestId?: string): LookupResult => {
    const refs = requestId ? { requestId } : {};
    const [rec, ...more] = recs;
    if (rec === undefined) return lookupMiss(card, ctx, 'no record holds this key', refs);
    // Two records hold the key: a duplicate already made, which adopting one would hide from a person.
    if (more.length > 0)
      return {
        kind: 'cannot-tell',
        reason: `${recs.length} records hold this key: ${recs.map((r) => r.id).join(', ')}`,
        duplicates: recs.map((r) => r.id),
        ...refs,
      };
    if (rec.status === 'processing')
      return { kind: 'found', outcome: { ...processing(rec), retryAfterMs: Math.max(0, rec.completesAt - ctx.now) } };
    return { kind: 'found', outcome: { kind: 'succeeded', result: toResult(rec), providerRef: rec.id } };
  };

  // The frame hands every call a signal.
  let execute: (params: unknown, ctx: FramedExecuteContext) => Promise<Outcome>;
  let lookup: (ctx: FramedLookupContext) => Promise<LookupResult>;

  if ('provider' in options) {
    const provider = options.provider;
    execute = async (params, ctx) => classifySandboxResponse(await provider.execute({ key: ctx.providerKey, params }));
    lookup = async (ctx) => {
      const answer = provider.answerLookup(ctx.providerKey!);
      if (answer.type === 'unavailable')
        return {
          kind: 'cannot-tell',
          reason: 'lookup unavailable (503)',
          status: 503,
          retryAfterMs: answer.retryAfterMs,
        };
      return fromRecords(
        answer.type === 'found' ? [answer.record] : answer.type === 'several' ? answer.records : [],
        ctx,
      );
    };
  } else {
    const base = checkBaseUrl(SANDBOX_PROVIDER, options.baseUrl);
    const timeoutMs = options.timeoutMs ?? 10_000;
    const call = (path: string, signal: AbortSignal, init?: RequestInit) =>
      fetch(new URL(path, base), { ...init, signal: AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]) });
    const bodyOf = async (res: Response): Promise<unknown> => {
      const text = await res.text();
      return text ? JSON.parse(text) : null;
    };
    execute = async (params, ctx) => {
      let res: Response;
      try {
        res = await call('records', ctx.signal, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            ...(ctx.providerKey ? { 'idempotency-key': ctx.providerKey } : {}),
          },
          body: JSON.stringify(params ?? null),
        });
      } catch (err) {
        return noAnswerOutcome(err);
      }
      let body: unknown;
      try {
        body = await bodyOf(res);
      } catch (err) {
        const o = noAnswerOutcome(err);
        return o.kind === 'unknown'
          ? o
          : {
              kind: 'unknown',
              cause: 'truncated-response',
              message: 'response body cut off or unreadable',
              status: res.status,
            };
      }
      return classifyHttp(res.status, res.headers, body);
    };
    lookup = async (ctx) => {
      let res: Response;
      let body: unknown;
      try {
        res = await call(`records?key=${encodeURIComponent(ctx.providerKey!)}`, ctx.signal);
        body = await bodyOf(res);
      } catch (err) {
        return { kind: 'cannot-tell', reason: `lookup failed: ${noAnswerOutcome(err).message}` };
      }
      const requestId = res.headers.get('x-request-id') ?? undefined;
      if (res.status === 200) return fromRecords([(body as { record: SandboxRecord }).record], ctx, requestId);
      if (res.status === 300) return fromRecords((body as { records: SandboxRecord[] }).records, ctx, requestId);
      if (res.status === 404) return fromRecords([], ctx, requestId);
      return {
        kind: 'cannot-tell',
        reason: `lookup answered ${res.status}`,
        status: res.status,
        ...(requestId ? { requestId } : {}),
        ...retryAfterOf(res.headers.get('retry-after'), res.headers.get('date')),
      };
    };
  }

  return defineAdapter({
    provider: SANDBOX_PROVIDER,
    account: options.account,
    operations: { [SANDBOX_OPERATION]: spec },
    execute: (_op, params, ctx) => execute(params, ctx),
    lookup: (_op, ctx) => lookup(ctx),
  });
}
