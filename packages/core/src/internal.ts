/**
 * @retrysafe/core/internal: the runner's parts, for the packages built on it (the CLI, the config,
 * the testkit's explorer) and for tests. Not a user API: it changes with the runner.
 */
export { type Budget, decide, MAYBE_APPLIED_STATES, type Observation, observationPatch } from './decide.js';
export { buildPacket, type PacketInput, safeNextActions } from './handoff.js';
export {
  assertParams,
  type Comparison,
  comparisonFor,
  type Identity,
  identityOf,
  paramsErrors,
  resolvePolicy,
  supersedeCheck,
  validatePolicy,
} from './intake/index.js';
export { checkReceiptKey, receiptHash, sealReceipt, type UnsealedReceipt } from './receipts.js';
export { createRedactor, detectSensitive, personRef, type Redactor } from './redact.js';
export { isSecretKey, keyParts } from './redact-keys.js';
export {
  backoffMs,
  type PollInput,
  type PollPlan,
  planPoll,
  planRetry,
  type RetryInput,
  type RetryPlan,
} from './retry-policy.js';
export { createTelemetry, type Telemetry } from './telemetry.js';
