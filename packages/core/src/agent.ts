/** @retrysafe/core/agent: operations as agent tools, and their structured answers (used by @retrysafe/mcp and @retrysafe/ai-sdk). */

export { type RefusalAnswer, refusalAnswer } from './agent-refusal.js';
export type { AgentToolDefinition, AgentToolResult } from './agent-tools.js';
export {
  agentTools,
  callAgentTool,
  operationStatus,
  pendingHandoffs,
  SAFE_TOOL_NAME,
  safeToolName,
  toAgentResult,
} from './agent-tools.js';
