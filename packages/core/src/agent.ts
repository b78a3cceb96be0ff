/** @retrysafe/core/agent: operations as agent tools, and their structured answers (used by @retrysafe/mcp and @retrysafe/ai-sdk). */
export { agentTools, callAgentTool, toAgentResult, operationStatus, pendingHandoffs, summarizeHandoff, safeToolName, SAFE_TOOL_NAME } from './agent-tools.js';
export type { AgentToolDefinition, AgentToolResult, HandoffSummary } from './agent-tools.js';
export { cardToolMeta, CARD_META_KEY, type CardToolMeta } from './card-meta.js';
export { preClaimRefusal, refusalAnswer, type PreClaimRefusal, type RefusalAnswer } from './agent-refusal.js';
