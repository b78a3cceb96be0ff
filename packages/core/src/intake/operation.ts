/**
 * The operation object: everything the runner knows about one operation before it is claimed, built
 * once here (for a new call, a stored operation, or a corrected request) and never changed after.
 */
import {
  type AdapterV1,
  type AttemptId,
  asRunId,
  type BusinessOperationId,
  ConflictError,
  InvalidIntentError,
  InvalidStateError,
  newRunId,
  type OperationRecord,
  type OperationSpec,
  type ProviderKey,
  type RetrySafetyCard,
  type RunId,
} from '@retrysafe/contract';
import { createRedactor, type RedactOptions, type Redactor } from '../redact.js';
import type { PolicyOverrides, RetryPolicy } from '../retry-policy.js';
import type { RunInput } from '../runner/types.js';
import type { RunScope } from '../telemetry.js';
import { callerAttemptIds, checkAdapter, derivedProviderKey } from './adapter.js';
import { type Comparison, comparisonFor, identityOf } from './identity.js';
import { assertParams } from './params-schema.js';
import { type CheckedPayload, checkedPayload } from './payload.js';
import { cachedPolicy } from './policy.js';

export interface Operation extends Pick<CheckedPayload, 'redactor' | 'requestFingerprint'>, Pick<RunInput, 'signal'> {
  /** A new attempt id per provider call or lookup (the caller's, when given). */
  readonly attemptIds: () => AttemptId;
  readonly adapter: AdapterV1;
  readonly opName: string;
  readonly card: RetrySafetyCard;
  readonly policy: RetryPolicy;
  /** How params are compared with the stored ones (the card's declaration). */
  readonly comparison: Comparison;
  readonly id: BusinessOperationId;
  readonly providerKey: ProviderKey | null;
  readonly runId: RunId;
  readonly params: unknown;
  readonly intentFingerprint: string;
  readonly paramsFingerprint: string;
  /** The telemetry scope of the run() driving it (none for recover and resolve). */
  readonly scope: RunScope | undefined;
}

/** What intake needs of the runner: its options and its cache of redactors per operation spec. */
interface IntakeContext {
  readonly options: { readonly redact?: RedactOptions | undefined; readonly policy?: PolicyOverrides | undefined };
  readonly redactors: WeakMap<OperationSpec, Redactor>;
}

/**
 * The params checked against the schema, the intent normalised and its id derived, and the params'
 * fingerprint as compared (`rawParamsFingerprint`, of the params as written, unless the card normalises params).
 */
function identify(
  spec: OperationSpec,
  input: Pick<RunInput, 'params' | 'businessOperationId' | 'intent'>,
  rawParamsFingerprint: string,
) {
  assertParams(spec, input.params);
  const comparison = comparisonFor(spec.card);
  const paramsFingerprint = comparison.normalizes ? comparison.paramsFingerprint(input.params) : rawParamsFingerprint;
  const { id, intentFingerprint } = identityOf(spec, input);
  return { id, intentFingerprint, paramsFingerprint, comparison };
}

/** The caller's redaction options plus the operation's sensitive fields, also blanking the sensitive values held in `valuesFrom`. */
function payloadOf(
  ctx: IntakeContext,
  spec: OperationSpec,
  params: unknown,
  intent: unknown,
  valuesFrom: readonly unknown[],
): CheckedPayload {
  return checkedPayload(params, intent, () => {
    let redactor = ctx.redactors.get(spec);
    if (redactor === undefined) {
      redactor = createRedactor(ctx.options.redact ?? {}, spec.sensitiveFields ?? []);
      ctx.redactors.set(spec, redactor);
    }
    for (const v of valuesFrom) redactor = redactor.withValuesFrom(v);
    return redactor;
  });
}

/** A new call: every check that can refuse it before anything is claimed (a refusal throws), then the operation. */
export function newOperation(ctx: IntakeContext, adapter: AdapterV1, opName: string, input: RunInput): Operation {
  const spec = checkAdapter(adapter, opName);
  if (typeof input !== 'object' || input === null)
    throw new InvalidIntentError('', 'run input must be an object with params');
  const params = input.params ?? null;
  const payload = payloadOf(ctx, spec, params, input.intent ?? null, [input.params]);
  const { id, intentFingerprint, paramsFingerprint, comparison } = identify(spec, input, payload.paramsFingerprint);
  return {
    adapter,
    opName,
    card: spec.card,
    comparison,
    id,
    providerKey: derivedProviderKey(adapter, opName, spec.card, id),
    runId: input.runId !== undefined ? asRunId(input.runId) : newRunId(),
    params,
    intentFingerprint,
    paramsFingerprint,
    redactor: payload.redactor,
    requestFingerprint: payload.requestFingerprint,
    signal: input.signal,
    attemptIds: callerAttemptIds(input.attemptIds),
    policy: cachedPolicy(spec.card, ctx.options.policy),
    scope: undefined,
  };
}

/**
 * A stored operation driven again (recover, resume): its params as stored, its recorded provider key.
 * With `corrected`, a person's corrected request instead (resolve resend-with): the same pre-claim checks as
 * a new call, the same intent, and params that differ from the stored ones.
 */
export function storedOperation(
  ctx: IntakeContext,
  found: { readonly adapter: AdapterV1; readonly opName: string },
  record: OperationRecord,
  run: Pick<Operation, 'runId' | 'attemptIds'>,
  corrected?: { readonly params: unknown },
): Operation {
  const { adapter, opName } = found;
  const spec = checkAdapter(adapter, opName);
  const params = corrected ? corrected.params : record.params;
  const payload = payloadOf(ctx, spec, params, null, corrected ? [params, record.params] : [params]);
  let paramsFingerprint = record.paramsFingerprint;
  if (corrected) {
    const next = identify(spec, { params, businessOperationId: record.businessOperationId }, payload.paramsFingerprint);
    if (next.intentFingerprint !== record.intentFingerprint)
      throw new ConflictError(
        record.businessOperationId,
        'intent',
        'the corrected params name another intent: run them as a new operation instead',
      );
    if (next.paramsFingerprint === record.paramsFingerprint)
      throw new InvalidStateError(
        record.businessOperationId,
        record.state,
        'resend-with needs params that differ from the stored ones (use resume to re-send the same request)',
      );
    paramsFingerprint = next.paramsFingerprint;
  }
  return {
    adapter,
    opName,
    card: spec.card,
    comparison: comparisonFor(spec.card),
    id: record.businessOperationId,
    providerKey: record.providerKey,
    runId: run.runId,
    params,
    intentFingerprint: record.intentFingerprint,
    paramsFingerprint,
    redactor: payload.redactor,
    requestFingerprint: payload.requestFingerprint,
    signal: undefined,
    attemptIds: run.attemptIds,
    policy: cachedPolicy(spec.card, ctx.options.policy),
    scope: undefined,
  };
}

/** The operation with another provider key (the one recorded, or a new revision's). */
export function withProviderKey(op: Operation, providerKey: ProviderKey | null): Operation {
  return op.providerKey === providerKey ? op : { ...op, providerKey };
}

/** Other params than stored, where the declaration compares them: a conflict naming the differing paths (never the values). */
export function paramsConflict(
  op: Pick<Operation, 'comparison' | 'redactor' | 'params'>,
  record: OperationRecord,
  detail: string,
): ConflictError {
  const paths = op.comparison.differences(record.params, op.params).map((p) => op.redactor.text(p));
  return new ConflictError(record.businessOperationId, 'params', detail, paths);
}
