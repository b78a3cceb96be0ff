import { jsonSchema, tool, type Tool } from 'ai';
import type { AdapterV1 } from '@retrysafe/contract';
import { agentTools, callAgentTool, type AgentToolResult, type Runner } from '@retrysafe/core';

export interface RetrysafeToolsOptions {
  readonly runner: Runner;
  readonly adapters: readonly AdapterV1[];
  /** Operations to expose, by tool name or `<provider>.<operation>`; default all. */
  readonly operations?: readonly string[];
}

/**
 * AI SDK tool names allow only `[A-Za-z0-9_-]`: `stripe.paymentIntents.create` becomes
 * `stripe_paymentIntents_create`. The tool definitions already carry this name (the same one MCP
 * lists, see safeToolName in @retrysafe/core); this maps an older dotted name.
 */
export function aiToolName(name: string): string {
  return name.replace(/[^A-Za-z0-9_-]/g, '_');
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
    out[def.name] = tool<unknown, AgentToolResult>({
      description: def.description,
      inputSchema: jsonSchema<unknown>(def.inputSchema as Parameters<typeof jsonSchema>[0]),
      execute: async (args) => callAgentTool(options.runner, def, args),
    });
  }
  return out;
}

export type { AgentToolResult };
