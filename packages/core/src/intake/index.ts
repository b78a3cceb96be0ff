/** Intake: everything that can refuse an operation before its claim, and the operation object (operation.ts). */
export { callerAttemptIds, checkAdapterShape, derivedProviderKey, findAdapter } from './adapter.js';
export { identityOf } from './identity.js';
export {
  correctedOperation,
  newOperation,
  type Operation,
  paramsConflict,
  storedOperation,
  withProviderKey,
} from './operation.js';
export { assertParams, paramsErrors } from './params-schema.js';
export { DEFAULT_LEASE_MS, resolvePolicy } from './policy.js';
export { currentRevisionNumber, needsFreshKey, SUPERSEDE_ACTION, supersedeCheck } from './supersede.js';
