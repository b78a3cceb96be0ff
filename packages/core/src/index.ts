/** @retrysafe/core: the runner, the memory ledger, handoff sinks, clocks, errors, receipts and retention. */

export { type Clock, createVirtualClock, systemClock, type VirtualClock } from './clock.js';
export type { Decision, DecisionState } from './decide.js';
export { AdapterContractError } from './errors/adapter-contract-error.js';
export { BrokenReceiptChainError } from './errors/broken-receipt-chain-error.js';
export { RunnerConfigurationError } from './errors/runner-configuration-error.js';
export { callbackHandoffSink, jsonlHandoffSink } from './handoff.js';
export { type EncryptParamsOptions, encryptParams, type ParamsKey } from './ledger/encrypted-params.js';
export { createMemoryLedger } from './ledger/memory-ledger.js';
export { type PruneLedgerOptions, type PruneLedgerReport, pruneLedger } from './ledger/retention.js';
export {
  type ChainCheck,
  type ExportCheck,
  type ExportReceiptsOptions,
  exportReceiptsJsonl,
  parseReceiptKeys,
  type ReceiptChainAnchor,
  type ReceiptKey,
  type ReceiptKeyring,
  type VerifyChainOptions,
  verifyOperation,
  verifyReceiptChain,
  verifyReceiptsJsonl,
} from './receipts.js';
export type { RedactOptions } from './redact.js';
export type { PolicyOverrides, RetryPolicy } from './retry-policy.js';
export { createRunner } from './runner/index.js';
export type * from './runner/types.js';
export { type EventFields, TELEMETRY, type TelemetryOptions } from './telemetry.js';
