/** Agent tool definitions and structured answers, shared by @retrysafe/mcp and @retrysafe/ai-sdk. */
import { ConflictError, InvalidIdError, InvalidIntentError, RetrysafeError, durationMs, validateCard, type AdapterV1, type HandoffPacket, type JsonSchema, type Ledger, type OperationSpec, type RetrySafetyCard } from '@retrysafe/contract';
import { cardMargin } from './decide.js';
import type { Runner, RunResult } from './runner.js';

/** What an agent sees of one operation: tool name, description, input schema and hints from the card. */
export interface AgentToolDefinition {
  readonly name: string;
  readonly adapter: AdapterV1;
  readonly operation: string;
  readonly title: string;
  readonly description: string;
  readonly inputSchema: JsonSchema;
  readonly annotations: { readonly title: string; readonly readOnlyHint: false; readonly destructiveHint: boolean; readonly idempotentHint: boolean; readonly openWorldHint: true };
}

/** The structured answer of a tool call. */
export type AgentToolResult =
  | { readonly status: 'done'; readonly businessOperationId: string; readonly providerRef: string | null; readonly adopted: boolean; readonly attempts: number; readonly result: unknown; readonly message: string }
  | { readonly status: 'in-progress'; readonly businessOperationId: string; readonly retryAfterMs: number; readonly message: string }
  | { readonly status: 'needs-human'; readonly businessOperationId: string; readonly handoff: HandoffSummary; readonly message: string }
  | { readonly status: 'conflict'; readonly businessOperationId: string; readonly field: string; readonly message: string }
  | { readonly status: 'invalid-input'; readonly message: string };

export interface HandoffSummary {
  readonly reason: HandoffPacket['reason'];
  readonly explanation: string;
  readonly attempts: number;
  readonly lastKnown: HandoffPacket['lastKnown'];
  readonly safeNextActions: HandoffPacket['safeNextActions'];
}

/** A re-send of the same intent cannot add an effect: by nature, or because the provider replays or refuses duplicates of the key. */
export function idempotentByCard(card: RetrySafetyCard): boolean {
  if (card.sideEffect.idempotentByNature.value === true) return true;
  const folds = card.providerKey.travels.value !== 'none' && card.providerKey.travels.value !== 'unknown' && (card.storedResult.semantics.value === 'replays' || card.storedResult.semantics.value === 'rejects-duplicate');
  // The same key folds a retry only while it is retained, and the retention is compared with the clock-skew margin.
  const retention = card.retention.minimum.value;
  return folds && retention !== 'unknown' && retention !== null && durationMs(retention) > cardMargin(card);
}

const DESTRUCTIVE = new Set(['send', 'charge', 'delete', 'create', 'async-job', 'set', 'upsert']);

function toolName(provider: string, operation: string): string {
  return `${provider}.${operation}`.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 128);
}

/** Tool definitions for the given operations of the given adapters (default: all of them). */
export function agentTools(adapters: readonly AdapterV1[], only?: readonly string[]): AgentToolDefinition[] {
  const tools: AgentToolDefinition[] = [];
  for (const adapter of adapters) {
    for (const [name, spec] of Object.entries(adapter.operations) as [string, OperationSpec][]) {
      const full = toolName(adapter.provider, name);
      if (only && !only.includes(full)) continue;
      const card = spec.card;
      const unknowns = validateCard(card).unknowns;
      const description = [
        spec.description,
        `Retry-safe: the business-operation id is derived from the intent fields (${spec.intentFields.join(', ')}), not from this call's id. If you got no answer, or an error that is not a conflict, call again with the same arguments: the retry maps to the same operation and returns its result instead of doing it twice.`,
        'Changing an intent field makes it a different operation; changing other arguments of an operation already started is refused as a conflict.',
        'Answers: status "done" (with the provider reference; adopted=true if it had already happened), "in-progress" (check back later with retrysafe_status), "needs-human" (a person must decide; do not retry), "conflict".',
        unknowns.length ? `Provider facts not verified: ${unknowns.join(', ')} — retrysafe will not resend where they matter.` : '',
      ].filter(Boolean).join('\n');
      tools.push({
        name: full,
        adapter,
        operation: name,
        title: `${adapter.provider}: ${name}`,
        description,
        inputSchema: spec.paramsSchema,
        annotations: { title: `${adapter.provider}: ${name}`, readOnlyHint: false, destructiveHint: DESTRUCTIVE.has(String(card.sideEffect.kind.value)) || card.sideEffect.kind.value === 'unknown', idempotentHint: idempotentByCard(card), openWorldHint: true },
      });
    }
  }
  return tools;
}

export function summarizeHandoff(p: HandoffPacket): HandoffSummary {
  return { reason: p.reason, explanation: p.explanation, attempts: p.attempts.length, lastKnown: p.lastKnown, safeNextActions: p.safeNextActions };
}

export function toAgentResult(r: RunResult): AgentToolResult {
  switch (r.status) {
    case 'done':
      return { status: 'done', businessOperationId: r.businessOperationId, providerRef: r.providerRef, adopted: r.adopted, attempts: r.attempts, result: r.result, message: r.adopted ? 'Already done earlier: this is the existing result, nothing was done twice.' : 'Done.' };
    case 'in-progress':
      return { status: 'in-progress', businessOperationId: r.businessOperationId, retryAfterMs: r.retryAfterMs, message: 'The operation is in progress elsewhere. Check back with retrysafe_status; do not start it another way.' };
    case 'handed-off':
      return { status: 'needs-human', businessOperationId: r.businessOperationId, handoff: summarizeHandoff(r.packet), message: `Handed to a person: ${r.packet.explanation} Do not retry this call.` };
  }
}

/** Runs one tool call through the runner and maps every answer (including typed input errors) to a structured result. */
export async function callAgentTool(runner: Runner, tool: AgentToolDefinition, args: unknown): Promise<AgentToolResult> {
  try {
    return toAgentResult(await runner.run(tool.adapter, tool.operation, { params: args ?? {} }));
  } catch (e) {
    if (ConflictError.isInstance(e)) return { status: 'conflict', businessOperationId: e.businessOperationId, field: e.field, message: `${e.message}. Nothing was sent. If you meant a different operation, change an intent field; otherwise call again with the original arguments.` };
    if (InvalidIntentError.isInstance(e) || InvalidIdError.isInstance(e)) return { status: 'invalid-input', message: (e as RetrysafeError).message };
    throw e;
  }
}

/** The `retrysafe_status` answer for one operation, from the ledger. */
export async function operationStatus(ledger: Ledger, id: string) {
  const { asBusinessOperationId } = await import('@retrysafe/contract');
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
  return rows.map((r) => ({ businessOperationId: r.businessOperationId, operation: r.operation, handoff: r.handoff ? summarizeHandoff(r.handoff) : null }));
}
