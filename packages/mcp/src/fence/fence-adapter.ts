import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import {
  type AdapterV1,
  type BusinessOperationId,
  deriveProviderKey,
  type ExecuteContext,
  type LookupContext,
  type LookupResult,
  type OperationSpec,
  type Outcome,
  type ProviderKey,
  SPECIFICATION_VERSION,
  UnknownOperationError,
  UnsupportedCapabilityError,
} from '@retrysafe/contract';
import { classifyTransportFailure } from '@retrysafe/contract/provider';
import { fenceCard, KEY_CHARSET } from './fence-card.js';
import type { FenceConfig, FenceToolConfig } from './fence-config.js';
import { type UpstreamClient, UpstreamUnavailableError } from './upstream.js';

interface ToolAnswer {
  readonly isError?: boolean;
  readonly content?: readonly { readonly type: string; readonly text?: string }[];
  readonly structuredContent?: unknown;
}

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
  const [head = '', ...rest] = path.split('.');
  if (rest.length === 0) return { ...target, [head]: value };
  const inner = target[head];
  const next = inner !== null && typeof inner === 'object' && !Array.isArray(inner) ? inner : {};
  return { ...target, [head]: setPath(next as Record<string, unknown>, rest.join('.'), value) };
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

/** One Outcome per tool answer: a tool error is rejected or unknown as the fence file says; never throws. */
function classifyToolAnswer(t: FenceToolConfig, answer: unknown): Outcome {
  const a = (answer ?? {}) as ToolAnswer;
  if (a.isError) {
    const text = errorText(a);
    if ((t.rejectWhen ?? []).some((r) => new RegExp(r, 'i').test(text)) || t.toolErrors === 'rejected')
      return { kind: 'rejected', reason: 'validation', message: `tool error: ${text}` };
    return unknownOutcome('server-error', `tool error (may have applied): ${text}`);
  }
  const result = {
    content: a.content ?? [],
    ...(a.structuredContent !== undefined ? { structuredContent: a.structuredContent } : {}),
  };
  return succeeded(t, result, answerValue(a));
}

/** A succeeded outcome; its provider reference is read from `value` at the tool's `resultRef`. */
function succeeded(t: FenceToolConfig, result: unknown, value: unknown): Extract<Outcome, { kind: 'succeeded' }> {
  const ref = t.resultRef ? readPath(value, t.resultRef) : undefined;
  return {
    kind: 'succeeded',
    result,
    ...(typeof ref === 'string' || typeof ref === 'number' ? { providerRef: String(ref) } : {}),
  };
}

type Unknown = Extract<Outcome, { kind: 'unknown' }>;
const unknownOutcome = (cause: Unknown['cause'], message: string, code?: string): Outcome => ({
  kind: 'unknown',
  cause,
  message,
  ...(code ? { code } : {}),
});

/** MCP JSON-RPC error codes: refused arguments or tool are rejections; a timeout or a closed connection is unknown. */
const MCP_ERRORS: Readonly<Record<number, (message: string) => Outcome>> = {
  [-32602]: (message) => ({ kind: 'rejected', reason: 'validation', message, code: 'invalid-params' }),
  [-32601]: (message) => ({ kind: 'rejected', reason: 'configuration', message, code: 'method-not-found' }),
  [-32001]: (m) => unknownOutcome('timeout', `no answer within the timeout: ${m}`, 'timeout'),
  [-32000]: (m) => unknownOutcome('connection-reset', `connection closed before the answer: ${m}`, 'connection-closed'),
};

function classifyToolError(error: unknown): Outcome {
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
  return unknownOutcome(t.cause, message, t.code);
}

export interface FenceAdapterOptions {
  readonly config: FenceConfig;
  readonly client: UpstreamClient;
  /** The upstream's tool list (for descriptions and input schemas); every fenced tool must be in it. */
  readonly tools: readonly Tool[];
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
  const send = (name: string, args: Record<string, unknown>, signal: AbortSignal | undefined) =>
    client.callTool({ name, arguments: args }, undefined, { timeout: config.timeoutMs, ...(signal ? { signal } : {}) });

  return Object.freeze({
    specificationVersion: SPECIFICATION_VERSION,
    provider: config.name,
    operations: Object.freeze(operations),
    deriveProviderKey(operation: string, id: BusinessOperationId): ProviderKey | null {
      const t = tool(operation);
      return t.key
        ? deriveProviderKey(id, { maxLength: t.key.maxLength ?? 64, charset: KEY_CHARSET, prefix: 'rs-' })
        : null;
    },
    async doExecute(operation: string, params: unknown, ctx: ExecuteContext): Promise<Outcome> {
      const t = tool(operation);
      let args = (params ?? {}) as Record<string, unknown>;
      if (t.key && ctx.providerKey) args = setPath(args, t.key.argument, ctx.providerKey);
      try {
        return classifyToolAnswer(t, await send(operation, args, ctx.signal));
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
        answer = (await send(
          l.tool,
          fill(l.arguments ?? {}, ctx.params) as Record<string, unknown>,
          ctx.signal,
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
      const result = { content: [{ type: 'text', text: JSON.stringify(match) }], structuredContent: match };
      return { kind: 'found', outcome: succeeded(t, result, match) };
    },
  });
}
