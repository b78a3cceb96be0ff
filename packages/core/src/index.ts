export { createRunner } from './runner/index.js';
export type { Runner, RunnerOptions, RunInput, RunResult, RecoverReport, Resolution, ResolveOptions, ResolveResult, LogEntry } from './runner/index.js';
export type { RunFunction, TypedRunInput, TypedRunResult } from './typed-run.js';
export { createTelemetry, TELEMETRY, type EventFields, type Telemetry, type TelemetryOptions } from './telemetry.js';
export { decide } from './decide.js';
export type { Decision, DecisionState, Budget, Observation } from './decide.js';
export { resolvePolicy, validatePolicy, backoffMs, planRetry, planPoll } from './retry-policy.js';
export type { RetryPolicy, PolicyOverrides, RetryPlan, RetryInput, PollPlan, PollInput } from './retry-policy.js';
export { createMemoryLedger } from './ledger/memory-ledger.js';
export { createSqliteLedger } from './ledger/sqlite-ledger.js';
export type { SqliteLedger, SqliteLedgerOptions } from './ledger/sqlite-ledger.js';
export { sqliteDrivers } from './ledger/sqlite-driver.js';
export type { SqliteDriverName, SqliteDriverAvailability } from './ledger/sqlite-driver.js';
export { pruneLedger, retentionFloor, type PruneLedgerOptions, type PruneLedgerReport } from './ledger/retention.js';
export { encryptParams } from './ledger/encrypted-params.js';
export type { EncryptParamsOptions, ParamsKey } from './ledger/encrypted-params.js';
export { jsonlHandoffSink, callbackHandoffSink, buildPacket, safeNextActions } from './handoff.js';
export type { PacketInput } from './handoff.js';
export { exportReceiptsJsonl, sealReceipt, receiptHash, verifyReceiptChain, verifyOperation, verifyReceiptsJsonl, parseReceiptKeys, anchorOf, checkReceiptKey } from './receipts.js';
export type { ExportReceiptsOptions, ChainCheck, UnsealedReceipt, ReceiptKey, ReceiptKeyring, ReceiptChainAnchor, VerifyChainOptions, ExportCheck } from './receipts.js';
export { createRedactor, REDACTED, DETECTORS, detectSensitive, isSecretKey, isPiiKey, keyParts, luhnValid, looksLikeCardNumber, personRef } from './redact.js';
export type { RedactOptions, Redactor, Detector } from './redact.js';
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
export { agentTools, callAgentTool, toAgentResult, operationStatus, pendingHandoffs, summarizeHandoff, safeToolName, SAFE_TOOL_NAME } from './agent-tools.js';
export { assertParams, paramsErrors, identityOf, comparisonFor, supersedeCheck } from './intake/index.js';
export type { Comparison, Identity } from './intake/index.js';
export type { AgentToolDefinition, AgentToolResult, HandoffSummary } from './agent-tools.js';
export { cardToolMeta, CARD_META_KEY, type CardToolMeta } from './card-meta.js';
