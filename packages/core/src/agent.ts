/** @retrysafe/core/agent: operations as agent tools, and their structured answers (used by @retrysafe/mcp and @retrysafe/ai-sdk). */

export type { AgentToolDefinition, AgentToolResult, RefusalAnswer } from './agent-tools.js';
export {
  agentTools,
  callAgentTool,
  operationStatus,
  pendingHandoffs,
  refusalAnswer,
  SAFE_TOOL_NAME,
  safeToolName,
  toAgentResult,
} from './agent-tools.js';
