import {
  type AdapterV1,
  type BusinessOperationId,
  defineCard,
  deriveProviderKey,
  type ExecuteContext,
  fact,
  type LookupContext,
  type LookupResult,
  type OperationSpec,
  type Outcome,
  type ProviderKey,
  type ProviderKeyRule,
  type RetrySafetyCard,
  SPECIFICATION_VERSION,
  UnknownOperationError,
  UnsupportedCapabilityError,
} from '@retrysafe/contract';
import { classifyTransportFailure } from '@retrysafe/contract/provider';
import type { FenceConfig, FenceToolConfig } from './fence-config.js';
import { UpstreamUnavailableError } from './upstream.js';

/** What the fence needs of an MCP client to the upstream server (the SDK's `Client` has this shape). */
export interface UpstreamClient {
  callTool(
    params: { name: string; arguments?: Record<string, unknown> },
    resultSchema?: undefined,
    options?: { timeout?: number; signal?: AbortSignal },
  ): Promise<unknown>;
}

/** An upstream tool as the upstream lists it. */
export interface UpstreamTool {
  readonly name: string;
  readonly description?: string;
  readonly inputSchema: { readonly type: 'object'; readonly [k: string]: unknown };
  readonly [k: string]: unknown;
}

interface ToolAnswer {
  readonly isError?: boolean;
  readonly content?: readonly { readonly type: string; readonly text?: string }[];
  readonly structuredContent?: unknown;
}

const KEY_CHARSET = 'A-Za-z0-9_-';

export function readPath(value: unknown, path: string): unknown {
  if (path === '') return value;
  let cur = value;
  for (const part of path.split('.')) {
    if (cur === null || typeof cur !== 'object' || !Object.hasOwn(cur, part)) return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur;
}

function setPath(target: Record<string, unknown>, path: string, value: unknown): Record<string, unknown> {
  const parts = path.split('.');
  const out: Record<string, unknown> = { ...target };
  let cur = out;
  for (const [i, part] of parts.entries()) {
    if (i === parts.length - 1) cur[part] = value;
    else {
      const next = cur[part];
      cur[part] =
        next !== null && typeof next === 'object' && !Array.isArray(next)
          ? { ...(next as Record<string, unknown>) }
          : {};
      cur = cur[part] as Record<string, unknown>;
    }
  }
  return out;
}

/** `{{path}}` strings are replaced by that argument of the call (whole-string templates keep the value's type). */
function fill(template: unknown, args: unknown): unknown {
  if (typeof template === 'string') {
    const whole = /^\{\{\s*([\w.]+)\s*\}\}$/.exec(template);
    if (whole) return readPath(args, whole[1]!);
    return template.replace(/\{\{\s*([\w.]+)\s*\}\}/g, (_m, p: string) => String(readPath(args, p) ?? ''));
  }
  if (Array.isArray(template)) return template.map((t) => fill(t, args));
  if (template !== null && typeof template === 'object')
    return Object.fromEntries(Object.entries(template).map(([k, v]) => [k, fill(v, args)]));
  return template;
}

/** A tool answer's value: its structured content, else its JSON text, else its text. */
export function answerValue(answer: ToolAnswer): unknown {
  if (answer.structuredContent !== undefined) return answer.structuredContent;
  const text = (answer.content ?? [])
    .filter((c) => c.type === 'text' && typeof c.text === 'string')
    .map((c) => c.text)
    .join('\n');
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

const clip = (s: string) => (s.length > 200 ? `${s.slice(0, 200)}…` : s);
const errorText = (a: ToolAnswer) =>
  clip(
    (a.content ?? [])
      .map((c) => c.text ?? '')
      .join(' ')
      .trim() || 'the tool answered an error',
  );

/** The card of one fenced tool, from what the fence file declares; the rest is `unknown` with its reason. */
export function fenceCard(
  config: Pick<FenceConfig, 'name' | 'policy'>,
  toolName: string,
  t: FenceToolConfig,
): RetrySafetyCard {
  const declared = (what: string) => `fence file: tools.${toolName}.${what}${t.source ? ` (${t.source})` : ''}`;
  const notDeclared = (what: string) => `not declared in the fence file (tools.${toolName}.${what})`;
  const unverified: { field: string; condition: string; source: string }[] = [];
  const maybe = <T>(field: string, value: T | undefined, what: string, source?: string) => {
    if (value === undefined) {
      unverified.push({
        field,
        condition: `${what} is not declared for this upstream tool`,
        source: notDeclared(what),
      });
      return fact<T>('unknown', notDeclared(what));
    }
    return fact<T>(value, source ?? declared(what));
  };
  const k = t.key;
  const keySource = k?.source ?? t.source;
  const l = t.lookup;
  const limits = config.policy ?? {};
  return defineCard({
    cardVersion: 1,
    provider: config.name,
    operation: `${config.name}.${toolName}`,
    sideEffect: {
      kind: fact(t.kind, declared('kind')),
      idempotentByNature: fact(
        t.idempotentByNature ?? false,
        t.idempotentByNature === undefined
          ? `default: a fenced ${t.kind} tool is not idempotent by nature`
          : declared('idempotentByNature'),
      ),
    },
    businessOperationId: {
      rule: `derived from intent fields ${t.intent.join(', ')} of the tool's arguments`,
      intentFields: [...t.intent],
    },
    ids: {
      run: 'receipts only',
      attempt: 'receipts only',
      request: fact('the MCP JSON-RPC request id (not kept)', 'MCP specification: JSON-RPC request ids'),
    },
    providerKey: k
      ? {
          travels: fact('body', declared('key.argument')),
          name: fact(k.argument, declared('key.argument')),
          maxLength: fact(k.maxLength ?? 64, k.maxLength ? declared('key.maxLength') : 'fence default: 64 characters'),
          charset: fact(KEY_CHARSET, 'fence: keys are letters, digits, _ and -'),
          scope: fact('one upstream server', declared('key')),
        }
      : {
          travels: fact('none', `fence file: tools.${toolName} declares no key argument`),
          name: fact(null, 'no key travels'),
          maxLength: fact(null, 'no key travels'),
          charset: fact(null, 'no key travels'),
          scope: fact('n/a: no key travels', 'no key travels'),
        },
    keyReuse: fact(
      k ? 'same call while the upstream keeps the key' : 'never: no key travels',
      k ? declared('key') : 'no key travels',
    ),
    parameterMatching: k
      ? maybe('parameterMatching', k.parameterMatching, 'key.parameterMatching', keySource)
      : fact('none', 'no key travels'),
    storedResult: {
      semantics: k
        ? maybe('storedResult.semantics', k.semantics, 'key.semantics', keySource)
        : fact('none', 'no key travels: the upstream cannot fold a re-sent call'),
      includesErrors: fact(false, 'fence: an upstream tool error is never assumed to be stored'),
    },
    lookup: {
      method: fact(
        l ? 'search' : 'none',
        l ? declared('lookup.tool') : `fence file: tools.${toolName} declares no lookup`,
      ),
      consistencyDelay: l
        ? maybe(
            'lookup.consistencyDelay',
            l.consistencyDelay as `${number}s` | null | undefined,
            'lookup.consistencyDelay',
            l.source ?? t.source,
          )
        : fact(null, 'no lookup'),
      // How long the upstream may still apply a call after the fence gave up on it: unknown unless declared.
      ...(l
        ? {
            lateApplyBound: maybe(
              'lookup.lateApplyBound',
              l.lateApplyBound as `${number}s` | undefined,
              'lookup.lateApplyBound',
              l.source ?? t.source,
            ),
          }
        : {}),
    },
    retention: {
      minimum: k
        ? maybe('retention.minimum', k.retention as `${number}h` | undefined, 'key.retention', keySource)
        : fact(null, 'no key travels: nothing is stored'),
    },
    concurrency: k
      ? maybe('concurrency', k.concurrency, 'key.concurrency', keySource)
      : fact('duplicates', 'no key travels: concurrent calls each run the tool'),
    retryableErrors: fact(
      ['a transport that never connected (not-applied)', 'a timeout or a closed connection (unknown: look up first)'],
      'fence: packages/mcp/src/fence/fence-adapter.ts (classify)',
    ),
    nonRetryableErrors: fact(
      [
        'invalid params (-32602)',
        'unknown tool (-32601)',
        ...(t.toolErrors === 'rejected' ? ['a tool error result'] : []),
        ...(t.rejectWhen ?? []).map((r) => `a tool error matching /${r}/`),
      ],
      'fence: packages/mcp/src/fence/fence-adapter.ts (classify)',
    ),
    backoff: {
      strategy: 'exponential-full-jitter',
      base: `${limits.baseMs ?? 200}ms`,
      cap: `${limits.capMs ?? 5000}ms`,
      retryAfterCap: '60s',
    },
    limits: {
      maxAttempts: limits.maxAttempts ?? 3,
      maxElapsed: `${limits.maxElapsedMs ?? 60_000}ms`,
      lookupWindow: `${limits.lookupWindowMs ?? 30_000}ms`,
    },
    retryLayer: {
      layer: 'runner',
      sdkRetries: 'disabled',
      how: 'the MCP client sends each tools/call once; the fence is the only layer that re-sends',
    },
    reconciler: l
      ? `the runner, through the upstream tool ${l.tool}`
      : 'the runner by same-key re-send when the card allows, else a person',
    handoff: {
      condition: 'rejected, budget exhausted, or unknown with no safe re-send',
      destination: "the fence's handoff sink and the ledger",
    },
    duplicateTest: 'retrysafe probe against the upstream, unwrapped and wrapped',
    receipts: 'the fence ledger; JSONL export',
    unverified,
  } as RetrySafetyCard);
}

/** One Outcome per tool answer: a tool error is rejected or unknown as the fence file says; never throws. */
export function classifyToolAnswer(t: FenceToolConfig, answer: unknown): Outcome {
  const a = (answer ?? {}) as ToolAnswer;
  if (a.isError) {
    const text = errorText(a);
    if ((t.rejectWhen ?? []).some((r) => new RegExp(r, 'i').test(text)) || t.toolErrors === 'rejected')
      return { kind: 'rejected', reason: 'validation', message: `tool error: ${text}` };
    return { kind: 'unknown', cause: 'server-error', message: `tool error (may have applied): ${text}` };
  }
  const value = answerValue(a);
  const ref = t.resultRef ? readPath(value, t.resultRef) : undefined;
  return {
    kind: 'succeeded',
    result: {
      content: a.content ?? [],
      ...(a.structuredContent !== undefined ? { structuredContent: a.structuredContent } : {}),
    },
    ...(typeof ref === 'string' || typeof ref === 'number' ? { providerRef: String(ref) } : {}),
  };
}

/** MCP JSON-RPC error codes: refused arguments or tool are rejections; a timeout or a closed connection is unknown. */
const MCP_ERRORS: Readonly<Record<number, (message: string) => Outcome>> = {
  [-32602]: (message) => ({ kind: 'rejected', reason: 'validation', message, code: 'invalid-params' }),
  [-32601]: (message) => ({ kind: 'rejected', reason: 'configuration', message, code: 'method-not-found' }),
  [-32001]: (m) => ({
    kind: 'unknown',
    cause: 'timeout',
    message: `no answer within the timeout: ${m}`,
    code: 'timeout',
  }),
  [-32000]: (m) => ({
    kind: 'unknown',
    cause: 'connection-reset',
    message: `connection closed before the answer: ${m}`,
    code: 'connection-closed',
  }),
};

export function classifyToolError(error: unknown): Outcome {
  const code = (error as { code?: unknown } | null)?.code;
  const message = clip(error instanceof Error ? error.message : String(error));
  // Refused before sending: the upstream is down and could not be restarted, or the client had no connection.
  if (
    error instanceof UpstreamUnavailableError ||
    (error instanceof Error && code === undefined && error.message === 'Not connected')
  )
    return { kind: 'not-applied', message: `upstream not reached: ${message}`, code: 'not-connected' };
  if (typeof code === 'number' && MCP_ERRORS[code]) return MCP_ERRORS[code](message);
  const t = classifyTransportFailure(error);
  if (t.sent === 'never') return { kind: 'not-applied', message: `upstream not reached (${t.code})`, code: t.code };
  return { kind: 'unknown', cause: t.cause, message, ...(t.code ? { code: t.code } : {}) };
}

export interface FenceAdapterOptions {
  readonly config: FenceConfig;
  readonly client: UpstreamClient;
  /** The upstream's tool list (for descriptions and input schemas); every fenced tool must be in it. */
  readonly tools: readonly UpstreamTool[];
}

/** The fenced upstream tools as one retrysafe adapter: the runner decides from their cards, like any provider. */
export function createFenceAdapter(options: FenceAdapterOptions): AdapterV1 {
  const { config, client } = options;
  const listed = new Map(options.tools.map((t) => [t.name, t]));
  const operations: Record<string, OperationSpec> = {};
  for (const [name, t] of Object.entries(config.tools)) {
    const upstream = listed.get(name);
    if (!upstream) throw new UnknownOperationError(config.name, name, [...listed.keys()]);
    if (t.lookup && !listed.has(t.lookup.tool))
      throw new UnknownOperationError(config.name, t.lookup.tool, [...listed.keys()]);
    operations[name] = Object.freeze({
      name,
      description: upstream.description ?? name,
      card: fenceCard(config, name, t),
      intentFields: t.intent,
      paramsSchema: upstream.inputSchema,
    });
  }
  const tool = (operation: string): FenceToolConfig => {
    const t = config.tools[operation];
    if (!t) throw new UnknownOperationError(config.name, operation, Object.keys(config.tools));
    return t;
  };
  const rule = (t: FenceToolConfig): ProviderKeyRule => ({
    maxLength: t.key?.maxLength ?? 64,
    charset: KEY_CHARSET,
    prefix: 'rs-',
  });

  return Object.freeze({
    specificationVersion: SPECIFICATION_VERSION,
    provider: config.name,
    operations: Object.freeze(operations),
    deriveProviderKey(operation: string, id: BusinessOperationId): ProviderKey | null {
      const t = tool(operation);
      return t.key ? deriveProviderKey(id, rule(t)) : null;
    },
    async doExecute(operation: string, params: unknown, ctx: ExecuteContext): Promise<Outcome> {
      const t = tool(operation);
      let args = (params ?? {}) as Record<string, unknown>;
      if (t.key && ctx.providerKey) args = setPath(args, t.key.argument, ctx.providerKey);
      try {
        const answer = await client.callTool({ name: operation, arguments: args }, undefined, {
          timeout: config.timeoutMs,
          ...(ctx.signal ? { signal: ctx.signal } : {}),
        });
        return classifyToolAnswer(t, answer);
      } catch (error) {
        return classifyToolError(error);
      }
    },
    async doLookup(operation: string, ctx: LookupContext): Promise<LookupResult> {
      const t = tool(operation);
      const l = t.lookup;
      if (!l) throw new UnsupportedCapabilityError(config.name, 'lookup', `tools.${operation} declares no lookup`);
      let answer: ToolAnswer;
      try {
        answer = (await client.callTool(
          { name: l.tool, arguments: (fill(l.arguments ?? {}, ctx.params) ?? {}) as Record<string, unknown> },
          undefined,
          { timeout: config.timeoutMs, ...(ctx.signal ? { signal: ctx.signal } : {}) },
        )) as ToolAnswer;
      } catch (error) {
        return {
          kind: 'cannot-tell',
          reason: `lookup tool ${l.tool} gave no answer: ${classifyToolError(error).kind}`,
        };
      }
      if (answer.isError) return { kind: 'cannot-tell', reason: `lookup tool ${l.tool} answered an error` };
      const items = readPath(answerValue(answer), l.items);
      if (!Array.isArray(items))
        return { kind: 'cannot-tell', reason: `lookup tool ${l.tool}: no list at "${l.items}" in its answer` };
      const match = items.find((item) =>
        Object.entries(l.match).every(([itemPath, argPath]) => {
          const want = readPath(ctx.params, argPath);
          return want !== undefined && readPath(item, itemPath) === want;
        }),
      );
      if (match === undefined)
        return { kind: 'not-found', reason: `no item of ${l.tool} matches ${Object.keys(l.match).join(', ')}` };
      const ref = t.resultRef ? readPath(match, t.resultRef) : undefined;
      return {
        kind: 'found',
        outcome: {
          kind: 'succeeded',
          result: { content: [{ type: 'text', text: JSON.stringify(match) }], structuredContent: match },
          ...(typeof ref === 'string' || typeof ref === 'number' ? { providerRef: String(ref) } : {}),
        },
      };
    },
  });
}
