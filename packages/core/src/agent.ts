/** @retrysafe/core/agent: operations as agent tools, and their structured answers (used by @retrysafe/mcp and @retrysafe/ai-sdk). */

export { type PreClaimRefusal, preClaimRefusal, type RefusalAnswer, refusalAnswer } from './agent-refusal.js';
export type { AgentToolDefinition, AgentToolResult, HandoffSummary } from './agent-tools.js';
export {
  agentTools,
  callAgentTool,
  operationStatus,
  pendingHandoffs,
  SAFE_TOOL_NAME,
  safeToolName,
  summarizeHandoff,
  toAgentResult,
} from './agent-tools.js';
export { CARD_META_KEY, type CardToolMeta, cardToolMeta } from './card-meta.js';
