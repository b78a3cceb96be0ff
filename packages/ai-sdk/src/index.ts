import type { AdapterV1 } from '@retrysafe/contract';
import type { Runner } from '@retrysafe/core';
import {
  type AgentToolDefinition,
  type AgentToolResult,
  agentRunner,
  agentTools,
  callAgentTool,
} from '@retrysafe/core/agent';
import { jsonSchema, type Tool, tool } from 'ai';

export interface RetrysafeToolsOptions {
  readonly runner: Runner;
  readonly adapters: readonly AdapterV1[];
  /** Operations to expose, by tool name or `<provider>.<operation>`; default all. */
  readonly operations?: readonly string[];
  /** The run id of each call's receipts (default: a new one per call); never which business operation it maps to.
   * Under AI SDK 7's `WorkflowAgent`, pass the step id so a re-executed step shows as the same run. */
  readonly runId?: (call: { readonly toolName: string; readonly toolCallId: string | undefined }) => string | undefined;
}

/** Turns the workflow runtime's retries off for a step (`maxRetries = 0`): the runner inside is the one retrying layer. */
export function stepRetriesOff<F extends (...args: never[]) => unknown>(step: F): F & { maxRetries: 0 } {
  return Object.assign(step, { maxRetries: 0 as const });
}

/** AI SDK tools that run through the runner, so a model re-issuing a call gets the same business operation back,
 * not a second effect; arguments are checked against the operation's JSON Schema before anything is claimed. */
export function retrysafeTools(options: RetrysafeToolsOptions): Record<string, Tool<unknown, AgentToolResult>> {
  const agent = agentRunner(options.runner);
  const toolOf = (def: AgentToolDefinition) =>
    tool<unknown, AgentToolResult>({
      description: def.description,
      inputSchema: jsonSchema<unknown>(def.inputSchema as Parameters<typeof jsonSchema>[0]),
      // The agent loop's abort stops the runner between steps; the operation stays for a later call or recover().
      execute: async (args, ctx) => {
        const { toolCallId, abortSignal } = (ctx ?? {}) as { toolCallId?: string; abortSignal?: AbortSignal };
        const runId = options.runId?.({ toolName: def.name, toolCallId });
        return callAgentTool(agent, def, args, { runId, signal: abortSignal });
      },
    });
  return Object.fromEntries(agentTools(options.adapters, options.operations).map((def) => [def.name, toolOf(def)]));
}

export type { AgentToolResult };
