/** Agent tool definitions and structured answers, shared by @retrysafe/mcp and @retrysafe/ai-sdk. */
import { createHash } from 'node:crypto';
import {
  type AdapterV1,
  asBusinessOperationId,
  type HandoffPacket,
  type JsonSchema,
  type Ledger,
  type OperationSpec,
  type RetrySafetyCard,
  validateCard,
} from '@retrysafe/contract';
import { agentIdempotentHint, describeNormalization } from '@retrysafe/contract/rules';
import { preClaimRefusal, type RefusalAnswer, refusalAnswer } from './agent-refusal.js';
import { type CardToolMeta, cardToolMeta } from './card-meta.js';
import { RunnerConfigurationError } from './errors/runner-configuration-error.js';
import { identityOf } from './intake/index.js';
import type { Runner, RunResult } from './runner/types.js';

/** What an agent sees of one operation: tool name, description, input schema and hints from the card. */
export interface AgentToolDefinition {
  /** Safe for every model API and MCP: `^[a-zA-Z0-9_-]{1,64}$` (see safeToolName). */
  readonly name: string;
  /** `<provider>.<operation>`, as the card names it without the provider prefix. */
  readonly qualifiedName: string;
  readonly adapter: AdapterV1;
  readonly operation: string;
  readonly title: string;
  readonly description: string;
  readonly inputSchema: JsonSchema;
  readonly annotations: {
    readonly title: string;
    readonly readOnlyHint: false;
    readonly destructiveHint: boolean;
    readonly idempotentHint: boolean;
    readonly openWorldHint: true;
  };
  /** The card's digest and the facts that matter to a caller, under `retrysafe/card` (MCP tool `_meta`). */
  readonly _meta: { readonly 'retrysafe/card': CardToolMeta };
}

/** The structured answer of a tool call. */
export type AgentToolResult =
  | {
      readonly status: 'done';
      readonly businessOperationId: string;
      readonly providerRef: string | null;
      readonly adopted: boolean;
      readonly attempts: number;
      readonly result: unknown;
      readonly message: string;
    }
  | {
      readonly status: 'in-progress';
      readonly businessOperationId: string;
      readonly retryAfterMs: number;
      readonly message: string;
    }
  | {
      readonly status: 'needs-human';
      readonly businessOperationId: string;
      readonly handoff: HandoffSummary;
      readonly message: string;
    }
  /** Refused before anything was claimed or sent (agent-refusal.ts). */
  | RefusalAnswer;

export type HandoffSummary = Pick<HandoffPacket, 'reason' | 'explanation' | 'lastKnown' | 'safeNextActions'> & {
  readonly attempts: number;
};

const DESTRUCTIVE = new Set(['send', 'charge', 'delete', 'create', 'async-job', 'set', 'upsert']);

/** Function/tool names every big model API and MCP client accepts. */
export const SAFE_TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * The one tool name used by MCP and the AI SDK: `<provider>_<operation>` with every character outside
 * `[A-Za-z0-9_-]` as `_` (`stripe.paymentIntents.create` → `stripe_paymentIntents_create`); longer
 * than 64 characters, it is cut and ends in 8 hex characters of a digest of the full name.
 */
export function safeToolName(provider: string, operation: string): string {
  const full = `${provider}.${operation}`;
  const safe = full.replace(/[^A-Za-z0-9_-]/g, '_');
  if (safe.length <= 64) return safe;
  return `${safe.slice(0, 55)}_${createHash('sha256').update(full).digest('hex').slice(0, 8)}`;
}

/** The normalisation the tool's id and comparison apply, in words for a model. */
function normalisationText(card: RetrySafetyCard): string {
  const intent = card.businessOperationId.normalize;
  const params = card.paramComparison;
  const parts = [
    intent?.length
      ? `Intent fields are compared after normalisation (${describeNormalization(intent)}): re-formatting them this way is the same operation.`
      : 'Intent fields are compared exactly as written.',
    params?.length
      ? `Other arguments: ${describeNormalization(params)}; all others exactly.`
      : 'Other arguments are compared exactly.',
  ];
  return parts.join(' ');
}

/** Tool definitions for the given operations of the given adapters (default: all of them). */
export function agentTools(adapters: readonly AdapterV1[], only?: readonly string[]): AgentToolDefinition[] {
  const tools: AgentToolDefinition[] = [];
  for (const adapter of adapters) {
    for (const [name, spec] of Object.entries(adapter.operations) as [string, OperationSpec][]) {
      const qualified = `${adapter.provider}.${name}`;
      const full = safeToolName(adapter.provider, name);
      if (only && !only.includes(full) && !only.includes(qualified)) continue;
      if (tools.some((t) => t.name === full))
        throw new RunnerConfigurationError('agentTools', `two operations map to the tool name ${full}`);
      const card = spec.card;
      const unknowns = validateCard(card).unknowns;
      const description = [
        spec.description,
        `Retry-safe: the business-operation id is derived from the intent fields (${spec.intentFields.join(', ')}), not from this call's id. If you got no answer, or an error that is not a conflict, call again with the same arguments: the retry maps to the same operation and returns its result instead of doing it twice.`,
        'Changing an intent field makes it a different operation; changing other arguments of an operation already started is refused as a conflict (the answer names the differing paths). After a rejection that nothing applied (needs-human with field errors), calling again with corrected arguments and the same intent sends the corrected request.',
        normalisationText(card),
        'Every answer carries the businessOperationId; after a timeout of your own, calling again with the same arguments is the way back to it.',
        'Answers: status "done" (with the provider reference; adopted=true if it had already happened), "in-progress" (check back later with retrysafe_status), "needs-human" (a person must decide; do not retry as is), "conflict", "invalid-input" (with field errors; nothing was sent).',
        unknowns.length
          ? `Provider facts not verified: ${unknowns.join(', ')} — retrysafe will not resend where they matter.`
          : '',
      ]
        .filter(Boolean)
        .join('\n');
      tools.push({
        name: full,
        qualifiedName: qualified,
        adapter,
        operation: name,
        title: `${adapter.provider}: ${name}`,
        description,
        inputSchema: spec.paramsSchema,
        _meta: cardToolMeta(card),
        annotations: {
          title: `${adapter.provider}: ${name}`,
          readOnlyHint: false,
          destructiveHint:
            DESTRUCTIVE.has(String(card.sideEffect.kind.value)) || card.sideEffect.kind.value === 'unknown',
          idempotentHint: agentIdempotentHint(card),
          openWorldHint: true,
        },
      });
    }
  }
  return tools;
}

export function summarizeHandoff(p: HandoffPacket): HandoffSummary {
  const { reason, explanation, lastKnown, safeNextActions } = p;
  return { reason, explanation, attempts: p.attempts.length, lastKnown, safeNextActions };
}

export function toAgentResult(r: RunResult): AgentToolResult {
  switch (r.status) {
    case 'done':
      return {
        status: 'done',
        businessOperationId: r.businessOperationId,
        providerRef: r.providerRef,
        adopted: r.adopted,
        attempts: r.attempts,
        result: r.result,
        message: r.adopted ? 'Already done earlier: this is the existing result, nothing was done twice.' : 'Done.',
      };
    case 'in-progress':
      return {
        status: 'in-progress',
        businessOperationId: r.businessOperationId,
        retryAfterMs: r.retryAfterMs,
        message:
          'The operation is in progress elsewhere. Check back with retrysafe_status; do not start it another way.',
      };
    case 'handed-off': {
      const fields = r.packet.lastKnown.fields;
      const fix = fields?.length
        ? ` The provider named these fields: ${fields.map((f) => `${f.path} (${f.message})`).join(', ')}; a call with them corrected and the same intent is sent as a corrected request.`
        : '';
      return {
        status: 'needs-human',
        businessOperationId: r.businessOperationId,
        handoff: summarizeHandoff(r.packet),
        message: `Handed to a person: ${r.packet.explanation} Do not retry this call as is.${fix}`,
      };
    }
  }
}

/** The id these arguments name, or null when their intent fields cannot give one. */
function idOf(spec: OperationSpec, args: unknown): string | null {
  try {
    return identityOf(spec, { params: args }).id;
  } catch {
    return null;
  }
}

/** Runs one tool call and maps every answer, a refusal before the claim included (refusalAnswer), to a structured result. */
export async function callAgentTool(
  runner: Runner,
  tool: AgentToolDefinition,
  args: unknown,
  call: { readonly runId?: string } = {},
): Promise<AgentToolResult> {
  const params = args ?? {};
  try {
    return toAgentResult(await runner.run(tool.adapter, tool.operation, { params, runId: call.runId }));
  } catch (e) {
    const refusal = preClaimRefusal(e);
    if (refusal === null) throw e;
    const spec = tool.adapter.operations[tool.operation]!;
    return refusalAnswer(
      refusal,
      refusal.kind === 'invalid-intent' || refusal.kind === 'conflict' ? null : idOf(spec, params),
    );
  }
}

/** The `retrysafe_status` answer for one operation, from the ledger. */
export async function operationStatus(ledger: Ledger, id: string) {
  const r = await ledger.get(asBusinessOperationId(id));
  if (!r) return { found: false as const, businessOperationId: id };
  return {
    found: true as const,
    businessOperationId: r.businessOperationId,
    operation: r.operation,
    state: r.state,
    attempts: r.attemptCount,
    providerRef: r.providerRef,
    result: r.state === 'succeeded' ? r.result : null,
    handoff: r.handoff ? summarizeHandoff(r.handoff) : null,
  };
}

export async function pendingHandoffs(ledger: Ledger) {
  const rows = await ledger.list({ states: ['handed-off'], limit: 100 });
  return rows.map((r) => ({
    businessOperationId: r.businessOperationId,
    operation: r.operation,
    handoff: r.handoff ? summarizeHandoff(r.handoff) : null,
  }));
}
