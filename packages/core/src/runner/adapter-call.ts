/** The adapter boundary during a run: one provider call or one lookup, its answer checked and classified. */
import type { AttemptId, ExecuteContext, LookupResult, Outcome } from '@retrysafe/contract';
import { resendSafety } from '../decide.js';
import type { Mutable, Op, RunnerContext } from './context.js';
import { errText, isLookupResult, isOutcome } from './guards.js';
import { checkOwnLease, renew, withHeartbeat } from './lease.js';

export async function send(ctx: RunnerContext, op: Op, attemptId: AttemptId): Promise<Outcome> {
  const { clock, ledger, log } = ctx;
  if (op.dispatchWritten) {
    // The claim itself durably created the operation as `dispatched` (fresh lease, attempt 1).
    op.dispatchWritten = false;
  } else {
    await renew(ctx, op);
    // Durably `dispatched` BEFORE the provider is called: a crash from here on is found and reconciled.
    op.record = await ledger.markDispatched(op.ref, clock.now());
  }
  checkOwnLease(ctx, op);
  // The late-apply window runs from the moment the request goes out, not from the write before it.
  op.lastDispatchedAt = Math.max(op.record.updatedAt, clock.now());
  op.runAttempts++;
  log('info', 'dispatch', () => `provider call ${op.record.attemptCount} (run attempt ${op.runAttempts}) with key ${op.providerKey ?? '(none)'}`, op, { attempt: op.record.attemptCount });
  let outcome: Outcome;
  try {
    const call: Mutable<ExecuteContext> = { businessOperationId: op.id, providerKey: op.providerKey, runId: op.runId, attemptId, attempt: op.record.attemptCount, statusRef: op.record.statusRef };
    if (op.keyRevision > 1) call.keyRevision = op.keyRevision;
    if (op.signal) call.signal = op.signal;
    const o = await withHeartbeat(ctx, op, () => op.adapter.doExecute(op.opName, op.params, call));
    outcome = isOutcome(o) ? o : { kind: 'unknown', cause: 'other', message: 'adapter returned something that is not an outcome' };
  } catch (err) {
    outcome = { kind: 'unknown', cause: 'other', message: `adapter threw instead of classifying: ${errText(err)}` };
  }
  const o = outcome;
  const attempt = op.record.attemptCount;
  log('info', 'outcome', () => `${o.kind}${o.status !== undefined ? ` (${o.status})` : ''}${'message' in o && o.message ? `: ${o.message}` : ''}`, op, o.status !== undefined ? { attempt, outcome: o.kind, status: o.status } : { attempt, outcome: o.kind });
  return outcome;
}

export async function lookup(ctx: RunnerContext, op: Op, attemptId: AttemptId): Promise<LookupResult> {
  const { clock, ledger, log } = ctx;
  await renew(ctx, op);
  if (op.record.state !== 'reconciling' && op.record.state !== 'in-progress') {
    op.record = await ledger.setState(op.ref, { state: 'reconciling', now: clock.now() });
  }
  let result: LookupResult;
  try {
    const r = await withHeartbeat(ctx, op, () => op.adapter.doLookup(op.opName, {
      businessOperationId: op.id,
      providerKey: op.providerKey,
      ...(op.keyRevision > 1 ? { keyRevision: op.keyRevision } : {}),
      params: op.params,
      runId: op.runId,
      attemptId,
      statusRef: op.record.statusRef,
      firstDispatchedAt: op.record.firstDispatchedAt,
      lastDispatchedAt: op.lastDispatchedAt,
      now: clock.now(),
      keyReusable: resendSafety(op.card, op.record.firstDispatchedAt, clock.now(), op.policy.clockSkewMarginMs).safe,
      ...(op.signal ? { signal: op.signal } : {}),
    }));
    result = isLookupResult(r) ? r : { kind: 'cannot-tell', reason: 'adapter returned something that is not a lookup result' };
  } catch (err) {
    result = { kind: 'cannot-tell', reason: `lookup failed: ${errText(err)}` };
  }
  log('info', 'lookup', `${result.kind}${result.kind === 'found' ? ` (${result.outcome.kind})` : ` (${result.reason})`}`, op, { outcome: result.kind });
  return result;
}
