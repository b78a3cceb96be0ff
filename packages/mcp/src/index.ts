export { createRetrysafeMcpServer, serveStdio, serveHttp, type McpServerOptions, type ServeHttpOptions } from './server.js';
export { createHttpGuard, generateToken, tokensEqual, type HttpGuard, type HttpGuardOptions, type GuardVerdict } from './http-guard.js';
export { agentTools, callAgentTool, toAgentResult, operationStatus, pendingHandoffs, summarizeHandoff } from '@retrysafe/core/agent';
export type { AgentToolDefinition, AgentToolResult, HandoffSummary } from '@retrysafe/core/agent';
export * from './fence/index.js';
export { runProbe, runWrap } from './fence/fence-cli.js';
export { UsageError } from './cli-options.js';
export { createCoalescer, requestedWait, WAIT_META_KEY, type Coalescer } from './coalesce.js';
