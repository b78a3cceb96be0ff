/** The adapter boundary during a run: one provider call or one lookup, its answer checked and classified. */
import type { AttemptId, ExecuteContext, LookupResult, Outcome } from '@retrysafe/contract';
import { resendSafety } from '@retrysafe/contract';
import type { Mutable, Op, RunnerContext } from './context.js';
import { errText, isLookupResult, isOutcome } from './guards.js';
import { checkOwnLease, renew, withHeartbeat } from './lease.js';

/**
 * One provider call. Not an async function: a clean run's call (its claim already wrote `dispatched`)
 * is the adapter's promise and two continuations, so its optimised code carries no coroutine; a
 * re-send first renews and writes `dispatched` (dispatchAndCall). Whatever throws comes back as a
 * rejection, as from an async function.
 */
export function send(ctx: RunnerContext, op: Op, attemptId: AttemptId): Promise<Outcome> {
  if (!op.dispatchWritten) return dispatchAndCall(ctx, op, attemptId);
  // The claim itself durably created the operation as `dispatched` (fresh lease, attempt 1).
  op.dispatchWritten = false;
  try {
    return call(ctx, op, attemptId);
  } catch (err) {
    return Promise.reject(err);
  }
}

async function dispatchAndCall(ctx: RunnerContext, op: Op, attemptId: AttemptId): Promise<Outcome> {
  await renew(ctx, op);
  // Durably `dispatched` BEFORE the provider is called: a crash from here on is found and reconciled.
  op.record = await ctx.ledger.markDispatched(op.ref, ctx.clock.now());
  return call(ctx, op, attemptId);
}

/** The request itself, once the operation is durably `dispatched`: its answer classified, never a throw from the adapter. */
function call(ctx: RunnerContext, op: Op, attemptId: AttemptId): Promise<Outcome> {
  const { clock, log } = ctx;
  checkOwnLease(ctx, op);
  // The late-apply window runs from the moment the request goes out, not from the write before it.
  op.lastDispatchedAt = Math.max(op.record.updatedAt, clock.now());
  op.runAttempts++;
  log('info', 'dispatch', () => `provider call ${op.record.attemptCount} (run attempt ${op.runAttempts}) with key ${op.providerKey ?? '(none)'}`, op, { attempt: op.record.attemptCount });
  let answer: Promise<Outcome>;
  try {
    const callCtx: Mutable<ExecuteContext> = { businessOperationId: op.id, providerKey: op.providerKey, runId: op.runId, attemptId, attempt: op.record.attemptCount, statusRef: op.record.statusRef };
    if (op.keyRevision > 1) callCtx.keyRevision = op.keyRevision;
    if (op.signal) callCtx.signal = op.signal;
    answer = withHeartbeat(ctx, op, () => op.adapter.doExecute(op.opName, op.params, callCtx)).then((o) => {
      try {
        return isOutcome(o) ? o : notAnOutcome();
      } catch (err) {
        return threw(err);
      }
    }, threw);
  } catch (err) {
    answer = Promise.resolve(threw(err));
  }
  return answer.then((o) => {
    const attempt = op.record.attemptCount;
    log('info', 'outcome', () => `${o.kind}${o.status !== undefined ? ` (${o.status})` : ''}${'message' in o && o.message ? `: ${o.message}` : ''}`, op, o.status !== undefined ? { attempt, outcome: o.kind, status: o.status } : { attempt, outcome: o.kind });
    return o;
  });
}

const notAnOutcome = (): Outcome => ({ kind: 'unknown', cause: 'other', message: 'adapter returned something that is not an outcome' });
const threw = (err: unknown): Outcome => ({ kind: 'unknown', cause: 'other', message: `adapter threw instead of classifying: ${errText(err)}` });

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
