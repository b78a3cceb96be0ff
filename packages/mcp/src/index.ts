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
export { type Coalescer, createCoalescer, requestedWait, WAIT_META_KEY } from './coalesce.js';
export { runProbe, runWrap } from './fence/fence-cli.js';
export * from './fence/index.js';
export {
  createHttpGuard,
  type GuardVerdict,
  generateToken,
  type HttpGuard,
  type HttpGuardOptions,
  tokensEqual,
} from './http-guard.js';
export {
  createRetrysafeMcpServer,
  type McpServerOptions,
  type ServeHttpOptions,
  serveHttp,
  serveStdio,
} from './server.js';
