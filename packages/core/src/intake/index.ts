/** Intake: everything that can refuse an operation before its claim, and the operation object (operation.ts). */
export { callerAttemptIds, checkAdapter, checkAdapterShape, derivedProviderKey, findAdapter } from './adapter.js';
export { type Comparison, comparisonFor, type Identity, identityOf } from './identity.js';
export {
  correctedOperation,
  type IntakeContext,
  newOperation,
  type Operation,
  paramsConflict,
  storedOperation,
  withProviderKey,
} from './operation.js';
export { assertParams, fieldErrors, paramsErrors } from './params-schema.js';
export { checkPayload } from './payload.js';
export { DEFAULT_LEASE_MS, resolvePolicy, validatePolicy } from './policy.js';
export {
  currentRevisionNumber,
  everyAttemptNotApplied,
  needsFreshKey,
  nextRevision,
  revisionKeySource,
  SUPERSEDE_ACTION,
  supersedeCheck,
} from './supersede.js';
