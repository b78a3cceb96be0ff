import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { agentIdempotentHint, validateCard, type AdapterV1, type Ledger } from '@retrysafe/contract';
import { type Runner } from '@retrysafe/core';
import { callAgentTool, operationStatus, pendingHandoffs, type AgentToolDefinition, type AgentToolResult } from '@retrysafe/core/agent';
import type { Upstream } from './upstream.js';

export interface FenceServerOptions {
  readonly runner: Runner;
  readonly ledger: Ledger;
  /** The fenced tools as one adapter (createFenceAdapter). */
  readonly adapter: AdapterV1;
  readonly upstream: Upstream;
  readonly name?: string;
}

export const FENCE_STATUS_TOOL = 'retrysafe_status';
export const FENCE_HANDOFFS_TOOL = 'retrysafe_handoffs';
export const UNFENCED_NOTE = '[not fenced by retrysafe: a re-issued call may repeat its effect]';

function fencedDescription(adapter: AdapterV1, name: string, upstreamDescription: string | undefined): string {
  const spec = adapter.operations[name]!;
  const unknowns = validateCard(spec.card).unknowns;
  return [
    upstreamDescription ?? '',
    `[fenced by retrysafe] One business operation per intent (${spec.intentFields.join(', ')}): if you got no answer or an error that is not a conflict, call again with the same intent — the call maps to the same operation and returns its result instead of doing it twice.`,
    'A changed non-intent argument of an operation already started is refused as a conflict. "in-progress": check back with retrysafe_status; "needs-human": a person decides, do not retry.',
    unknowns.length ? `Upstream facts not declared: ${unknowns.join(', ')} — retrysafe will not re-send where they matter.` : '',
  ].filter(Boolean).join('\n');
}

/** What a fenced call answers: the upstream's own content when done, otherwise retrysafe's structured answer as an error result. */
function fencedReply(r: AgentToolResult) {
  const meta = { retrysafe: { status: r.status, ...('businessOperationId' in r ? { businessOperationId: r.businessOperationId } : {}), ...(r.status === 'done' ? { adopted: r.adopted } : {}) } };
  if (r.status === 'done') {
    const stored = (r.result ?? {}) as { content?: unknown[]; structuredContent?: unknown };
    return { content: stored.content ?? [], ...(stored.structuredContent !== undefined ? { structuredContent: stored.structuredContent } : {}), _meta: meta };
  }
  return { content: [{ type: 'text' as const, text: JSON.stringify(r, null, 2) }], isError: true, _meta: meta };
}

const json = (v: unknown, isError = false) => ({ content: [{ type: 'text' as const, text: JSON.stringify(v, null, 2) }], structuredContent: v as Record<string, unknown>, ...(isError ? { isError: true } : {}) });

/**
 * The fence: an MCP server that lists the upstream's tools and forwards calls. A tool the fence file names runs
 * through the runner with its card (one effect per intent, a lookup before any re-send, a handoff when unsure);
 * every other tool passes through unchanged and says so in its description.
 */
export function createFenceServer(options: FenceServerOptions): Server {
  const { adapter, upstream, runner, ledger } = options;
  const fenced = new Set(Object.keys(adapter.operations));
  const server = new Server({ name: options.name ?? `retrysafe-fence(${adapter.provider})`, version: '0.1.0' }, { capabilities: { tools: {} } });

  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: [
      ...upstream.tools.map((t) => {
        if (!fenced.has(t.name)) return { ...t, description: `${UNFENCED_NOTE} ${t.description ?? ''}`.trim() };
        const card = adapter.operations[t.name]!.card;
        // Through the fence a re-issued call with the same intent is the same operation: that is the hint's meaning
        // for the caller. Whether the upstream itself folds re-sends is the card's business (shown in _meta).
        const annotations = { ...((t.annotations as object | undefined) ?? {}), idempotentHint: true };
        return { ...t, description: fencedDescription(adapter, t.name, t.description), annotations, _meta: { ...((t._meta as object | undefined) ?? {}), retrysafe: { fenced: true, operation: card.operation, intentFields: card.businessOperationId.intentFields, upstreamFoldsResends: agentIdempotentHint(card), undeclared: validateCard(card).unknowns } } };
      }),
      {
        name: FENCE_STATUS_TOOL,
        description: 'Looks up one business operation by its id (from a fenced tool\'s _meta.retrysafe): its state, result, or the handoff a person must resolve.',
        inputSchema: { type: 'object' as const, properties: { businessOperationId: { type: 'string' } }, required: ['businessOperationId'] },
        annotations: { readOnlyHint: true, idempotentHint: true, destructiveHint: false, openWorldHint: false },
      },
      {
        name: FENCE_HANDOFFS_TOOL,
        description: 'Lists fenced operations waiting for a person, with why they stopped and which next actions are safe.',
        inputSchema: { type: 'object' as const, properties: {} },
        annotations: { readOnlyHint: true, idempotentHint: true, destructiveHint: false, openWorldHint: false },
      },
    ],
  }));

  server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
    const { name, arguments: args } = req.params;
    if (name === FENCE_STATUS_TOOL) {
      const id = (args as { businessOperationId?: unknown } | undefined)?.businessOperationId;
      if (typeof id !== 'string') return json({ status: 'invalid-input', message: 'businessOperationId (string) is required' }, true);
      try {
        return json(await operationStatus(ledger, id));
      } catch (e) {
        return json({ status: 'invalid-input', message: (e as Error).message }, true);
      }
    }
    if (name === FENCE_HANDOFFS_TOOL) return json({ handoffs: await pendingHandoffs(ledger) });
    if (fenced.has(name)) {
      const tool = { adapter, operation: name } as unknown as AgentToolDefinition;
      return fencedReply(await callAgentTool(runner, tool, args ?? {}));
    }
    // Pass-through: unchanged, with the caller's cancellation.
    return (await upstream.client.callTool({ name, ...(args ? { arguments: args } : {}) }, undefined, { signal: extra.signal })) as Record<string, unknown>;
  });
  return server;
}
