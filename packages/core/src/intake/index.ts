/**
 * Intake: everything that can refuse an operation before its claim, and the operation object it
 * builds — the adapter and its card (adapter.ts), the payload limits and the redacted copy
 * (payload.ts), the params schema (params-schema.ts), the retry policy against the card (policy.ts), the intent's id (identity.ts), whether a
 * corrected request may supersede a stored one (supersede.ts) — assembled in operation.ts.
 */
export { callerAttemptIds, checkAdapter, checkAdapterShape, derivedProviderKey, findAdapter } from './adapter.js';
export { comparisonFor, identityOf, type Comparison, type Identity } from './identity.js';
export { correctedOperation, newOperation, paramsConflict, storedOperation, withProviderKey, type IntakeContext, type Operation, type OperationInput } from './operation.js';
export { assertParams, fieldErrors, paramsErrors } from './params-schema.js';
export { DEFAULT_LEASE_MS, resolvePolicy, validatePolicy } from './policy.js';
export { checkPayload } from './payload.js';
export { currentRevisionNumber, everyAttemptNotApplied, needsFreshKey, nextRevision, revisionKeySource, supersedeCheck, SUPERSEDE_ACTION } from './supersede.js';
