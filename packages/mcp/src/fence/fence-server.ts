import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  ErrorCode,
  McpError,
  type Progress,
  type ProgressToken,
  ResultSchema,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { type AdapterV1, validateCard } from '@retrysafe/contract';
import { agentIdempotentHint, changedParamsRevise, describeNormalization } from '@retrysafe/contract/rules';
import type { AgentToolDefinition, AgentToolResult } from '@retrysafe/core/agent';
import { ANSWER_PROPERTIES, type Extra, reply, type ServingOptions, serveTools } from '../server.js';
import { type Fence, fencedCall, toolResult, withPath } from './fence-adapter.js';
import { isResource, mapRefs, shownInput } from './fence-schema.js';
import { asSent, type Host, hostCall, NO_TIMEOUT } from './host-sessions.js';
import { answerValue, type ToolAnswer, type Upstream, UpstreamUnavailableError } from './upstream.js';
import { taskOnly } from './upstream-task.js';

export const UNFENCED_NOTE = '[not fenced by retrysafe: a re-issued call may repeat its effect]';

/** The argument that carries the fence's provider key: the fence sets it, so the model never does. */
const keyArgument = (adapter: AdapterV1, name: string): string | null => {
  const value = adapter.operations[name]?.card.providerKey.name.value;
  return typeof value === 'string' ? value : null;
};

/** A fenced tool as the fence lists it: its description and hints, its input as shownInput says, the output schema
 * widened to the fence's answer. */
function fencedListing(adapter: AdapterV1, t: Tool) {
  const card = adapter.operations[t.name]!.card;
  const undeclared = validateCard(card).unknowns;
  const { normalize, optionalIntentFields: optional } = card.businessOperationId;
  const compared = card.paramComparison
    ? ` (compared after ${describeNormalization(card.paramComparison)}; the others exactly)`
    : '';
  const description = [
    t.description ?? '',
    `[fenced by retrysafe] One business operation per intent (${card.businessOperationId.intentFields.join(', ')}${optional ? `; ${optional.join(', ')} may be left out, another operation than any value` : ''}${normalize ? `; read after ${describeNormalization(normalize)}` : ''}): if you got no answer or an error that is not a conflict, call again with the same intent — the call maps to the same operation and returns its result instead of doing it twice.`,
    changedParamsRevise(card)
      ? `Changed non-intent arguments${compared} are sent as the operation's next change once the last is done (while another is in flight, a conflict: nothing sent, call again once it ends); the same arguments again are answered from the ledger. "in-progress": check back with retrysafe_status; "needs-human": a person decides, do not retry.`
      : `A changed non-intent argument of an operation already started is refused as a conflict${compared}. "in-progress": check back with retrysafe_status; "needs-human": a person decides, do not retry.`,
    undeclared.length
      ? `Upstream facts not declared: ${undeclared.join(', ')} — retrysafe will not re-send where they matter.`
      : '',
  ];
  return {
    ...t,
    description: description.filter(Boolean).join('\n'),
    inputSchema: shownInput(t.inputSchema, card),
    ...(t.outputSchema ? { outputSchema: fencedOutputSchema(t.outputSchema) } : {}),
    // Through the fence a re-issued call with the same intent is the same operation: that is the hint's meaning
    // for the caller. Whether the upstream itself folds re-sends is the card's business (shown in _meta).
    annotations: { ...t.annotations, idempotentHint: true },
    _meta: {
      ...t._meta,
      retrysafe: {
        fenced: true,
        operation: card.operation,
        intentFields: card.businessOperationId.intentFields,
        upstreamFoldsResends: agentIdempotentHint(card),
        undeclared,
      },
    },
  };
}

/** A tool the upstream runs only as a task is called through the fence as any tool: the fence runs its task. */
const callable = (t: Tool): Tool =>
  taskOnly(t) ? { ...t, execution: { ...t.execution, taskSupport: 'forbidden' } } : t;

/** The upstream's progress, relayed to the host under the host's progressToken. The SDK sends its own token upstream,
 * and drops progress it did not ask for. */
const relay = (extra: Extra, token: ProgressToken) => (p: Progress) =>
  void extra
    .sendNotification({ method: 'notifications/progress', params: { ...p, progressToken: token } })
    .catch(() => undefined);

/** A request forwarded upstream with the host's cancellation and no deadline of the fence's: the host's own timeout,
 * which the fence cannot know, ends it. When it carries the host's progressToken, the upstream's progress is relayed. */
function forward<T>(extra: Extra, token: ProgressToken | undefined, send: (o: RequestOptions) => Promise<T>) {
  const progress = token === undefined ? {} : { onprogress: relay(extra, token) };
  return send({ signal: extra.signal, timeout: NO_TIMEOUT, ...progress }).catch(unavailable);
}

/** The host request's `_meta` (its locale or user, a trace context) as the upstream gets it with a fenced call, as
 * with a passed-through one: without the progress token (the fence asks for the upstream's progress itself) and the
 * fence's own `retrysafe/` keys. */
function hostMeta(meta: Record<string, unknown> | undefined) {
  const kept = Object.entries(meta ?? {}).filter(([k]) => k !== 'progressToken' && !k.startsWith('retrysafe/'));
  return kept.length > 0 ? Object.fromEntries(kept) : undefined;
}

const unavailable = (e: unknown): never => {
  throw e instanceof UpstreamUnavailableError
    ? new McpError(ErrorCode.InternalError, `${e.message}; nothing was sent: call again later`)
    : asSent(e);
};

// The fence: fenced tools run through the runner with their cards, every other tool and request passes through as the
// upstream offers it (and says so), and the upstream's notifications are forwarded.
export function createFenceServer(options: ServingOptions & { fence: Fence; upstream: Upstream }): Server {
  const { fence, upstream } = options;
  // Besides tools, the fence forwards what the upstream offers of these.
  const { resources, prompts, completions, logging } = upstream.capabilities;
  const capabilities = { resources, prompts, completions, logging, tools: { listChanged: true } };
  const { instructions } = upstream;
  const server = new Server(
    { name: `retrysafe-fence(${fence.current().adapter.provider})`, version: '0.1.0' },
    { capabilities, ...(instructions ? { instructions } : {}) },
  );
  const listed = () => {
    const { adapter, refused } = fence.current();
    return upstream.tools.map(callable).map((t) => {
      const why = refused.get(t.name);
      if (why !== undefined)
        return { ...t, description: `[refused by retrysafe: ${why}] ${t.description ?? ''}`.trim() };
      if (fence.names.has(t.name)) return fencedListing(adapter, t);
      return { ...t, description: `${UNFENCED_NOTE} ${t.description ?? ''}`.trim() };
    });
  };
  // What the upstream asks while a call of this host runs goes to it, on that call's stream; at other times to the
  // host session, once it has said what it can answer.
  const host: Host = {
    capabilities: () => server.getClientCapabilities(),
    ask: (r, o) => server.request(r as never, ResultSchema, o),
    subscribed: new Set(),
  };
  const asHost = <T>(extra: Extra, f: () => Promise<T>) =>
    hostCall.run({ host, ask: (r, o) => extra.sendRequest(r as never, ResultSchema, o) }, f);
  let leave: () => void = () => undefined;
  server.oninitialized = () => {
    leave = upstream.addHost(host);
  };
  // The host's own notifications (its roots changed) are the upstream's business.
  server.fallbackNotificationHandler = async (n) => void (await upstream.notify(n));
  const lookups: [string, string] = ["from a fenced tool's _meta.retrysafe", 'fenced operations'];
  const callTool: Parameters<typeof serveTools>[4] = async (req, extra, run) => {
    const { name, arguments: args = {}, _meta } = req.params;
    const tool = upstream.tools.find((t) => t.name === name);
    if (!tool) return undefined;
    // A call that cannot be sent is refused before anything is claimed: it is never handed off.
    await upstream.ready().catch(unavailable);
    if (fence.names.has(name)) {
      const { adapter, refused } = fence.current();
      const why = refused.get(name);
      if (why !== undefined)
        throw new McpError(
          ErrorCode.InternalError,
          `${name} cannot be fenced as the upstream lists it now (${why}); nothing was sent: change the fence file and restart the fence`,
        );
      const key = keyArgument(adapter, name);
      const params = key ? withPath(args, key, undefined) : args;
      const definition = { name, adapter, operation: name } as unknown as AgentToolDefinition;
      const token = _meta?.progressToken;
      // The hosts that ask for progress (this one, or one of an identical call that joins this run) hear the upstream's;
      // the run asks for it whoever asked, since such a host may join later.
      const hearers = new Set(token === undefined ? [] : [relay(extra, token)]);
      const hear = (p: Progress) => {
        for (const h of hearers) h(p);
      };
      const call: Parameters<typeof fencedCall.run>[0] = { onprogress: hear, meta: hostMeta(_meta) };
      // Refused until the user opens a URL: the host (and that of an identical call sharing this run) gets the upstream's
      // error as a pass-through call does.
      const urlRequired = (r: AgentToolResult) => {
        if (call.urlRequired !== undefined && r.status === 'needs-human') throw asSent(call.urlRequired);
        return r;
      };
      const result = await fencedCall.run(call, () => run(definition, params, _meta, urlRequired, hearers));
      return fencedReply(result, tool.outputSchema as Record<string, unknown> | undefined);
    }
    // Pass-through: unchanged (its _meta too), with the caller's cancellation and the upstream's progress.
    const params = { name, ...(req.params.arguments ? { arguments: args } : {}), ...(_meta ? { _meta } : {}) };
    return forward(extra, _meta?.progressToken, (o) => upstream.callTool(params, undefined, o));
  };
  serveTools(server, options, lookups, listed, (req, extra, run) => asHost(extra, () => callTool(req, extra, run)));

  // Every other request (resources, prompts, completions, logging) goes to the upstream, in the session the hosts
  // share. The SDK answers logging/setLevel itself when logging is declared, but the upstream is the one that logs.
  server.removeRequestHandler('logging/setLevel');
  server.fallbackRequestHandler = async ({ method, params }, extra) =>
    (await asHost(extra, () =>
      forward(extra, params?._meta?.progressToken, (o) => upstream.hostRequest(host, { method, params }, o)),
    )) as never;
  const unsubscribe = upstream.onNotification(host, (n) => void server.notification(n).catch(() => undefined));
  server.onclose = () => void (unsubscribe(), leave());
  return server;
}

type Schema = { readonly [k: string]: unknown };

/** The fence's own answer (a lookup's item, or a call that did not end `done`): `retrysafe` status, `result` value. */
const FENCE_ANSWER_SCHEMA = {
  type: 'object',
  properties: {
    retrysafe: {
      type: 'object',
      properties: ANSWER_PROPERTIES,
      required: ['status', 'message'],
    },
    result: {},
  },
  required: ['retrysafe'],
} as const;

/** The upstream's outputSchema or the fence's answer. `$schema` and `$defs` stay at the root; every other `#…`
 * reference into the upstream's schema is rebased onto where it now is, unless it has its own `$id` (its references
 * resolve inside it). */
function fencedOutputSchema({ $schema, ...own }: Schema): Schema {
  const top = $schema === undefined ? {} : { $schema };
  if (isResource(own)) return { ...top, type: 'object', anyOf: [own, FENCE_ANSWER_SCHEMA] };
  const { $defs, definitions, ...rest } = own;
  const defs = Object.entries({ $defs, definitions }).filter(([, v]) => v !== undefined);
  return {
    ...top,
    ...(rebase({ ...Object.fromEntries(defs), type: 'object', anyOf: [rest, FENCE_ANSWER_SCHEMA] }) as Schema),
  };
}

/** Where the upstream's own schema sits in the fence's (`anyOf[0]`), as a JSON pointer. */
const OWN = '#/anyOf/0';
/** `schema` with each local `$ref` (`#`, `#/…`) that does not go to the root's `$defs` or `definitions` rebased under OWN. */
const rebase = (schema: unknown) =>
  mapRefs(schema, (node) =>
    /^#(\/|$)/.test(node.$ref) && !/^#\/(\$defs|definitions)(\/|$)/.test(node.$ref)
      ? { ...node, $ref: `${OWN}${node.$ref.slice(1)}` }
      : node,
  );

// The validator the official SDK client uses. It reuses what it compiled under a root `$id`: each upstream schema is
// compiled once, fenced (no root `$id`) without the fence's answer, so a changed schema is never judged by the old.
const validator = new AjvJsonSchemaValidator();
const checks = new WeakMap<Schema, (value: unknown) => boolean>();

/** Whether `value` fits the upstream's `schema`; one that does not compile fits nothing (the call was applied: never
 * throw). */
function fits(schema: Schema, value: unknown): boolean {
  let check = checks.get(schema);
  if (!check) {
    const fenced = fencedOutputSchema(schema);
    try {
      const own = validator.getValidator({ ...fenced, anyOf: [(fenced.anyOf as unknown[])[0]] } as never);
      check = (v) => own(v).valid;
    } catch {
      check = () => false;
    }
    checks.set(schema, check);
  }
  return check(value);
}

// `done` whose answer fits the upstream's outputSchema (if any): that answer unchanged; other `done`: the fence's
// answer with the value under `result`; any other status: the fence's answer as an error result.
function fencedReply(r: AgentToolResult, schema: Schema | undefined) {
  const retrysafe = {
    status: r.status,
    businessOperationId: r.businessOperationId,
    ...(r.status === 'done' ? { adopted: r.adopted } : {}),
  };
  if (r.status !== 'done') return { ...reply({ retrysafe: r }), isError: true, _meta: { retrysafe } };
  const stored = (r.result ?? {}) as ToolAnswer;
  // The upstream's own _meta comes with its answer, in either form; the fence's `retrysafe` is beside it.
  const _meta = { ...stored._meta, retrysafe };
  const value = stored.structuredContent;
  if (!schema || (value !== undefined && fits(schema, value))) return { ...toolResult(stored), _meta };
  const answer = {
    retrysafe: { ...retrysafe, providerRef: r.providerRef, message: r.message },
    result: answerValue(stored),
  };
  return { ...reply(answer), _meta };
}
