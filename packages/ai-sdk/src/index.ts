import type { AdapterV1 } from '@retrysafe/contract';
import type { Runner } from '@retrysafe/core';
import { type AgentToolResult, agentTools, callAgentTool } from '@retrysafe/core/agent';
import { jsonSchema, type Tool, tool } from 'ai';

export interface RetrysafeToolsOptions {
  readonly runner: Runner;
  readonly adapters: readonly AdapterV1[];
  /** Operations to expose, by tool name or `<provider>.<operation>`; default all. */
  readonly operations?: readonly string[];
  /**
   * The run id written into each tool call's receipts (default: a new one per call). It never changes
   * which business operation a call maps to (that comes from the intent). Under AI SDK 7's
   * `WorkflowAgent`, pass the workflow step id (`() => getStepMetadata().stepId`): a step the runtime
   * re-executes then shows as the same run in the receipts. See the README's WorkflowAgent section.
   */
  readonly runId?: (call: { readonly toolName: string; readonly toolCallId: string | undefined }) => string | undefined;
}

/**
 * Marks a workflow step function (AI SDK 7 `WorkflowAgent` / Workflow DevKit `"use step"`) as not to be
 * retried by the workflow runtime (`maxRetries = 0`): the retrysafe runner inside it is the one layer
 * that retries, bounded by the card. Returns the same function.
 */
export function stepRetriesOff<F extends (...args: never[]) => unknown>(step: F): F & { maxRetries: 0 } {
  return Object.assign(step, { maxRetries: 0 as const });
}

/**
 * Vercel AI SDK tool definitions for retrysafe operations. Each tool runs through the runner, so a
 * model that re-issues a tool call (new tool-call id, re-ordered or re-formatted arguments) gets the
 * same business operation back instead of a second effect. Results are the structured answers
 * `done | in-progress | needs-human | conflict | invalid-input`, each with the business-operation id;
 * arguments are validated against the operation's JSON Schema (ajv) before anything is claimed.
 */
export function retrysafeTools(options: RetrysafeToolsOptions): Record<string, Tool<unknown, AgentToolResult>> {
  const out: Record<string, Tool<unknown, AgentToolResult>> = {};
  for (const def of agentTools(options.adapters, options.operations)) {
    // The definition's name is already one every model API accepts (safeToolName in @retrysafe/core/agent).
    out[def.name] = tool<unknown, AgentToolResult>({
      description: def.description,
      inputSchema: jsonSchema<unknown>(def.inputSchema as Parameters<typeof jsonSchema>[0]),
      execute: async (args, ctx) => {
        const toolCallId = (ctx as { toolCallId?: string } | undefined)?.toolCallId;
        return callAgentTool(options.runner, def, args, { runId: options.runId?.({ toolName: def.name, toolCallId }) });
      },
    });
  }
  return out;
}

export type { AgentToolResult };
