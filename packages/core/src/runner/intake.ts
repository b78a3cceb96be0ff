/**
 * Intake: what an operation is before it is claimed, built one way for a new call (run) and for a
 * stored operation (recover, resolve, resend-with), and the claim that asks the ledger for it.
 */
import { ConflictError, InvalidIntentError, asRunId, newRunId, type AdapterV1, type ClaimInput, type OperationRecord, type OperationSpec, type ProviderKey, type RunId } from '@retrysafe/contract';
import { comparisonFor, intake, type Comparison, type Intake } from '../intake/index.js';
import { preclaim, type PreclaimChecked } from '../preclaim.js';
import { createRedactor, type Redactor } from '../redact.js';
import { cachedPolicy } from '../retry-policy.js';
import type { OpBase, RunnerContext } from './context.js';
import { callerAttemptIds, checkAdapter } from './guards.js';
import type { RunInput } from './types.js';

/**
 * The pre-claim checks of `params` (and of a caller's `intent`), with the operation's redactor, which
 * also blanks the sensitive values held in each of `valuesFrom`.
 */
export function checkedParams(ctx: RunnerContext, spec: OperationSpec, params: unknown, intent: unknown, valuesFrom: readonly unknown[]): PreclaimChecked {
  return preclaim(params, intent, () => {
    let redactor = operationRedactor(ctx, spec);
    for (const v of valuesFrom) redactor = redactor.withValuesFrom(v);
    return redactor;
  });
}

/** The caller's redaction options plus the operation's sensitive fields: built once per operation spec (a redactor is immutable). */
function operationRedactor(ctx: RunnerContext, spec: OperationSpec): Redactor {
  let r = ctx.redactors.get(spec);
  if (r === undefined) ctx.redactors.set(spec, (r = createRedactor(ctx.options.redact ?? {}, spec.sensitiveFields ?? [])));
  return r;
}

interface BaseFields {
  readonly id: OpBase['id'];
  readonly providerKey: ProviderKey | null;
  readonly runId: RunId;
  readonly params: unknown;
  readonly checked: Pick<PreclaimChecked, 'redactor' | 'requestFingerprint'>;
  readonly signal: AbortSignal | undefined;
  readonly comparison: Comparison;
  readonly attemptIds: (() => string) | undefined;
}

/** One operation before its claim, for the adapter's operation `opName` (the one builder of OpBase). */
export function opBase(ctx: RunnerContext, adapter: AdapterV1, opName: string, spec: OperationSpec, f: BaseFields): OpBase {
  return {
    adapter,
    opName,
    card: spec.card,
    policy: cachedPolicy(spec.card, ctx.options.policy),
    redactor: f.checked.redactor,
    id: f.id,
    providerKey: f.providerKey,
    runId: f.runId,
    params: f.params,
    requestFingerprint: f.checked.requestFingerprint,
    signal: f.signal,
    comparison: f.comparison,
    attemptIds: f.attemptIds,
    scope: undefined,
  };
}

/**
 * `base` with another provider key (the recorded one, or a new revision's) or inside a run's telemetry
 * scope. A spread that only overrides keys `base` already has keeps its shape (V8's slow path is a
 * spread followed by new keys).
 */
export function rebased(base: OpBase, providerKey: ProviderKey | null, scope: OpBase['scope']): OpBase {
  // Nothing to change (the clean path's claim: the key it derived is the one recorded): base itself (it is never mutated).
  if (base.providerKey === providerKey && base.scope === scope) return base;
  return { ...base, providerKey, scope };
}

/** A claim by this worker of the operation `base` stands for, as `record`-less fields name it. */
export function claimFor(ctx: RunnerContext, base: OpBase, fields: Pick<ClaimInput, 'intentFingerprint' | 'paramsFingerprint'>): ClaimInput {
  return {
    businessOperationId: base.id,
    provider: base.adapter.provider,
    operation: base.card.operation,
    intentFingerprint: fields.intentFingerprint,
    paramsFingerprint: fields.paramsFingerprint,
    params: base.params,
    providerKey: base.providerKey,
    owner: ctx.owner,
    leaseMs: base.policy.leaseMs,
    now: ctx.clock.now(),
  };
}

/** A claim of a stored operation by this worker, as it is stored (recover, resolve, a failed record's handoff). */
export function claimOf(ctx: RunnerContext, record: OperationRecord, leaseMs: number): ClaimInput {
  return {
    businessOperationId: record.businessOperationId,
    provider: record.provider,
    operation: record.operation,
    intentFingerprint: record.intentFingerprint,
    paramsFingerprint: record.paramsFingerprint,
    params: record.params,
    providerKey: record.providerKey,
    owner: ctx.owner,
    leaseMs,
    now: ctx.clock.now(),
  };
}

/** What a new call is before its claim: its operation spec, its base and its claim. */
export interface RunIntake {
  readonly spec: OperationSpec;
  readonly base: OpBase;
  readonly claimInput: ClaimInput;
}

/** A new call: everything that can refuse it before anything is claimed (a refusal throws), then its base and its claim. */
export function intakeRun(ctx: RunnerContext, adapter: AdapterV1, operation: string, input: RunInput): RunIntake {
  const spec = checkAdapter(adapter, operation);
  if (typeof input !== 'object' || input === null) throw new InvalidIntentError('', 'run input must be an object with params');
  // Everything that can refuse the operation, before anything is claimed: the payload limits every ledger
  // can store and the redacted copy (preclaim.ts), then the schema, the intent's normalisation and the id (intake/).
  const params = input.params ?? null;
  const checked = checkedParams(ctx, spec, params, input.intent ?? null, [input.params]);
  const found = intake(spec, input, checked.paramsFingerprint);
  return runIntake(ctx, adapter, operation, spec, input, params, checked, found);
}

function runIntake(ctx: RunnerContext, adapter: AdapterV1, operation: string, spec: OperationSpec, input: RunInput, params: unknown, checked: PreclaimChecked, found: Intake): RunIntake {
  const { id, intentFingerprint, paramsFingerprint, comparison } = found;
  const providerKey = adapter.deriveProviderKey(operation, id);
  const runId = input.runId !== undefined ? asRunId(input.runId) : newRunId();
  const attemptIds = callerAttemptIds(input.attemptIds);
  const base = opBase(ctx, adapter, operation, spec, { id, providerKey, runId, params, checked, signal: input.signal, comparison, attemptIds });
  return { spec, base, claimInput: claimFor(ctx, base, { intentFingerprint, paramsFingerprint }) };
}

/** A stored operation driven again (recover, resume): its params as stored, its recorded provider key. */
export function intakeRecord(ctx: RunnerContext, adapter: AdapterV1, opName: string, record: OperationRecord, runId: RunId, attemptIds?: () => string): { base: OpBase; claimInput: ClaimInput } {
  const spec = checkAdapter(adapter, opName);
  const checked = checkedParams(ctx, spec, record.params, null, [record.params]);
  const base = opBase(ctx, adapter, opName, spec, {
    id: record.businessOperationId,
    providerKey: record.providerKey,
    runId,
    params: record.params,
    checked,
    signal: undefined,
    comparison: comparisonFor(spec.card),
    attemptIds,
  });
  return { base, claimInput: claimOf(ctx, record, base.policy.leaseMs) };
}

/** Other params than stored, where the declaration compares them: a conflict naming the differing paths (never the values). */
export function paramsConflict(base: Pick<OpBase, 'id' | 'comparison' | 'redactor' | 'params'>, record: OperationRecord, detail: string): ConflictError {
  const paths = base.comparison.differences(record.params, base.params).map((p) => base.redactor.text(p));
  return new ConflictError(record.businessOperationId, 'params', detail, paths);
}
