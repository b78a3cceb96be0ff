import { AsyncLocalStorage } from 'node:async_hooks';
import { isDeepStrictEqual } from 'node:util';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, type Progress, type Tool } from '@modelcontextprotocol/sdk/types.js';
import {
  defineAdapter,
  type FrameOperation,
  type OperationSpec,
  type Outcome,
  UnknownOperationError,
} from '@retrysafe/contract';
import {
  callerRefusal,
  cannotTellFrom,
  lookupMiss,
  noAnswerOutcome,
  retryAfterOf,
  saysMoreFollow,
} from '@retrysafe/contract/provider';
import { normalizeParams } from '@retrysafe/contract/rules';
import { checkParamsSchema, createRedactor } from '@retrysafe/core/internal';
import { LOOKUP_TOOLS } from '../server.js';
import { KEY_CHARSET, named, toolCard } from './fence-card.js';
import { type FenceConfig, FenceConfigError, type FenceToolConfig } from './fence-config.js';
import { INDEX, inMcpDialect, shownInput, textArguments, undeclaredPart } from './fence-schema.js';
import {
  answerValue,
  readPath,
  type ToolAnswer,
  type UpstreamClient,
  UpstreamThrottledError,
  UpstreamUnavailableError,
} from './upstream.js';

/** `target` with `path` set to `value`, or without it when `value` is undefined. */
export function withPath(target: Record<string, unknown>, path: string, value: unknown): Record<string, unknown> {
  const [head = '', ...rest] = path.split('.');
  const { [head]: inner, ...others } = target;
  if (rest.length === 0) return value === undefined ? others : { ...target, [head]: value };
  const next = inner !== null && typeof inner === 'object' && !Array.isArray(inner) ? inner : undefined;
  if (!next && value === undefined) return target;
  return { ...target, [head]: withPath((next ?? {}) as Record<string, unknown>, rest.join('.'), value) };
}

/** `{{path}}`: any argument path (`task-title`, `straße`, `lines.0.ref`). One left as written would ask the upstream for
 * the text `{{task-title}}`, and its miss could send the call again. */
const PLACEHOLDER = /\{\{\s*([^{}]+?)\s*\}\}/g;
const WHOLE = new RegExp(`^${PLACEHOLDER.source}$`);

/** `{{path}}` strings are replaced by that argument of the call (whole-string templates keep the value's type); every
 * path read is pushed to `read`. The paths the call has no value for are pushed to `missing`, and so are those of an
 * object or array put inside text, which has no spelling the upstream could search by (`[object Object]`). */
function fill(template: unknown, args: unknown, missing: string[], read: string[]): unknown {
  const value = (p: string, inText: boolean) => {
    read.push(p);
    const v = readPath(args, p);
    if (v === undefined || (inText && typeof v === 'object' && v !== null)) missing.push(p);
    return v;
  };
  if (typeof template === 'string') {
    const whole = WHOLE.exec(template);
    if (whole) return value(whole[1]!, false);
    return template.replace(PLACEHOLDER, (_m, p: string) => String(value(p, true) ?? ''));
  }
  if (Array.isArray(template)) return template.map((t) => fill(t, args, missing, read));
  if (template !== null && typeof template === 'object')
    return Object.fromEntries(Object.entries(template).map(([k, v]) => [k, fill(v, args, missing, read)]));
  return template;
}

/** Equal as data: an object or array argument too (key order aside). */
const same = (a: unknown, b: unknown) => a === b || (typeof a === 'object' && a !== null && isDeepStrictEqual(a, b));

/** The tool's rules as its card compares a repeated call's arguments: `paramComparison` first, then `normalize`. */
const cardRules = (t: FenceToolConfig) => [...(t.paramComparison ?? []), ...(t.normalize ?? [])] as Rules;
type Rules = Parameters<typeof normalizeParams>[1];

/** A copy of `holder` with `value` at `parts`; an array stays an array, so a rule on every item reads the one named. */
function replaced(holder: unknown, parts: readonly string[], value: unknown): unknown {
  const [head, ...rest] = parts;
  if (head === undefined) return value;
  const copy = (
    Array.isArray(holder) ? [...holder] : { ...(typeof holder === 'object' && holder !== null ? holder : {}) }
  ) as Record<string, unknown>;
  copy[head] = replaced(copy[head], rest, value);
  return copy;
}

/** `into` with what `from` holds at `parts` (through every item where a part crosses an array, as a rule reads). */
function grafted(into: unknown, from: unknown, parts: readonly string[]): unknown {
  const [head, ...rest] = parts;
  if (head === undefined) return from;
  if (Array.isArray(into) && Array.isArray(from) && !INDEX.test(head))
    return into.map((item, i) => grafted(item, from[i], parts));
  if (typeof into !== 'object' || into === null || typeof from !== 'object' || from === null) return into;
  if (!Object.hasOwn(from, head)) return into;
  return replaced(
    into,
    [head],
    grafted((into as Record<string, unknown>)[head], (from as Record<string, unknown>)[head], rest),
  );
}

/** The call's arguments as its card reads them: each intent argument as its id does (`normalize` alone: a
 * `paramComparison` rule above it, or on every item of an array it names an item of, compares only calls of one id),
 * the others as a repeated call's are compared. */
function comparable(t: FenceToolConfig, args: unknown): unknown {
  const compared = normalizeParams(args, cardRules(t));
  if (!t.paramComparison) return compared;
  const asId = normalizeParams(args, (t.normalize ?? []) as Rules);
  return t.intent.reduce((out, path) => grafted(out, asId, path.split('.')), compared);
}

/** `value`, put at an argument path of the call's `args`, as the tool's card reads it (its rules at, above or beneath). */
const normalAt = (t: FenceToolConfig, args: unknown, path: string, value: unknown) =>
  readPath(comparable(t, replaced(args, path.split('.'), value)), path);

/** Whether dot paths `a` and `b` name one value or one within the other, where a part that is not an index crosses
 * every item of an array (`lines.ref` reads `lines.0.ref`), as a rule's path does. */
function overlaps(a: readonly string[], b: readonly string[]): boolean {
  const [x, ...restA] = a;
  const [y, ...restB] = b;
  if (x === undefined || y === undefined) return true;
  if (x === y) return overlaps(restA, restB);
  // An index on one side, a field on the other: the field's path may cross the array there.
  if (INDEX.test(x) && !INDEX.test(y)) return overlaps(restA, b);
  if (INDEX.test(y) && !INDEX.test(x)) return overlaps(a, restB);
  return false;
}

/** Whether a rule that is not an exact comparison reads the value at an argument path (at, above or beneath it). */
const normalised = (t: FenceToolConfig, path: string) =>
  cardRules(t).some((r) => r.compare !== 'exact' && overlaps(r.field.split('.'), path.split('.')));

/** Whether the card reads the argument at `path` left out as `[]` (a rule there with empty-array-as-absent): a call
 * without it is matched as one with `[]`, an item with `[]` or none being its own. */
const emptyWhenAbsent = (t: FenceToolConfig, path: string) =>
  cardRules(t).some((r) => r.field === path && r.compare !== 'exact' && r.steps?.includes('empty-array-as-absent'));

const clip = (s: string) => (s.length > 200 ? `${s.slice(0, 200)}…` : s);

const matches = (patterns: readonly string[] | undefined, text: string) =>
  (patterns ?? []).some((r) => new RegExp(r, 'i').test(text));

/** An error the fence file says means the key holds another request (its effect may exist), or one still in flight. */
function keyAnswer(t: FenceToolConfig, text: string, message = text): Outcome | null {
  if (matches(t.key?.inProgressWhen, text)) return { kind: 'in-progress', message };
  if (matches(t.key?.conflictWhen, text)) return { kind: 'rejected', reason: 'conflict', message, code: 'key-taken' };
  return null;
}

/** The official SDK's McpServer answers this once the tool's handler has run (its answer did not fit its own output
 * schema): as a tool error, or thrown as invalid params by older versions. */
const RAN_THEN_REFUSED = /^(MCP error -32602: )?Output validation error:/;
/** Its answers, as tool errors, that it refused a call of tool `name` before the handler ran: a tool it no longer has or
 * disabled, arguments over its element limit or refused by its own check. Only its exact words: it answers whatever
 * a handler throws (after its effect, maybe) the same way. */
function refusedUnrun(name: string, text: string): boolean {
  const tool = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const args = `Invalid arguments for tool ${tool}: `;
  return new RegExp(
    `^MCP error -32602: (Tool ${tool} (not found|disabled)$|${args}arguments contain more than the maximum of \\d+ elements$|Input validation error: ${args})`,
  ).test(text);
}

/** A tool error is rejected or unknown as the fence file says; never throws. */
function classifyToolAnswer(t: FenceToolConfig, name: string, answer: unknown): Outcome {
  const a = (answer ?? {}) as ToolAnswer;
  if (a.isError) {
    const text = clip(
      (a.content ?? [])
        .map((c) => c.text ?? '')
        .join(' ')
        .trim() || 'the tool answered an error',
    );
    const keyTaken = keyAnswer(t, text, `tool error: ${text}`);
    if (keyTaken) return keyTaken;
    if (RAN_THEN_REFUSED.test(text)) return unknownOutcome('server-error', `tool error after the tool ran: ${text}`);
    if (refusedUnrun(name, text))
      return MCP_ERRORS[ErrorCode.InvalidParams]!(`tool error before the tool ran: ${text}`);
    if (matches(t.rejectWhen, text) || t.toolErrors === 'rejected')
      return { kind: 'rejected', reason: 'validation', message: `tool error: ${text}` };
    return unknownOutcome('server-error', `tool error (may have applied): ${text}`);
  }
  return succeeded(t, toolResult(a), answerValue(a));
}

/** A tool answer as the fence stores it and gives it back: its content, structured content and `_meta` (what the
 * host shows it with: an MCP App's `ui`), nothing else. */
export const toolResult = (a: ToolAnswer) => ({
  content: a.content ?? [],
  ...(a.structuredContent !== undefined ? { structuredContent: a.structuredContent } : {}),
  ...(a._meta !== undefined ? { _meta: a._meta } : {}),
});

/** A succeeded outcome; its provider reference is read from `value` at the tool's `resultRef`. */
function succeeded(t: FenceToolConfig, result: unknown, value: unknown): Extract<Outcome, { kind: 'succeeded' }> {
  const ref = t.resultRef ? readPath(value, t.resultRef) : undefined;
  return {
    kind: 'succeeded',
    result,
    ...(typeof ref === 'string' || typeof ref === 'number' ? { providerRef: String(ref) } : {}),
  };
}

/** The outcome without the values of the host's `_meta` in its message: the upstream got them with the call (a user,
 * a session) and may repeat them. Its numbers and flags stay, as the arguments' do (textArguments). */
function withoutMeta(outcome: Outcome, meta: Record<string, unknown> | undefined): Outcome {
  if (meta === undefined || !('message' in outcome) || typeof outcome.message !== 'string') return outcome;
  const texts = JSON.stringify(meta, (_, v) => (typeof v === 'number' || typeof v === 'boolean' ? undefined : v));
  const redactor = createRedactor({}, ['_meta']).withValuesFrom({ _meta: JSON.parse(texts) });
  return { ...outcome, message: redactor.text(outcome.message) };
}

type Unknown = Extract<Outcome, { kind: 'unknown' }>;
const unknownOutcome = (cause: Unknown['cause'], message: string, code?: string): Outcome => ({
  kind: 'unknown',
  cause,
  message,
  ...(code ? { code } : {}),
});

/** Refused arguments or tool are rejections; a timeout or a closed connection is unknown. */
const MCP_ERRORS: Readonly<Record<number, (message: string) => Outcome>> = {
  [-32602]: (message) => ({ kind: 'rejected', reason: 'validation', message, code: 'invalid-params' }),
  [-32601]: (message) => ({ kind: 'rejected', reason: 'configuration', message, code: 'method-not-found' }),
  [-32001]: (m) => unknownOutcome('timeout', `no answer within the timeout: ${m}`, 'timeout'),
  [-32000]: (m) => unknownOutcome('connection-reset', `connection closed before the answer: ${m}`, 'connection-closed'),
  // Not processed: the user must open a URL first, then the same call may be sent. Its text and URLs go to the host
  // alone (a URL may carry a one-time token).
  [ErrorCode.UrlElicitationRequired]: () => ({
    kind: 'rejected',
    reason: 'action-required',
    message: 'the upstream asks the user to open a URL first (URL elicitation required); nothing was processed',
    code: 'url-elicitation-required',
  }),
};

function classifyToolError(error: unknown, tool?: FenceToolConfig): Outcome {
  const code = (error as { code?: unknown } | null)?.code;
  const message = clip(error instanceof Error ? error.message : String(error));
  // An MCP error the upstream threw (invalid params, say) may be its answer that the key is taken.
  const keyTaken = tool && typeof code === 'number' ? keyAnswer(tool, message) : null;
  if (keyTaken) return keyTaken;
  if (code === ErrorCode.InvalidParams && RAN_THEN_REFUSED.test(message))
    return unknownOutcome('server-error', `invalid params after the tool ran: ${message}`);
  // Refused before sending: the upstream is down and could not be restarted, or the client had no connection (never
  // sent); or it ended the session, refusing the request unprocessed.
  if (
    error instanceof UpstreamUnavailableError ||
    (error instanceof Error && code === undefined && error.message === 'Not connected')
  ) {
    const neverSent = !(error instanceof UpstreamUnavailableError && error.reached) && { neverSent: true as const };
    return { kind: 'not-applied', message: `upstream not reached: ${message}`, code: 'not-connected', ...neverSent };
  }
  // Throttled (HTTP 429): the upstream did not take the request in; it may be sent again after its wait.
  if (error instanceof UpstreamThrottledError) {
    const wait = retryAfterOf(error.retryAfter, error.date);
    return { kind: 'not-applied', message, status: 429, code: 'http-429', ...wait };
  }
  // An HTTP upstream that refuses the token or its scope (MCP authorization: 401, 403) never ran the tool.
  const status = error instanceof StreamableHTTPError ? error.code : undefined;
  const refused = callerRefusal(status);
  if (refused) return { kind: 'rejected', reason: refused, message, code: `http-${status}` };
  if (typeof code === 'number' && MCP_ERRORS[code]) return MCP_ERRORS[code](message);
  return noAnswerOutcome(error);
}

/** A host's call as its upstream calls see it: the relay of their progress, the host's `_meta`; the adapter puts there
 * the upstream's URL elicitation error, which goes to the host as sent. */
export const fencedCall = new AsyncLocalStorage<{
  onprogress?: (p: Progress) => void;
  urlRequired?: unknown;
  meta?: Record<string, unknown>;
}>();

type FencedOperation = FrameOperation & { readonly tool: FenceToolConfig };

/** The fence file's tool `name` over the upstream's tools as `listed`; throws why it cannot be fenced so. */
function fencedOperation(
  config: FenceConfig,
  client: UpstreamClient,
  name: string,
  listed: ReadonlyMap<string, Tool>,
): FencedOperation {
  const t = config.tools[name]!;
  if (LOOKUP_TOOLS.includes(name))
    throw new FenceConfigError(`tools.${name}: the fence's own tool has this name, so it cannot be fenced`);
  const upstream = listed.get(name);
  if (!upstream) throw new UnknownOperationError(config.name, name, [...listed.keys()]);
  if (t.lookup && !listed.has(t.lookup.tool))
    throw new UnknownOperationError(config.name, t.lookup.tool, [...listed.keys()]);
  // An intent argument the upstream does not take would tell apart calls it reads as one: each would be sent.
  const undeclared = t.intent.map((p) => undeclaredPart(upstream.inputSchema, p)).filter((p) => p !== null);
  if (undeclared.length > 0)
    throw new FenceConfigError(
      `tools.${name}.intent names ${undeclared.join(', ')}, which the upstream tool's input schema does not take: calls that differ only there are one request to it, yet would be two operations, each sent`,
    );
  // A key argument it does not take would be ignored: a re-send the card calls safe by key would be a second effect.
  const keyUndeclared = t.key ? undeclaredPart(upstream.inputSchema, t.key.argument) : null;
  if (keyUndeclared !== null)
    throw new FenceConfigError(
      `tools.${name}.key.argument names ${keyUndeclared}, which the upstream tool's input schema does not take: the upstream would ignore the key, and a re-send under it would be a second effect`,
    );
  const card = named(name, () => toolCard(config, name, t));
  // The caller's arguments are checked against the schema it is shown.
  const shown = shownInput(upstream.inputSchema, card);
  const op = {
    name,
    description: upstream.description ?? name,
    card,
    paramsSchema: inMcpDialect(shown, card),
    sensitiveFields: textArguments(shown, t.intent),
    keyRule: t.key ? { maxLength: t.key.maxLength ?? 64, charset: KEY_CHARSET, prefix: 'rs-' } : null,
    tool: t,
  };
  // The contract's checks of the operation over this schema (a provider default it must take), this tool's alone.
  named(name, () => adapterOf(config, client, { [name]: op }));
  return op;
}

/** The fenced upstream tools as one adapter: the runner decides from their cards. Every fenced tool must be in
 * `tools`, the upstream's list. */
export function createFenceAdapter(options: {
  readonly config: FenceConfig;
  readonly client: UpstreamClient;
  readonly tools: readonly Tool[];
}) {
  const { config } = options;
  const listed = new Map(options.tools.map((t) => [t.name, t]));
  const names = Object.keys(config.tools);
  return adapterOf(
    config,
    options.client,
    Object.fromEntries(names.map((n) => [n, fencedOperation(config, options.client, n, listed)])),
  );
}

/** The fence over the upstream's tools as it lists them now: the adapter is made again when the list changes, and a
 * tool the fence would refuse at start over the new list is refused alone (its calls answered that nothing was sent).
 * The operation's id is the fence file's, never the schema's: a change never gives an operation under way another id. */
export function followUpstream(config: FenceConfig, upstream: UpstreamClient & { readonly tools: readonly Tool[] }) {
  let tools = upstream.tools;
  let now = { adapter: createFenceAdapter({ config, client: upstream, tools }), refused: new Map<string, string>() };
  const again = () => {
    const listed = new Map(tools.map((t) => [t.name, t]));
    const operations: Record<string, FencedOperation> = {};
    const refused = new Map<string, string>();
    // A fenced tool the upstream no longer lists is unknown to the host, and called by none.
    for (const name of Object.keys(config.tools).filter((n) => listed.has(n)))
      try {
        const op = fencedOperation(config, upstream, name, listed);
        checkParamsSchema(op as unknown as OperationSpec);
        operations[name] = op;
      } catch (e) {
        refused.set(name, e instanceof Error ? e.message : String(e));
      }
    // With none it can fence, the last adapter stays: each of its tools is refused or no longer listed.
    const some = Object.keys(operations).length > 0;
    return { adapter: some ? adapterOf(config, upstream, operations) : now.adapter, refused };
  };
  return {
    /** The fence file's tools: fenced or refused, never passed through. */
    names: new Set(Object.keys(config.tools)),
    /** The adapter over the upstream's tools as last listed, and the fenced tools refused over them, with why. */
    current() {
      if (upstream.tools !== tools) {
        tools = upstream.tools;
        now = again();
      }
      return now;
    },
  };
}
export type Fence = ReturnType<typeof followUpstream>;

/** The fenced tools' `operations` as one adapter, whose calls go to `client`. */
function adapterOf(config: FenceConfig, client: UpstreamClient, operations: Record<string, FencedOperation>) {
  const send = (name: string, args: unknown, signal: AbortSignal) => {
    // The upstream's progress goes to the hosts that asked for it and, as a host's timeout does, restarts the timeout
    // (whether a host asked or not: the outcome must not depend on it).
    const { onprogress, meta } = fencedCall.getStore() ?? {};
    const params = { name, arguments: args as Record<string, unknown>, ...(meta ? { _meta: meta } : {}) };
    return client.callTool(params, undefined, {
      timeout: config.timeoutMs,
      signal,
      ...(onprogress ? { onprogress, resetTimeoutOnProgress: true } : {}),
    });
  };
  /** The arguments as sent upstream: the caller's, with the fence's key at its argument. */
  const withKey = (t: FenceToolConfig, params: unknown, key: string | null) =>
    t.key && key ? withPath(params as Record<string, unknown>, t.key.argument, key) : params;

  return defineAdapter({
    provider: config.name,
    account: config.account,
    operations,
    async execute({ name, tool: t }, params, ctx) {
      const call = fencedCall.getStore();
      let outcome: Outcome;
      try {
        outcome = classifyToolAnswer(t, name, await send(name, withKey(t, params ?? {}, ctx.providerKey), ctx.signal));
      } catch (error) {
        outcome = classifyToolError(error, t);
        if (outcome.code === 'url-elicitation-required' && call) call.urlRequired = error;
      }
      return withoutMeta(outcome, call?.meta);
    },
    // Never called for a tool without a lookup: its card says lookup.method none.
    async lookup({ tool: t, card }, ctx) {
      const l = t.lookup!;
      // The lookup fills and matches from the arguments as sent (the fence's key included).
      const sent = withKey(t, ctx.params ?? {}, ctx.providerKey);
      const wanted = Object.entries(l.match).map(([itemPath, argPath]) => ({
        itemPath,
        argPath,
        want: readPath(sent, argPath),
      }));
      const absent = wanted.filter((w) => w.want === undefined && !emptyWhenAbsent(t, w.argPath)).map((w) => w.argPath);
      const asked: string[] = [];
      const args = fill(l.arguments ?? {}, sent, absent, asked);
      // No value to ask or match by: an item that is there would not be found, and "not found" could send it again.
      if (absent.length > 0)
        return {
          kind: 'cannot-tell',
          reason: `the call has no ${[...new Set(absent)].join(', ')} to look it up by (absent, or an object or list inside lookup text)`,
        };
      let answer: ToolAnswer;
      try {
        answer = (await send(l.tool, args, ctx.signal)) as ToolAnswer;
      } catch (error) {
        const outcome = classifyToolError(error);
        return cannotTellFrom(outcome, `lookup tool ${l.tool} gave no answer: ${outcome.kind}`);
      }
      if (answer.isError) return { kind: 'cannot-tell', reason: `lookup tool ${l.tool} answered an error` };
      const value = answerValue(answer);
      const items = readPath(value, l.items);
      if (!Array.isArray(items))
        return { kind: 'cannot-tell', reason: `lookup tool ${l.tool}: no list at "${l.items}" in its answer` };
      // Another spelling of this operation's arguments (one id, the same params) may have made the item: it is
      // compared as the card reads them.
      const normal = wanted.map((w) => ({ ...w, want: normalAt(t, sent, w.argPath, w.want) }));
      const [match, ...others] = items.filter((item) =>
        normal.every(({ itemPath, argPath, want }) => same(normalAt(t, sent, argPath, readPath(item, itemPath)), want)),
      );
      // Two items of this operation are a duplicate already made: adopting one would hide the other from a person,
      // who is told which (by resultRef, else by their place in the answer).
      if (others.length > 0) {
        const refs = [match!, ...others].map(
          (i) => succeeded(t, i, i).providerRef ?? `${l.items}[${items.indexOf(i)}]`,
        );
        const reason = `${refs.length} items of ${l.tool} match this call: a duplicate exists`;
        return { kind: 'cannot-tell', reason, duplicates: refs };
      }
      // A page with more after it is not the whole list: the item, or a second one, may be on a page not read.
      if (l.more !== undefined && saysMoreFollow(readPath(value, l.more)))
        return {
          kind: 'cannot-tell',
          reason: `${match === undefined ? 'no item' : 'one item'} on this page of ${l.tool}, and its answer says more follow (${l.more})`,
        };
      // Asked by this call's spelling of a normalised argument: the upstream may list the item made by another
      // spelling of the same operation only when asked by that one.
      const spelled = [...new Set(asked.filter((p) => normalised(t, p)))];
      if (match === undefined && spelled.length > 0)
        return {
          kind: 'cannot-tell',
          reason: `no item in ${l.tool}'s answer, asked by ${spelled.join(', ')} as this call spells it: the card reads other spellings as this operation's, which ${l.tool} may list only when asked by them`,
        };
      if (match === undefined) {
        // Absent only by the card's rule, the runner's too: once the call can no longer land and would show.
        const miss = `no item of ${l.tool} matches ${Object.keys(l.match).join(', ')}`;
        return lookupMiss(card, ctx, miss);
      }
      const result = { content: [{ type: 'text', text: JSON.stringify(match) }], structuredContent: match };
      return { kind: 'found', outcome: succeeded(t, result, match) };
    },
  });
}
