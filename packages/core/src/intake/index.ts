/**
 * The runner's intake for one call, before anything is claimed: params checked against the
 * operation's schema, the intent normalised per its declaration, the id derived (with the v1 id of
 * an intent written before normalisation looked up), and the comparison rules for params.
 */
import type { BusinessOperationId, Ledger, OperationSpec } from '@retrysafe/contract';
import { comparisonFor, identityOf, normalizesParams, type Comparison } from './identity.js';
import { assertParams } from './params-schema.js';

export { comparisonFor, identityOf, type Comparison, type Identity } from './identity.js';
export { assertParams, fieldErrors, paramsErrors } from './params-schema.js';
export { currentRevisionNumber, needsFreshKey, nextRevision, revisionKeySource, supersedeCheck, SUPERSEDE_ACTION } from './supersede.js';

export interface Intake {
  readonly id: BusinessOperationId;
  readonly intent: Record<string, unknown>;
  readonly intentFingerprint: string;
  readonly paramsFingerprint: string;
  /** Other fingerprints the same params may be stored under (written before the declaration normalised them). */
  readonly paramsAliases: readonly string[];
  readonly comparison: Comparison;
}

export async function intake(
  ledger: Ledger,
  spec: OperationSpec,
  input: { readonly params: unknown; readonly businessOperationId?: string; readonly intent?: Record<string, unknown> },
  /** The fingerprint of the params as written (`sha256:` of their canonical JSON), when the caller has it already (preclaim). */
  rawParamsFingerprint?: string,
): Promise<Intake> {
  assertParams(spec, input.params);
  const identity = identityOf(spec, input);
  const comparison = comparisonFor(spec.card);
  // Without declared normalisation the compared params are the params as written: their fingerprint is that one.
  const paramsFingerprint = rawParamsFingerprint !== undefined && !normalizesParams(spec.card) ? rawParamsFingerprint : comparison.paramsFingerprint(input.params);
  const paramsAliases = comparison.paramsAliases(input.params);
  let { id, intentFingerprint } = identity;
  if (identity.legacy) {
    // Written before the card normalised this intent: the operation stored under the v1 id of the
    // intent as written is this one (one read, only for an intent not in normal form).
    const old = await ledger.get(identity.legacy.id);
    if (old && old.intentFingerprint === identity.legacy.intentFingerprint) ({ id, intentFingerprint } = identity.legacy);
  }
  return { id, intent: identity.intent, intentFingerprint, paramsFingerprint, paramsAliases, comparison };
}
