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
  return intakeNow(ledger, spec, input, rawParamsFingerprint);
}

/**
 * `intake`, answered synchronously unless the intent is not in normal form (then the one ledger read
 * makes it a promise). A refusal throws. For the runner's clean path: no coroutine around a call that
 * nearly never waits.
 */
export function intakeNow(
  ledger: Ledger,
  spec: OperationSpec,
  input: { readonly params: unknown; readonly businessOperationId?: string; readonly intent?: Record<string, unknown> },
  rawParamsFingerprint?: string,
): Intake | Promise<Intake> {
  assertParams(spec, input.params);
  const identity = identityOf(spec, input);
  const comparison = comparisonFor(spec.card);
  // Without declared normalisation the compared params are the params as written: their fingerprint is that one.
  const paramsFingerprint = rawParamsFingerprint !== undefined && !normalizesParams(spec.card) ? rawParamsFingerprint : comparison.paramsFingerprint(input.params);
  const paramsAliases = comparison.paramsAliases(input.params);
  const found: Intake = { id: identity.id, intent: identity.intent, intentFingerprint: identity.intentFingerprint, paramsFingerprint, paramsAliases, comparison };
  return identity.legacy ? legacyIntake(ledger, identity.legacy, found) : found;
}

/**
 * Written before the card normalised this intent: the operation stored under the v1 id of the intent
 * as written is this one (one read, only for an intent not in normal form).
 */
async function legacyIntake(ledger: Ledger, legacy: { readonly id: BusinessOperationId; readonly intentFingerprint: string }, found: Intake): Promise<Intake> {
  const old = await ledger.get(legacy.id);
  return old && old.intentFingerprint === legacy.intentFingerprint ? { ...found, id: legacy.id, intentFingerprint: legacy.intentFingerprint } : found;
}
