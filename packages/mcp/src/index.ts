export type { AgentToolDefinition, AgentToolResult, HandoffSummary } from '@retrysafe/core/agent';
export {
  agentTools,
  callAgentTool,
  operationStatus,
  pendingHandoffs,
  summarizeHandoff,
  toAgentResult,
} from '@retrysafe/core/agent';
export { UsageError } from './cli-options.js';
export { createCoalescer } from './coalesce.js';
export { runProbe } from './fence/fence-cli.js';
export * from './fence/index.js';
export {
  createRetrysafeMcpServer,
  type McpServerOptions,
  type ServeHttpOptions,
  serveHttp,
  serveStdio,
} from './server.js';
