/** The adapter during a run: one provider call or one lookup, its answer checked and classified. Never a throw from the adapter. */
import {
  type AttemptId,
  type ExecuteContext,
  IntentLookupError,
  InvalidIntentError,
  type LookupContext,
  type LookupResult,
  type Outcome,
  outcomeProblem,
} from '@retrysafe/contract';
import { resendSafety } from '@retrysafe/contract/rules';
import { type Stop, stopText } from '../clock.js';
import { defined } from '../defined.js';
import { movedTarget, resolvesIntent } from '../intake/identity.js';
import type { Operation } from '../intake/operation.js';
import { errText, type RunnerContext } from './context.js';
import { withHeartbeat } from './lease.js';
import type { DriveState } from './state.js';

const FOUND_KINDS = ['succeeded', 'replayed', 'in-progress', 'rejected'];

function isLookupResult(o: unknown): o is LookupResult {
  const x = (o ?? {}) as { kind?: unknown; outcome?: { kind?: unknown } };
  if (x.kind !== 'found') return x.kind === 'not-found' || x.kind === 'cannot-tell';
  return outcomeProblem(x.outcome) === null && FOUND_KINDS.includes(x.outcome!.kind as string);
}

function attemptContext(op: Operation, c: DriveState, attemptId: AttemptId): Omit<ExecuteContext, 'attempt'> {
  return {
    businessOperationId: op.id,
    providerKey: op.providerKey,
    ...(c.keyRevision > 1 ? { keyRevision: c.keyRevision } : {}),
    runId: op.runId,
    attemptId,
    statusRef: c.record.statusRef,
  };
}

type Target = { readonly target?: Readonly<Record<string, unknown>> };

/** The object the params name now, as the operation's id names it; else why nothing may go to it, worded with what was
 * not done. */
async function readTarget(
  op: Operation,
  signal: AbortSignal,
  notDone: string,
): Promise<Target | { problem: Extract<Outcome, { kind: 'rejected' | 'not-applied' }> }> {
  try {
    const { moved, target } = await movedTarget(op, signal);
    if (moved === null) return { target };
    const message = `${moved}: ${notDone} there; find the operation's object at the provider, then mark it done or abandon it`;
    return { problem: { kind: 'rejected', reason: 'conflict', message } };
  } catch (err) {
    const retryAfterMs = IntentLookupError.isInstance(err) ? err.retryAfterMs : undefined;
    // The reason without the error's own words, said for intake ("nothing was claimed"): here it was claimed.
    const typed = IntentLookupError.isInstance(err) || InvalidIntentError.isInstance(err);
    const message = `could not tell which object the params name now (${notDone}): ${typed ? `${err.path}: ${err.reason}` : errText(err)}`;
    if (InvalidIntentError.isInstance(err)) return { problem: { kind: 'rejected', reason: 'not-found', message } };
    // Nothing left for the operation's object: the call is given back, not read as one that may have been sent.
    const later = retryAfterMs !== undefined ? { retryAfterMs } : {};
    return { problem: { kind: 'not-applied', neverSent: true, message, ...later } };
  }
}

const checksTarget = (op: Operation) => resolvesIntent(op.adapter, op.opName) && op.intentFrom !== 'caller';

/** The request itself, once the operation is durably `dispatched`: its answer classified. */
export async function callProvider(
  ctx: RunnerContext,
  op: Operation,
  c: DriveState,
  attemptId: AttemptId,
): Promise<Outcome> {
  const callCtx: ExecuteContext = { ...attemptContext(op, c, attemptId), attempt: c.record.attemptCount };
  const stopped = (why: Stop): Outcome => ({
    kind: 'unknown',
    cause: why === 'deadline' ? 'timeout' : 'other',
    code: why === 'deadline' ? 'RETRYSAFE_CALL_DEADLINE' : 'ABORTED',
    message: `${stopText(op.policy.maxElapsedMs, why)}; the request may have reached the provider`,
  });
  // Sent to the object the id names as read (the params' address may name another by then).
  const sendTo =
    ({ target }: Target) =>
    (signal: AbortSignal) =>
      op.adapter.doExecute(op.opName, op.params, { ...callCtx, signal, ...(target ? { target } : {}) });
  // Its target was resolved at intake just before the first call; any later one reads it again.
  const check = checksTarget(op) && !(op.intentFrom === 'resolved' && c.record.attemptCount === 1);
  const call = check
    ? async (signal: AbortSignal) => {
        const read = await readTarget(op, signal, 'nothing was sent');
        return 'problem' in read ? read.problem : sendTo(read)(signal);
      }
    : sendTo(op);
  let outcome: Outcome;
  try {
    const answer: unknown = await withHeartbeat(ctx, op, c.lease, call, stopped);
    // Sent already: an answer the runner cannot read means the effect may exist (unknown, looked up first).
    const problem = outcomeProblem(answer);
    if (problem !== null) ctx.log('warn', 'adapter-contract', `adapter answer is not an outcome: ${problem}`, op);
    outcome =
      problem === null
        ? (answer as Outcome)
        : { kind: 'unknown', cause: 'other', message: 'adapter returned something that is not an outcome' };
  } catch (err) {
    outcome = { kind: 'unknown', cause: 'other', message: `adapter threw instead of classifying: ${errText(err)}` };
  }
  const { kind, status } = outcome;
  const message = 'message' in outcome && outcome.message ? `: ${outcome.message}` : '';
  const text = () => `${kind}${status !== undefined ? ` (${status})` : ''}${message}`;
  ctx.log('info', 'outcome', text, op, defined({ attempt: c.record.attemptCount, outcome: kind, status }));
  return outcome;
}

export async function lookupProvider(
  ctx: RunnerContext,
  op: Operation,
  c: DriveState,
  attemptId: AttemptId,
): Promise<LookupResult> {
  const now = ctx.clock.now();
  const stopped = (why: Stop): LookupResult => ({
    kind: 'cannot-tell',
    code: why === 'deadline' ? 'RETRYSAFE_CALL_DEADLINE' : 'ABORTED',
    reason: `lookup: ${stopText(op.policy.maxElapsedMs, why)}`,
  });
  let result: LookupResult;
  try {
    const lookupCtx: Omit<LookupContext, 'signal'> = {
      ...attemptContext(op, c, attemptId),
      params: op.params,
      firstDispatchedAt: c.record.firstDispatchedAt,
      lastDispatchedAt: c.lastDispatchedAt,
      now,
      keyReusable: resendSafety(op.card, c.record.firstDispatchedAt, now, op.policy.clockSkewMarginMs).safe,
      clockSkewMarginMs: op.policy.clockSkewMarginMs,
    };
    const look =
      ({ target }: Target) =>
      (signal: AbortSignal) =>
        op.adapter.doLookup(op.opName, { ...lookupCtx, signal, ...(target ? { target } : {}) });
    const call = checksTarget(op)
      ? async (signal: AbortSignal): Promise<LookupResult> => {
          const read = await readTarget(op, signal, 'not looked up');
          return 'problem' in read
            ? { kind: 'cannot-tell', reason: `lookup: ${read.problem.message}` }
            : look(read)(signal);
        }
      : look({});
    const answer: unknown = await withHeartbeat(ctx, op, c.lease, call, stopped);
    result = isLookupResult(answer)
      ? answer
      : { kind: 'cannot-tell', reason: 'adapter returned something that is not a lookup result' };
  } catch (err) {
    result = { kind: 'cannot-tell', reason: `lookup failed: ${errText(err)}` };
  }
  const what = result.kind === 'found' ? result.outcome.kind : result.reason;
  ctx.log('info', 'lookup', `${result.kind} (${what})`, op, { outcome: result.kind });
  return result;
}
