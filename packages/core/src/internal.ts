/**
 * @retrysafe/core/internal: the runner's parts, for the packages built on it (the CLI, the config,
 * the testkit's explorer) and for tests. Not a user API: it changes with the runner.
 */
export { decide, observationPatch, MAYBE_APPLIED_STATES, type Budget, type Observation } from './decide.js';
export { backoffMs, planRetry, planPoll, type RetryPlan, type RetryInput, type PollPlan, type PollInput } from './retry-policy.js';
export { resolvePolicy, validatePolicy } from './intake/index.js';
export { assertParams, paramsErrors, identityOf, comparisonFor, supersedeCheck, type Comparison, type Identity } from './intake/index.js';
export { sealReceipt, receiptHash, anchorOf, checkReceiptKey, type UnsealedReceipt } from './receipts.js';
export { buildPacket, safeNextActions, type PacketInput } from './handoff.js';
export { createTelemetry, type Telemetry } from './telemetry.js';
export { createRedactor, detectSensitive, isSecretKey, keyParts, personRef, type Redactor } from './redact.js';
