/** The operation object: all the runner knows of one operation before its claim, built once here, never changed. */
import {
  type AdapterV1,
  asRunId,
  ConflictError,
  InvalidIntentError,
  InvalidStateError,
  newRunId,
  type OperationRecord,
  type OperationSpec,
  type ProviderKey,
  type Receipt,
  type RetrySafetyCard,
} from '@retrysafe/contract';
import { checkParamsOpen } from '../ledger/encrypted-params.js';
import type { RunInput } from '../runner/types.js';
import type { RunScope } from '../telemetry.js';
import { callerAttemptIds, checkAdapter, derivedProviderKey } from './adapter.js';
import { comparisonFor, identityOf } from './identity.js';
import { assertParams } from './params-schema.js';
import { checkedPayload, type IntakeContext } from './payload.js';
import { cachedPolicy } from './policy.js';
import { nothingApplied } from './supersede.js';

export type Operation = Readonly<ReturnType<typeof newOperation>>;

/** The params checked against the schema, the id derived from the intent, and the params' fingerprint as compared. */
function identify(
  adapter: AdapterV1,
  spec: OperationSpec,
  input: Pick<RunInput, 'params' | 'businessOperationId' | 'intent'>,
  rawParamsFingerprint: string,
) {
  assertParams(spec, input.params);
  const comparison = comparisonFor(spec.card);
  const paramsFingerprint = comparison.normalizes ? comparison.paramsFingerprint(input.params) : rawParamsFingerprint;
  const { id, intentFingerprint } = identityOf(spec, input, adapter.account);
  return { id, intentFingerprint, paramsFingerprint, comparison };
}

/** A new call: every check that can refuse it before anything is claimed (a refusal throws), then the operation. */
export function newOperation(ctx: IntakeContext, adapter: AdapterV1, opName: string, input: RunInput) {
  const spec = checkAdapter(adapter, opName);
  if (typeof input !== 'object' || input === null)
    throw new InvalidIntentError('', 'run input must be an object with params');
  const params = input.params ?? null;
  const payload = checkedPayload(ctx, spec, params, input.intent ?? null, [input.params]);
  const { id, intentFingerprint, paramsFingerprint, comparison } = identify(
    adapter,
    spec,
    input,
    payload.paramsFingerprint,
  );
  return {
    adapter,
    opName,
    card: spec.card,
    comparison,
    id,
    providerKey: derivedProviderKey(adapter, opName, spec.card, id),
    runId: input.runId !== undefined ? asRunId(input.runId) : newRunId(),
    params: params as unknown,
    intentFingerprint,
    paramsFingerprint,
    redactor: payload.redactor,
    requestFingerprint: payload.requestFingerprint,
    signal: input.signal,
    // Where the id's intent came from: run() sets 'resolved' (runner/adapter-call reads the target again after the first
    // call); a caller's intent names no object to check against.
    intentFrom: (input.intent !== undefined ? 'caller' : 'params') as 'caller' | 'params' | 'resolved',
    // The intent doResolveIntent read at intake (run() sets it): the first call is sent by it.
    target: undefined as Readonly<Record<string, unknown>> | undefined,
    followUp: input.followUp ?? false,
    attemptIds: callerAttemptIds(input.attemptIds),
    policy: cachedPolicy(spec.card, ctx.options.policy),
    // The telemetry scope of the run() driving it (none for recover and resolve).
    scope: undefined as RunScope | undefined,
    // When that run() began: its time limit covers the look-up before the claim, and any wait for another holder.
    startedAt: undefined as number | undefined,
  };
}

/** A stored operation driven again (recover, resume), or with `corrected` a corrected request (resend-with). */
export function storedOperation(
  ctx: IntakeContext,
  found: Pick<Operation, 'adapter' | 'opName'>,
  record: OperationRecord,
  run: Pick<Operation, 'runId' | 'attemptIds'>,
  corrected?: { readonly params: unknown; readonly receipts: readonly Receipt[] },
): Operation {
  const { adapter, opName } = found;
  const spec = checkAdapter(adapter, opName);
  checkParamsOpen(record);
  const params = corrected ? corrected.params : record.params;
  const payload = checkedPayload(ctx, spec, params, null, corrected ? [params, record.params] : [params]);
  let paramsFingerprint = record.paramsFingerprint;
  if (corrected) {
    const id = record.businessOperationId;
    const next = identify(adapter, spec, { params, businessOperationId: id }, payload.paramsFingerprint);
    // The intent the stored params name, read as the corrected ones are: the record's own unless run() was given the
    // caller's intent, which resend-with cannot repeat (run() with it takes the same correction).
    if (
      next.intentFingerprint !==
      identityOf(spec, { params: record.params, businessOperationId: id }, adapter.account).intentFingerprint
    )
      throw anotherIntent(record, corrected.receipts, spec.card);
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
    // A caller's intent is in the record: its later sends are not checked against the object the params name now.
    intentFrom: record.intentFrom ?? 'params',
    target: undefined,
    followUp: false,
    attemptIds: run.attemptIds,
    policy: cachedPolicy(spec.card, ctx.options.policy),
    scope: undefined,
    startedAt: undefined,
  };
}

/** A correction naming another intent (resend-with, or run() under the caller's own id) is a new operation: said so only
 * where the stored one can have left nothing, else the new one would make the effect a second time. */
export function anotherIntent(
  record: OperationRecord,
  receipts: readonly Receipt[],
  card: RetrySafetyCard,
  paths: readonly string[] = [],
): ConflictError {
  const stored = nothingApplied(record, receipts, card);
  const detail = stored.ok
    ? 'the corrected params name another intent: run them as a new operation instead (under a business-operation id of its own where you give one)'
    : `the corrected params name another intent, and the stored request may have applied or may still (${stored.why}): run them as a new operation only once it is known to have left nothing (a person checks at the provider and marks it done or abandons it), else the effect is made twice`;
  const { businessOperationId } = record;
  const needsPerson = !stored.ok && record.state === 'handed-off'; // as a params conflict on it (fromTerminal)
  return new ConflictError({
    businessOperationId,
    field: 'intent',
    detail,
    paths,
    needsPerson,
    storedMayApply: !stored.ok,
  });
}

/** The operation with another provider key (the one recorded, or a new revision's). */
export function withProviderKey(op: Operation, providerKey: ProviderKey | null): Operation {
  return op.providerKey === providerKey ? op : { ...op, providerKey };
}

/** Where the params differ from the stored ones as the card compares them: the paths (redacted), never the values. */
export const changedParamPaths = (op: Pick<Operation, 'comparison' | 'redactor' | 'params'>, record: OperationRecord) =>
  op.comparison.differences(record.params, op.params).map((p) => op.redactor.text(p));

/** Other params than stored: a conflict naming the differing paths (never the values). `stored`: whether the stored
 * request may still apply or has (`storedMayApply`), also waiting for a person (`needsPerson`), or was not applied. */
export function paramsConflict(
  op: Pick<Operation, 'comparison' | 'redactor' | 'params'>,
  record: OperationRecord,
  detail: string,
  stored: 'may-apply' | 'needs-person' | 'not-applied' = 'may-apply',
): ConflictError {
  const paths = changedParamPaths(op, record);
  const { businessOperationId } = record;
  const needsPerson = stored === 'needs-person';
  return new ConflictError({
    businessOperationId,
    field: 'params',
    detail,
    paths,
    needsPerson,
    storedMayApply: stored !== 'not-applied',
  });
}
