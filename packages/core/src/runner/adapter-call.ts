/** The adapter during a run: one provider call or one lookup, its answer checked and classified. Never a throw from the adapter. */
import { OUTCOME_KINDS, resendSafety, type AttemptId, type ExecuteContext, type LookupResult, type OperationRecord, type Outcome } from '@retrysafe/contract';
import type { Operation } from '../intake/index.js';
import { errText, type Lease, type RunnerContext } from './context.js';
import { withHeartbeat } from './lease.js';

export function isOutcome(o: unknown): o is Outcome {
  return typeof o === 'object' && o !== null && OUTCOME_KINDS.includes((o as Outcome).kind);
}

export function isLookupResult(o: unknown): o is LookupResult {
  if (typeof o !== 'object' || o === null) return false;
  const k = (o as LookupResult).kind;
  if (k === 'found') return isOutcome((o as { outcome: unknown }).outcome) && ['succeeded', 'replayed', 'in-progress', 'rejected'].includes((o as { outcome: Outcome }).outcome.kind);
  return k === 'not-found' || k === 'cannot-tell';
}

/** What one call needs of the operation's current state. */
export interface CallInput {
  readonly attemptId: AttemptId;
  readonly record: OperationRecord;
  readonly keyRevision: number;
  readonly lastDispatchedAt: number | null;
  readonly lease: Lease;
}

/** The request itself, once the operation is durably `dispatched`: its answer classified. */
export async function callProvider(ctx: RunnerContext, op: Operation, c: CallInput): Promise<Outcome> {
  const callCtx: ExecuteContext = {
    businessOperationId: op.id,
    providerKey: op.providerKey,
    runId: op.runId,
    attemptId: c.attemptId,
    attempt: c.record.attemptCount,
    statusRef: c.record.statusRef,
    ...(c.keyRevision > 1 ? { keyRevision: c.keyRevision } : {}),
    ...(op.signal ? { signal: op.signal } : {}),
  };
  let outcome: Outcome;
  try {
    const answer: unknown = await withHeartbeat(ctx, c.lease, () => op.adapter.doExecute(op.opName, op.params, callCtx));
    outcome = isOutcome(answer) ? answer : { kind: 'unknown', cause: 'other', message: 'adapter returned something that is not an outcome' };
  } catch (err) {
    outcome = { kind: 'unknown', cause: 'other', message: `adapter threw instead of classifying: ${errText(err)}` };
  }
  const attempt = c.record.attemptCount;
  const message = 'message' in outcome && outcome.message ? `: ${outcome.message}` : '';
  ctx.log('info', 'outcome', () => `${outcome.kind}${outcome.status !== undefined ? ` (${outcome.status})` : ''}${message}`, op, outcome.status !== undefined ? { attempt, outcome: outcome.kind, status: outcome.status } : { attempt, outcome: outcome.kind });
  return outcome;
}

/** One lookup of what the provider stored. */
export async function lookupProvider(ctx: RunnerContext, op: Operation, c: CallInput): Promise<LookupResult> {
  const now = ctx.clock.now();
  let result: LookupResult;
  try {
    const answer: unknown = await withHeartbeat(ctx, c.lease, () =>
      op.adapter.doLookup(op.opName, {
        businessOperationId: op.id,
        providerKey: op.providerKey,
        ...(c.keyRevision > 1 ? { keyRevision: c.keyRevision } : {}),
        params: op.params,
        runId: op.runId,
        attemptId: c.attemptId,
        statusRef: c.record.statusRef,
        firstDispatchedAt: c.record.firstDispatchedAt,
        lastDispatchedAt: c.lastDispatchedAt,
        now,
        keyReusable: resendSafety(op.card, c.record.firstDispatchedAt, now, op.policy.clockSkewMarginMs).safe,
        ...(op.signal ? { signal: op.signal } : {}),
      }),
    );
    result = isLookupResult(answer) ? answer : { kind: 'cannot-tell', reason: 'adapter returned something that is not a lookup result' };
  } catch (err) {
    result = { kind: 'cannot-tell', reason: `lookup failed: ${errText(err)}` };
  }
  ctx.log('info', 'lookup', `${result.kind}${result.kind === 'found' ? ` (${result.outcome.kind})` : ` (${result.reason})`}`, op, { outcome: result.kind });
  return result;
}
