export { createRetrysafeMcpServer, serveStdio, serveHttp, type McpServerOptions } from './server.js';
export { agentTools, callAgentTool, toAgentResult, idempotentByCard, operationStatus, pendingHandoffs, summarizeHandoff } from './agent-tools.js';
export type { AgentToolDefinition, AgentToolResult, HandoffSummary } from './agent-tools.js';
