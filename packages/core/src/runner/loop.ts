/** The attempt loop: decide, wait, send or look up, write what it means, until complete or handoff. */
import { LedgerError, RetrysafeError, newAttemptId, type AttemptId, type ClaimInput, type Fenced, type LookupResult, type OperationRecord, type Outcome, type Receipt, type ReceiptKind } from '@retrysafe/contract';
import { resendSafety } from '@retrysafe/contract';
import { MAYBE_APPLIED_STATES, decide, observationPatch, type Decision, type DecisionState, type Observation } from '../decide.js';
import { currentRevisionNumber, needsFreshKey } from '../intake/index.js';
import type { Op, OpBase, RunnerContext } from './context.js';
import { lookup, send } from './adapter-call.js';
import { errText } from './guards.js';
import { wait } from './lease.js';
import { appendReceipt, seal, writeState } from './receipt-chain.js';
import { complete, handOff } from './terminal.js';
import type { RunResult } from './types.js';

/** The operation this worker drives, from its claimed record and the receipts written before (`prior`). */
export function startOp(ctx: RunnerContext, base: OpBase, record: OperationRecord, ref: Fenced, prior: readonly Receipt[], claimInput: ClaimInput, takenOver: boolean, dispatchWritten: boolean): Op {
  const last = prior[prior.length - 1];
  const maybeApplied = MAYBE_APPLIED_STATES.includes(record.state);
  // One plain literal of a stable shape (no spread of base): the runner's hottest object.
  return {
    adapter: base.adapter,
    opName: base.opName,
    card: base.card,
    policy: base.policy,
    redactor: base.redactor,
    id: base.id,
    providerKey: base.providerKey,
    runId: base.runId,
    params: base.params,
    requestFingerprint: base.requestFingerprint,
    signal: base.signal,
    comparison: base.comparison,
    attemptIds: base.attemptIds,
    scope: base.scope,
    keyRevision: needsFreshKey(base.card) ? currentRevisionNumber(prior) : 1,
    ref,
    record,
    // This worker's own view of its lease, measured on its own clock from before it asked: never later than the
    // ledger's (which may judge on its own clock, e.g. PostgreSQL's), whatever the offset between the two clocks.
    leaseExpiresAt: Math.min(record.leaseExpiresAt ?? 0, claimInput.now + base.policy.leaseMs),
    // Taken over: the dead owner could send until its lease ended (never after: checkOwnLease), and this
    // claim's write (record.updatedAt) happened once that lease had run out, so it bounds the dead owner's
    // last dispatch from above — its lease end, not its last heartbeat. Otherwise: the last write.
    lastDispatchedAt: dispatchWritten || record.firstDispatchedAt === null ? null : Math.max(record.firstDispatchedAt, record.updatedAt),
    startedAt: ctx.clock.now(),
    recovering: takenOver && maybeApplied,
    maybeApplied: !dispatchWritten && maybeApplied,
    notBefore: undefined,
    runAttempts: 0,
    windowStartedAt: null,
    polls: 0,
    lastSeq: last?.seq ?? 0,
    lastHash: last?.hash ?? null,
    receipts: prior.length === 0 ? [] : prior.slice(),
    dispatchWritten,
    pendingReceipt: null,
  };
}

/** A LedgerError that ends a call says whether that call had already sent the request (LedgerError.providerMayHaveBeenCalled). */
export function mayHaveCalled(ctx: RunnerContext, err: unknown, called: boolean, op: Op): unknown {
  // A ledger driver's own error (SQLite's, a cut JSON text) is a LedgerError too, saying what this call did.
  const e = err as { name?: unknown; code?: unknown } | null;
  if (!RetrysafeError.isInstance(err) && (e?.name === 'SqliteError' || (typeof e?.code === 'string' && e.code.startsWith('SQLITE_')) || err instanceof SyntaxError)) {
    if (called) ctx.log('warn', 'ledger-failed-after-dispatch', `the ledger failed after the request was sent (the provider may have applied it): ${errText(err)}`, op);
    return new LedgerError(`the ledger failed: ${errText(err)}${called ? ' — after this call had sent the request: the provider may have applied it; run the same id again or recover() once the ledger works (both look up first)' : ''}`, { cause: err, providerMayHaveBeenCalled: called });
  }
  if (!LedgerError.isInstance(err) || !called || err.providerMayHaveBeenCalled) return err;
  ctx.log('warn', 'ledger-failed-after-dispatch', `the ledger failed after the request was sent (the provider may have applied it): ${errText(err)}`, op);
  return new LedgerError(`${err.message} — after this call had sent the request: the provider may have applied it; run the same id again or recover() once the ledger works (both look up first)`, { cause: err, providerMayHaveBeenCalled: true });
}

export function stateOf(ctx: RunnerContext, op: Op, observedAt?: number): DecisionState {
  // Every key always present (undefined where DecisionState leaves it out): one shape for every call.
  return {
    observedAt,
    // Dispatched by the claim but not sent yet: still the fresh claim it was (see Op.dispatchWritten).
    ledgerState: op.dispatchWritten ? 'claimed' : op.record.state,
    now: ctx.clock.now(),
    firstDispatchedAt: op.dispatchWritten ? null : op.record.firstDispatchedAt,
    lastDispatchedAt: op.lastDispatchedAt,
    maybeApplied: op.maybeApplied,
    notBefore: op.notBefore,
    runAttempts: op.runAttempts,
    runStartedAt: op.startedAt,
    windowStartedAt: op.windowStartedAt,
    polls: op.polls,
  };
}

/** After these, a send is only allowed because the card says the same key folds it into the first. */
function reliesOnKey(obs: Observation): boolean {
  if (obs === null) return false;
  const inner = obs.kind === 'found' ? obs.outcome : obs;
  return inner.kind === 'unknown' || inner.kind === 'in-progress' || obs.kind === 'cannot-tell';
}

function isInProgress(obs: Observation): boolean {
  return obs !== null && (obs.kind === 'in-progress' || (obs.kind === 'found' && obs.outcome.kind === 'in-progress'));
}

/** A decision the loop acts on (a send or a lookup, after its delay), as opposed to an end. */
type Act = Extract<Decision, { action: 'send' | 'lookup' }>;

/**
 * Drives the operation from its first decision to its end (complete or handoff). Not an async function:
 * a clean run (send now, the send answers, complete) is the send's promise and its continuations, so the
 * optimised code carries no coroutine; every other path goes on in driveRest, the attempt loop. Whatever
 * throws comes back as a rejection, as from an async function.
 */
export function drive(ctx: RunnerContext, op: Op, first: Decision): Promise<RunResult> {
  try {
    return decided(ctx, op, first, null);
  } catch (err) {
    return Promise.reject(err);
  }
}

/**
 * A decision, logged, then carried out: the end, or the first send when nothing comes before it (no delay,
 * no abort, nothing maybe applied: the loop's steps before an attempt would do nothing), or the loop.
 */
function decided(ctx: RunnerContext, op: Op, decision: Decision, obs: Observation): Promise<RunResult> {
  logDecision(ctx, op, decision);
  if (decision.action === 'complete' || decision.action === 'handoff') return end(ctx, op, decision, obs);
  if (obs !== null || decision.action !== 'send' || decision.delayMs > 0 || op.maybeApplied || op.signal?.aborted) return driveRest(ctx, op, decision, obs);
  const startedAt = ctx.clock.now();
  const attemptId = nextAttemptId(op);
  return send(ctx, op, attemptId).then((sent) => {
    const next = afterAttempt(ctx, op, decision, attemptId, startedAt, null, sent);
    return next instanceof Promise ? next.then((d) => decided(ctx, op, d, sent)) : decided(ctx, op, next, sent);
  });
}

/** The attempt loop from a logged decision that is not an end: abort, wait, send or look up, write what it means, decide again. */
async function driveRest(ctx: RunnerContext, op: Op, acting: Act, observed: Observation): Promise<RunResult> {
  const { clock, ledger, random } = ctx;
  let d = acting;
  let obs = observed;
  for (;;) {
    if (op.signal?.aborted) {
      ctx.log('warn', 'aborted', `the caller aborted; state ${op.record.state} is kept for a later run or recover()`, op);
      await ledger.release(op.ref).catch(() => undefined);
      throw op.signal.reason ?? new Error('aborted');
    }
    const polling = d.action === 'lookup' || isInProgress(obs);
    if (polling) {
      op.windowStartedAt ??= clock.now();
      op.polls++;
    }
    if (d.delayMs > 0) await wait(ctx, op, d.delayMs);
    let decision: Decision;
    if (d.action === 'send' && (reliesOnKey(obs) || op.maybeApplied) && !resendSafety(op.card, op.record.firstDispatchedAt, clock.now(), op.policy.clockSkewMarginMs).safe) {
      // The wait outlasted the key's retention: decide again from the same observation, now without the key.
      decision = decide(op.card, stateOf(ctx, op), obs, { policy: op.policy, random });
    } else {
      const startedAt = clock.now();
      const attemptId = nextAttemptId(op);
      const prev = obs;
      obs = d.action === 'send' ? await send(ctx, op, attemptId) : await lookup(ctx, op, attemptId);
      const next = afterAttempt(ctx, op, d, attemptId, startedAt, prev, obs);
      decision = next instanceof Promise ? await next : next;
    }
    logDecision(ctx, op, decision);
    if (decision.action === 'complete' || decision.action === 'handoff') return end(ctx, op, decision, obs);
    d = decision;
  }
}

function logDecision(ctx: RunnerContext, op: Op, d: Decision): void {
  ctx.log('info', 'decision', () => `${d.action}${'delayMs' in d ? ` in ${d.delayMs} ms` : ''}: ${d.why}`, op, 'delayMs' in d ? { decision: d.action, delayMs: d.delayMs } : { decision: d.action });
}

function end(ctx: RunnerContext, op: Op, decision: Extract<Decision, { action: 'complete' | 'handoff' }>, obs: Observation): Promise<RunResult> {
  return decision.action === 'complete' ? complete(ctx, op, obs, decision.adopted) : handOff(ctx, op, decision);
}

function nextAttemptId(op: Op): AttemptId {
  return op.attemptIds ? (op.attemptIds() as AttemptId) : newAttemptId();
}

/**
 * What one attempt's answer (`obs`, after `prev`) means, on either path: the provider's Retry-After, the next
 * decision, the state it implies and the attempt's sealed receipt — written with that state, appended, or
 * left pending for the terminal write that comes next. The decision, once those writes are done.
 */
function afterAttempt(ctx: RunnerContext, op: Op, acted: Act, attemptId: AttemptId, startedAt: number, prev: Observation, obs: Outcome | LookupResult): Decision | Promise<Decision> {
  const { clock, random } = ctx;
  // A send's kind from the attempt it became; a lookup's from what it followed (an in-progress answer is polled).
  const kind: ReceiptKind = acted.action === 'send' ? (op.record.attemptCount === 1 ? 'dispatch' : 'resend') : isInProgress(prev) ? 'poll' : 'lookup';
  const finishedAt = clock.now();
  if (acted.action === 'send' && 'retryAfterMs' in obs && typeof obs.retryAfterMs === 'number' && obs.retryAfterMs > 0) {
    op.notBefore = Math.max(op.notBefore ?? 0, finishedAt + obs.retryAfterMs);
  }
  const observedState = stateOf(ctx, op, startedAt);
  const decision = decide(op.card, observedState, obs, { policy: op.policy, random });
  const observed = observationPatch(op.card, observedState, obs, op.policy.clockSkewMarginMs);
  const patchedAt = clock.now();
  op.maybeApplied = observed.maybeApplied;
  const sealed = seal(ctx, op, { kind, attemptId, startedAt, finishedAt, obs, decision });
  if (observed.patch !== null) return writeState(ctx, op, { ...observed.patch, now: patchedAt }, sealed).then(() => decision);
  if (ctx.receiptWithState && (decision.action === 'complete' || decision.action === 'handoff')) {
    op.pendingReceipt = sealed; // written with the terminal state, next
    return decision;
  }
  return appendReceipt(ctx, op, sealed).then(() => decision);
}
