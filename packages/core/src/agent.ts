/** @retrysafe/core/agent: operations as agent tools and their structured answers, for @retrysafe/mcp and @retrysafe/ai-sdk. */
import {
  type AdapterV1,
  asBusinessOperationId,
  ConflictError,
  type FieldError,
  fingerprint,
  type HandoffPacket,
  IntentLookupError,
  InvalidIdError,
  InvalidIntentError,
  InvalidParamsError,
  type Ledger,
  type OperationRecord,
  type OperationSpec,
  PayloadLimitError,
  type Receipt,
  type RetrySafetyCard,
  sha256Hex,
  validateCard,
} from '@retrysafe/contract';
import { leaseLive, RECOVERABLE_STATES, stateWords } from '@retrysafe/contract/ledger';
import {
  agentIdempotentHint,
  changedParamsRevise,
  describeNormalization,
  lookupAvailable,
  resendSafety,
} from '@retrysafe/contract/rules';
import { AdapterContractError } from './errors/adapter-contract-error.js';
import { RunnerConfigurationError } from './errors/runner-configuration-error.js';
import { fixIsNewOperation, marksSafe, waitsForUser } from './handoff.js';
import { identityOf, resolvesIntent } from './intake/identity.js';
import { createRedactor, type RedactOptions, type Redactor, RUNNER_REDACT } from './redact.js';
import { typedLedger } from './runner/context.js';
import type { RunInput, Runner, RunResult } from './runner/types.js';

/** The runner's result without its receipts and with a message for the model, or a refusal before the claim. */
export type AgentToolResult = ReturnType<typeof toAgentResult> | NonNullable<ReturnType<typeof refusalAnswer>>;

/** The answer to a refusal the agent's arguments met before the claim, else null (not the agent's to answer).
 * `idOf`: the id the operation's `intentFields` give, or null where they give none; `looksUp`: the adapter resolves
 * them first (doResolveIntent), so their own id is no operation's; `revises`: other params are the next change (a set). */
export function refusalAnswer(
  err: unknown,
  idOf: () => string | null,
  {
    intentFields = [],
    looksUp = false,
    revises = false,
  }: { intentFields?: readonly string[]; looksUp?: boolean; revises?: boolean } = {},
) {
  if (ConflictError.isInstance(err)) {
    const { businessOperationId, field, paths, needsPerson, storedMayApply } = err;
    // Redone under other intent fields, a request that applied or may still apply (in flight elsewhere, waiting for
    // a person, driven on later) would happen twice. Other params than a stored request nothing applied are answered to
    // a call that may follow another (agentRunner forgot, or never saw, the end it was told): the same call is a new one.
    const message = needsPerson
      ? `${err.message}. A person must resolve this operation: do not redo it under other intent fields, and do not retry it.`
      : revises && field === 'params' && storedMayApply
        ? `${err.message}. These arguments were not sent: call again with them (later, while another change of the same target is in flight) to send them as its next change.`
        : storedMayApply
          ? `${err.message}. Its stored request was applied or may still be: do not redo it under other intent fields (that could do it twice); call again with the original arguments for its result (later, if it is in progress). A correction of it is not a new operation: change what it made with an update operation, or ask a person. For an operation that is not a repeat of this one, change an intent field.`
          : field === 'params'
            ? `${err.message}. Nothing of the stored request was applied: call again with these arguments to send them as a corrected request, or with the original arguments for its answer.`
            : `${err.message}. If you meant a different operation, change an intent field; otherwise call again with the original arguments.`;
    return { status: 'conflict' as const, businessOperationId, field, paths, needsPerson, storedMayApply, message };
  }
  // One rule whichever operation: the id comes from the intent fields alone, whatever else is wrong with the call.
  const invalid = (fields: readonly FieldError[], message: string) => {
    const id = looksUp ? null : idOf();
    const named = intentFields.join(', ');
    const none =
      id !== null
        ? ''
        : looksUp
          ? ` No business-operation id: it is derived from what the provider resolves the intent fields (${named}) to, and nothing was claimed.`
          : ` No business-operation id: the intent fields (${named}) do not give one.`;
    return {
      status: 'invalid-input' as const,
      businessOperationId: id,
      fields,
      message: `${sentence(message)}${none}`,
    };
  };
  if (PayloadLimitError.isInstance(err)) {
    const what = err.limit === 'depth' ? `nests deeper than ${err.max} levels` : `is larger than ${err.max} bytes`;
    return invalid([{ path: `(${err.part})`, message: what }], `${err.message}. Send smaller, flatter arguments.`);
  }
  if (InvalidParamsError.isInstance(err))
    return invalid(err.fields, `${err.message}. Correct the named fields and call again.`);
  if (InvalidIntentError.isInstance(err))
    return invalid([{ path: err.path || '(root)', message: err.reason }], err.message);
  // The provider could not answer a look-up now: not the arguments' fault, and no id could be told yet.
  if (IntentLookupError.isInstance(err)) {
    const { retryAfterMs = null } = err;
    const when = retryAfterMs === null ? 'later' : inAbout(retryAfterMs);
    const message = `${sentence(err.message)} The arguments are not at fault: call again with the same arguments ${when}.`;
    return { status: 'unavailable' as const, businessOperationId: null, retryAfterMs, message };
  }
  // A run or attempt id comes from the host, not from the agent's arguments: not the agent's to correct.
  if (InvalidIdError.isInstance(err) && !RECEIPT_IDS.includes(err.kind)) return invalid([], err.message);
  if (AdapterContractError.isInstance(err))
    return invalid(
      [],
      `${err.message}. The tool cannot take these arguments as it is set up; a person must fix the adapter.`,
    );
  return null;
}

const RECEIPT_IDS = ['run id', 'attempt id'];

/** `<provider>_<operation>` with `_` for every character outside `[A-Za-z0-9_-]`; over 64 characters, cut and ended by a digest. */
export function safeToolName(provider: string, operation: string): string {
  const full = `${provider}.${operation}`;
  const safe = full.replace(/[^A-Za-z0-9_-]/g, '_');
  return safe.length <= 64 ? safe : `${safe.slice(0, 55)}_${sha256Hex(full).slice(0, 8)}`;
}

/** The normalisation the tool's id and comparison apply, in words for a model. */
function normalisationText(card: RetrySafetyCard): string {
  const intent = card.businessOperationId.normalize;
  const params = card.paramComparison;
  return [
    intent?.length
      ? `Intent fields are compared after normalisation (${describeNormalization(intent)}): re-formatting them this way is the same operation.`
      : 'Intent fields are compared exactly as written.',
    params?.length
      ? `Other arguments: ${describeNormalization(params)}; all others exactly.`
      : 'Other arguments are compared exactly.',
  ].join(' ');
}

/** What an agent sees of one operation: tool name, description, input schema, and the card's facts (MCP `_meta`). */
function toolOf(adapter: AdapterV1, operation: string, spec: OperationSpec) {
  const card = spec.card;
  const facts = {
    digest: fingerprint(card),
    cardVersion: card.cardVersion,
    operation: card.operation,
    sideEffect: String(card.sideEffect.kind.value),
    idempotentByNature: card.sideEffect.idempotentByNature.value,
    intentFields: card.businessOperationId.intentFields,
    sameKeyResend: resendSafety(card, null, 0).safe,
    keyRetention: card.retention.minimum.value,
    lookup: lookupAvailable(card),
    lookupDelay: card.lookup.consistencyDelay.value,
    // Facts the card does not know: the runner will not rely on them.
    unknowns: validateCard(card).unknowns,
  } as const;
  const description = [
    spec.description,
    `Retry-safe: the business-operation id is derived from the intent fields (${spec.intentFields.join(', ')}), not from this call's id. If you got no answer, or an error that is not a conflict, call again with the same arguments: the retry maps to the same operation and returns its result instead of doing it twice.`,
    changedParamsRevise(card)
      ? 'Changing an intent field makes it a different operation. Other arguments for the same intent, once the last are set, are sent as its next change (while another change is in flight, "conflict": nothing of this call was sent, call again once it ends); the same arguments again are answered with the last result and not sent, even if the target was changed elsewhere since.'
      : `Changing an intent field makes it a different operation${card.sideEffect.idempotentByNature.value === true ? '' : ', which does it once more even while an earlier call may still take effect (after no answer, call again with the same arguments first)'}; changing other arguments of an operation already started is refused as a conflict (the answer names the differing paths).`,
    'After a rejection that nothing applied (needs-human with field errors), calling again with corrected arguments and the same intent sends the corrected request.',
    normalisationText(card),
    'Every answer carries the businessOperationId (null only in an invalid-input answer whose intent fields give none or are first resolved by the provider, and in an unavailable one); after a timeout of your own, calling again with the same arguments is the way back to it.',
    'Answers: status "done" (with the provider reference; adopted=true if it had already happened), "in-progress" (call again later with the same arguments, or check retrysafe_status where the host offers it), "needs-human" (a person must decide; do not retry as is), "conflict", "invalid-input" (with field errors; nothing was sent), "unavailable" (the provider could not be asked now; nothing was sent: call again later with the same arguments).',
    facts.unknowns.length
      ? `Provider facts not verified: ${facts.unknowns.join(', ')} — retrysafe will not resend where they matter.`
      : '',
  ];
  const title = `${adapter.provider}: ${operation}`;
  return {
    name: safeToolName(adapter.provider, operation),
    qualifiedName: `${adapter.provider}.${operation}`,
    adapter,
    operation,
    title,
    description: description.filter(Boolean).join('\n'),
    inputSchema: spec.paramsSchema,
    annotations: {
      title,
      readOnlyHint: false,
      // Every side effect but none is one an agent host should treat as destructive, an unknown one too.
      destructiveHint: card.sideEffect.kind.value !== 'none',
      idempotentHint: agentIdempotentHint(card),
      openWorldHint: true,
    },
    _meta: { 'retrysafe/card': facts },
  } as const;
}

export type AgentToolDefinition = ReturnType<typeof toolOf>;

/** Tool definitions for the operations named in `only` (tool name or `<provider>.<operation>`; default all). */
export function agentTools(adapters: readonly AdapterV1[], only?: readonly string[]): AgentToolDefinition[] {
  const tools: AgentToolDefinition[] = [];
  for (const adapter of adapters) {
    for (const [name, spec] of Object.entries(adapter.operations) as [string, OperationSpec][]) {
      const full = safeToolName(adapter.provider, name);
      if (only && !only.includes(full) && !only.includes(`${adapter.provider}.${name}`)) continue;
      if (tools.some((t) => t.name === full))
        throw new RunnerConfigurationError('agentTools', `two operations map to the tool name ${full}`);
      tools.push(toolOf(adapter, name, spec));
    }
  }
  // A misspelt name is an error, not a tool the agent silently lacks (as the config's `operations` refuses one).
  const unknown = only?.filter((n) => !tools.some((t) => t.name === n || t.qualifiedName === n));
  if (unknown?.length)
    throw new RunnerConfigurationError(
      'agentTools',
      `no operation is named ${unknown.map((n) => JSON.stringify(n)).join(', ')} (known: ${adapters.flatMap((a) => Object.keys(a.operations).map((o) => `${a.provider}.${o}`)).join(', ') || 'none'}; by tool name or <provider>.<operation>)`,
    );
  return tools;
}

/** `closed`: a person abandoned it, so none of the packet's next actions is open any more. */
function summarizeHandoff(p: HandoffPacket | null, closed = false) {
  if (p === null) return null;
  const { reason, explanation, lastKnown, safeNextActions } = p;
  return {
    reason,
    explanation,
    attempts: p.attempts.length,
    lastKnown,
    safeNextActions: closed ? [] : safeNextActions,
  };
}

export function toAgentResult(r: RunResult) {
  switch (r.status) {
    case 'done': {
      const { receipts: _receipts, ...done } = r;
      const message = r.adopted
        ? 'Already done earlier: this is the existing result, nothing was done twice.'
        : 'Done.';
      return { ...done, message };
    }
    case 'in-progress': {
      const { status, businessOperationId, retryAfterMs } = r;
      const message = `The operation is in progress: another run holds it. Call again with the same arguments ${inAbout(retryAfterMs)} (or check retrysafe_status where the host offers it). It may already have taken effect: do not redo it under other intent fields (a corrected text or title is another operation, and could do it twice).`;
      return { status, businessOperationId, retryAfterMs, message };
    }
    case 'handed-off': {
      // An abandoned operation answers with the packet it was handed off with; its last receipt is the abandon.
      const last = r.receipts.at(-1);
      const abandoned = last?.kind === 'resolve' && last.decision.action === 'abandon';
      const message = handedOffMessage(r.packet, r.receipts, abandoned);
      const handoff = summarizeHandoff(r.packet, abandoned);
      return { status: 'needs-human' as const, businessOperationId: r.businessOperationId, handoff, message };
    }
  }
}

/** When to ask again, for a model. */
const inAbout = (ms: number) => `in about ${Math.max(1, Math.ceil(ms / 1000))} s`;

/** What the model is told of an operation handed off, or abandoned by a person since. */
function handedOffMessage(packet: HandoffPacket, receipts: readonly Receipt[], abandoned: boolean): string {
  if (abandoned)
    return 'A person abandoned this operation: nothing more is done for it, and a call with other arguments for the same intent is refused. Do not retry it.';
  if (waitsForUser(packet, receipts))
    return `The provider asks the user to take a step first: ${sentence(packet.lastKnown.message ?? packet.explanation)} Once the user has, call again with the same arguments: the call is sent again.`;
  const { fields, created } = packet.lastKnown;
  const named = fields?.length
    ? ` The provider named these fields: ${fields.map((f) => `${f.path} (${f.message})`).join(', ')}`
    : '';
  // The corrected call is promised only where the runner will send it (the packet offers resend-with).
  const correctable = marksSafe(packet, 'resend-with');
  // What the rejection left is named whether or not the provider named fields (a declined charge names none).
  const kept = created ? ` The provider kept ${created} from this call: a new call would make a second one.` : '';
  // Not correctable, the effect may exist: redone as a new operation (another intent), it could happen twice.
  const fix = fixIsNewOperation(packet)
    ? `${named}. One is an intent field: a call with it corrected is a new operation, sent under an id of its own (one you give must be new); a person abandons this one.`
    : named && correctable
      ? `${named}; a call with them corrected and the same intent is sent as a corrected request.`
      : `${named}${named ? '.' : ''}${kept}${correctable ? '' : ' Do not redo it under other intent fields either.'}`;
  return `Handed to a person: ${sentence(packet.explanation)} Do not retry this call as is.${fix}`;
}

/** Explanations and provider messages may end without a stop; the next sentence needs one. */
const sentence = (s: string) => (/[.!?]$/.test(s.trimEnd()) ? s.trimEnd() : `${s.trimEnd()}.`);

/** `runner` as the agent tools use it, with the redaction of what the agent is shown built once; a runner wrapped
 * without the `redact` options createRunner keeps on it is refused: what it is shown would miss their secrets. */
export function agentRunner(runner: Runner) {
  const options = (runner as { [RUNNER_REDACT]?: RedactOptions })[RUNNER_REDACT];
  if (options === undefined)
    throw new RunnerConfigurationError(
      'runner',
      'not a runner createRunner built nor a spread of one, so its redaction cannot reach what the agent is shown: pass the runner itself (or { ...runner })',
    );
  // What the agent sent, and personal data it was asked to write, stay readable in a result (a fence declares every
  // text argument sensitive, and a provider echoes them); a token for the provider's client does not.
  const results = createRedactor({ ...options, pii: false });
  const errors = new Map<readonly string[], Redactor>();
  // The end (a hand-off, a correctable conflict) of each operation the agent was last answered, by which end it was: a
  // call of one at rest at another end (reopened by a person or a revision, and ended again), or at one an answer did
  // not tell (in progress, or given before a restart), is told that end first, not sent. Bounded, the oldest dropped
  // first: a forgotten one costs a repeated answer, never a request the user did not act on.
  const told = new Map<string, string>();
  return {
    runner,
    /** Whether the agent's next call of the operation resting at `end` is a new one, made after it was told that end. */
    toldEnd: (end: HandoffPacket) => told.get(end.businessOperationId) === endKey(end),
    /** Notes the end the agent's last answer for `id` told it, which its next call may act on (null: none). */
    answered(id: string, end: HandoffPacket | null) {
      told.delete(id);
      if (end !== null) told.set(id, endKey(end));
      if (told.size > TOLD_KEPT) told.delete(told.keys().next().value!);
    },
    /** A result as the agent is shown it: no client token (a PaymentIntent's client_secret), no field `redact` names. */
    shown: (result: unknown) => results.params(result),
    /** `e` redacted whole with the runner's options, the operation's `sensitiveFields` and their values in `params`:
     * a ledger's or a driver's text may name a person (a role session) or quote a connection string. */
    scrubbed(e: unknown, params?: unknown, sensitiveFields: readonly string[] = NONE): unknown {
      const redactor = errors.get(sensitiveFields) ?? createRedactor(options, sensitiveFields);
      errors.set(sensitiveFields, redactor);
      return redactor.withValuesFrom(params).params(e);
    },
  };
}

export type AgentRunner = ReturnType<typeof agentRunner>;

const NONE: readonly string[] = [];
const TOLD_KEPT = 10_000;
/** Which end: a hand-off after a reopening has a later attempt, or at least a later packet. */
const endKey = (p: HandoffPacket) => `${p.createdAt} ${p.attempts.at(-1)?.attemptId ?? ''}`;
/** A result shown without a runner's options: secrets only. */
const BARE = createRedactor({ pii: false });

/** Runs one tool call and maps every answer, a refusal before the claim included, to a structured result. */
export async function callAgentTool(
  agent: AgentRunner,
  tool: AgentToolDefinition,
  args: unknown,
  call: Pick<RunInput, 'runId' | 'signal'> & { readonly followUp?: boolean } = {},
): Promise<AgentToolResult> {
  const params = args ?? {};
  const spec = tool.adapter.operations[tool.operation]!;
  const idOf = () => {
    try {
      return identityOf(spec, { params }, tool.adapter.account).id;
    } catch {
      return null; // the intent fields cannot give an id either
    }
  };
  // The end the runner found the operation at rest at, asked after its id was resolved (doResolveIntent): a conflict
  // answered on it tells that end.
  let asked: HandoffPacket | null = null;
  const followUp = (end: HandoffPacket) => {
    asked = end;
    return call.followUp === true || !agent.toldEnd(end);
  };
  try {
    const r = await agent.runner.run(tool.adapter, tool.operation, { ...call, followUp, params });
    agent.answered(r.businessOperationId, r.status === 'handed-off' ? r.packet : null);
    if (r.status !== 'done') return toAgentResult(r);
    return toAgentResult({ ...r, result: agent.shown(r.result) });
  } catch (e) {
    const answer = refusalAnswer(e, idOf, {
      intentFields: spec.intentFields,
      looksUp: resolvesIntent(tool.adapter, tool.operation),
      revises: changedParamsRevise(spec.card),
    });
    if (answer !== null) {
      // Other params than a stored request nothing applied: the same call again is the correction.
      const correctable = answer.status === 'conflict' && answer.field === 'params' && !answer.storedMayApply;
      if (answer.status === 'conflict') agent.answered(answer.businessOperationId, correctable ? asked : null);
      return answer;
    }
    throw agent.scrubbed(e, params, spec.sensitiveFields);
  }
}

/** What an operation's status is shown with: `agent`'s redaction on its result (else secrets only), and the ends it
 * tells noted as told to `agent`; `now` judges whether a run holds it. */
export interface StatusView {
  readonly agent?: AgentRunner;
  readonly now?: number;
}

/** The `retrysafe_status` answer for one operation, from the ledger. */
export async function operationStatus(ledger: Ledger, id: string, view: StatusView = {}) {
  const { agent, now = Date.now() } = view;
  const typed = typedLedger(ledger);
  const r = await typed.get(asBusinessOperationId(id));
  if (!r) {
    const message =
      'No operation has this id in the ledger. Pass the businessOperationId an operation tool answered (not a run or attempt id, nor a provider reference). One it answered may since have ended and been pruned: not found does not mean not done, so do not redo the operation on that ground.';
    return { found: false as const, businessOperationId: id, message };
  }
  const open = RECOVERABLE_STATES.includes(r.state);
  agent?.answered(r.businessOperationId, open ? null : r.handoff);
  return {
    found: true as const,
    businessOperationId: r.businessOperationId,
    operation: r.operation,
    state: r.state,
    attempts: r.attemptCount,
    providerRef: r.providerRef,
    result: r.state === 'succeeded' ? (agent?.shown ?? BARE.params)(r.result) : null,
    message: statusMessage(r, now, await receiptsToTell(typed, r)),
    // Open again (a person resumed it), the hand-off it left is no longer what it waits on; resolved since, the
    // packet's actions are no longer open to anyone.
    handoff: open ? null : summarizeHandoff(r.handoff, r.state !== 'handed-off'),
  };
}

/** The receipts statusMessage needs of `r`: only a hand-off whose packet offers a correction can wait for the user
 * (waitsForUser), so only its are read. */
const receiptsToTell = (ledger: Ledger, r: OperationRecord): Promise<readonly Receipt[]> =>
  r.state === 'handed-off' && marksSafe(r.handoff, 'resend-with')
    ? ledger.receipts(r.businessOperationId)
    : Promise.resolve([]);

/** The status in the ledger's words, and the next step: at rest, what a repeated call of the tool answers. */
function statusMessage(r: OperationRecord, now: number, receipts: readonly Receipt[]) {
  if (r.state === 'succeeded') return 'Done.';
  if (r.state === 'not-sent')
    return 'Not done, and nothing was sent: no call of it ever reached the provider. Call the operation again with the same arguments to send it.';
  if ((r.state === 'handed-off' || r.state === 'abandoned') && r.handoff)
    return handedOffMessage(r.handoff, receipts, r.state === 'abandoned');
  // No result is not "failed": redone under another intent, an operation that took effect would happen twice.
  const never = 'do not redo it under other intent fields.';
  if (leaseLive(r, now))
    return `It is ${stateWords(r.state)}: a run holds it now, and it may already have taken effect. Ask again ${inAbout((r.leaseExpiresAt ?? now) - now)} (here, or by calling the operation with the same arguments); ${never}`;
  return `It is ${stateWords(r.state)} and no run holds it now: it may already have taken effect. Call the operation again with the same arguments for its result or what to do next; ${never}`;
}

const HANDOFFS_SHOWN = 100;

/** The hand-offs waiting for a person to resolve or for the user's own step (`waitsFor`), each with the next step as a
 * repeated call answers it; a row the ledger cannot read (cut or edited from outside) is named in `unreadable`. */
export async function pendingHandoffs(ledger: Ledger, view: StatusView = {}) {
  const { agent, now = Date.now() } = view;
  const typed = typedLedger(ledger);
  const unreadable: string[] = [];
  const onUnreadable = (id: string) => void unreadable.push(id);
  const rows = await typed.list({ states: ['handed-off'], limit: HANDOFFS_SHOWN + 1, onUnreadable });
  const handoffs = await Promise.all(
    rows.slice(0, HANDOFFS_SHOWN).map(async (r) => {
      const receipts = await receiptsToTell(typed, r);
      agent?.answered(r.businessOperationId, r.handoff);
      return {
        businessOperationId: r.businessOperationId,
        operation: r.operation,
        waitsFor: r.handoff && waitsForUser(r.handoff, receipts) ? ('user' as const) : ('person' as const),
        message: statusMessage(r, now, receipts),
        handoff: summarizeHandoff(r.handoff),
      };
    }),
  );
  // More wait than are shown (an unreadable row counts as one): an agent must not read the list as all of them.
  return { handoffs, unreadable, truncated: rows.length + unreadable.length > HANDOFFS_SHOWN };
}
