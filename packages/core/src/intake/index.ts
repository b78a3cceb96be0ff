/**
 * The runner's intake for one call, before anything is claimed: params checked against the
 * operation's schema, the intent normalised per its declaration, the id derived, and the comparison
 * rules for params.
 */
import type { BusinessOperationId, OperationSpec } from '@retrysafe/contract';
import { comparisonFor, identityOf, type Comparison } from './identity.js';
import { assertParams } from './params-schema.js';

export { comparisonFor, identityOf, type Comparison, type Identity } from './identity.js';
export { assertParams, fieldErrors, paramsErrors } from './params-schema.js';
export { currentRevisionNumber, needsFreshKey, nextRevision, revisionKeySource, supersedeCheck, SUPERSEDE_ACTION } from './supersede.js';

export interface Intake {
  readonly id: BusinessOperationId;
  readonly intent: Record<string, unknown>;
  readonly intentFingerprint: string;
  readonly paramsFingerprint: string;
  readonly comparison: Comparison;
}

/**
 * The params checked against the schema, the intent normalised and its id derived, and the params'
 * fingerprint as compared. `rawParamsFingerprint`: the fingerprint of the params as written, when the
 * caller has it already (it is the compared one unless the card normalises params).
 */
export function intake(
  spec: OperationSpec,
  input: { readonly params: unknown; readonly businessOperationId?: string; readonly intent?: Record<string, unknown> },
  rawParamsFingerprint?: string,
): Intake {
  assertParams(spec, input.params);
  const identity = identityOf(spec, input);
  const comparison = comparisonFor(spec.card);
  const paramsFingerprint = rawParamsFingerprint !== undefined && !comparison.normalizes ? rawParamsFingerprint : comparison.paramsFingerprint(input.params);
  return { id: identity.id, intent: identity.intent, intentFingerprint: identity.intentFingerprint, paramsFingerprint, comparison };
}
