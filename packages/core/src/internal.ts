/** @retrysafe/core/internal: the runner's parts for the packages built on it. Not a user API. */
export { decide, isInProgress, keyGoneBeforeSend, observationPatch } from './decide.js';
export { namingPath } from './files.js';
export { fixIsNewOperation, marksSafe, waitsForUser } from './handoff.js';
export { assertParams, checkParamsSchema, paramsErrors } from './intake/params-schema.js';
export { resolvePolicy } from './intake/policy.js';
export { correctionRule, currentRevisionNumber, needsFreshKey, supersedeCheck } from './intake/supersede.js';
export { isParamsSealed } from './ledger/encrypted-params.js';
export { receiptHash, sealReceipt } from './receipts.js';
export { createRedactor, personRef } from './redact.js';
export { detectSensitive } from './redact-detectors.js';
export { isSecretKey, keyParts } from './redact-keys.js';
export { leaseCheckMs } from './runner/lease.js';
export { decisionState, oldOwnerMaySend, startState, takenOverLeaseEnd } from './runner/state.js';
export { givesBack, handoffReason, neverSentCalls } from './runner/terminal.js';
