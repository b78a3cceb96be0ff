export { createRunner } from './runner.js';
export type { Runner, RunnerOptions, RunInput, RunResult, RecoverReport, Resolution, ResolveResult, LogEntry } from './runner.js';
export { decide, resendSafety, lookupAvailable, notFoundIsAuthoritative, absenceProvenFrom, cardMargin } from './decide.js';
export type { Decision, DecisionState, Budget, Observation, ResendSafety } from './decide.js';
export { resolvePolicy, validatePolicy, backoffMs, planRetry, planPoll } from './retry-policy.js';
export type { RetryPolicy, PolicyOverrides, RetryPlan, RetryInput, PollPlan, PollInput } from './retry-policy.js';
export { createMemoryLedger } from './ledger/memory-ledger.js';
export { createSqliteLedger } from './ledger/sqlite-ledger.js';
export type { SqliteLedgerOptions } from './ledger/sqlite-ledger.js';
export * as ledgerTransitions from './ledger/transitions.js';
export { jsonlHandoffSink, callbackHandoffSink, buildPacket, safeNextActions } from './handoff.js';
export type { PacketInput } from './handoff.js';
export { exportReceiptsJsonl, sealReceipt, receiptHash, verifyReceiptChain } from './receipts.js';
export type { ExportReceiptsOptions, ChainCheck, UnsealedReceipt } from './receipts.js';
export { createRedactor, REDACTED } from './redact.js';
export type { RedactOptions, Redactor } from './redact.js';
export { systemClock, createVirtualClock } from './clock.js';
export type { Clock, VirtualClock } from './clock.js';
export { RunnerConfigurationError } from './errors/runner-configuration-error.js';

import type { LedgerSuiteOptions } from './ledger/ledger-suite.js';
export type { LedgerSuiteOptions };

/**
 * The shared ledger suite (vitest). Loaded lazily so importing `@retrysafe/core` never loads vitest;
 * call it at the top level of a test file: `await ledgerSuite({ name, create })`, or import it
 * directly from `@retrysafe/core/ledger-suite`.
 */
export async function ledgerSuite(options: LedgerSuiteOptions): Promise<void> {
  const m = await import('./ledger/ledger-suite.js');
  m.ledgerSuite(options);
}
export { agentTools, callAgentTool, toAgentResult, idempotentByCard, operationStatus, pendingHandoffs, summarizeHandoff } from './agent-tools.js';
export type { AgentToolDefinition, AgentToolResult, HandoffSummary } from './agent-tools.js';
