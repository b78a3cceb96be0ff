/** @retrysafe/core: the runner, the memory ledger, handoff sinks, clocks, errors, receipts and retention. */
export { createRunner } from './runner/index.js';
export type { Runner, RunnerOptions, RunInput, RunResult, RecoverReport, Resolution, ResolveOptions, ResolveResult, LogEntry } from './runner/index.js';
export type { RunFunction, TypedRunInput, TypedRunResult } from './typed-run.js';
export type { PolicyOverrides, RetryPolicy } from './retry-policy.js';
export type { Decision, DecisionState } from './decide.js';
export type { RedactOptions } from './redact.js';
export { TELEMETRY, type EventFields, type TelemetryOptions } from './telemetry.js';
export { createMemoryLedger } from './ledger/memory-ledger.js';
export { pruneLedger, retentionFloor, type PruneLedgerOptions, type PruneLedgerReport } from './ledger/retention.js';
export { encryptParams, type EncryptParamsOptions, type ParamsKey } from './ledger/encrypted-params.js';
export { jsonlHandoffSink, callbackHandoffSink } from './handoff.js';
export { exportReceiptsJsonl, verifyReceiptChain, verifyOperation, verifyReceiptsJsonl, parseReceiptKeys } from './receipts.js';
export type { ExportReceiptsOptions, ChainCheck, ReceiptKey, ReceiptKeyring, ReceiptChainAnchor, VerifyChainOptions, ExportCheck } from './receipts.js';
export { systemClock, createVirtualClock, type Clock, type VirtualClock } from './clock.js';
export { RunnerConfigurationError } from './errors/runner-configuration-error.js';
export { BrokenReceiptChainError } from './errors/broken-receipt-chain-error.js';
export { AdapterContractError } from './errors/adapter-contract-error.js';

