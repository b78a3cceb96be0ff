/** The attempt loop: decide, wait, send or look up, write what it means, until complete or handoff. */
import { LedgerError, RetrysafeError, newAttemptId, type AttemptId, type ClaimInput, type Fenced, type OperationRecord, type Receipt, type ReceiptKind } from '@retrysafe/contract';
import { MAYBE_APPLIED_STATES, decide, observationPatch, resendSafety, type Decision, type DecisionState, type Observation } from '../decide.js';
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
    paramsAliases: base.paramsAliases,
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

export async function drive(ctx: RunnerContext, op: Op, first: Decision): Promise<RunResult> {
  const { clock, ledger, log, random } = ctx;
  let decision = first;
  let obs: Observation = null;
  for (;;) {
    const d = decision;
    log('info', 'decision', () => `${d.action}${'delayMs' in d ? ` in ${d.delayMs} ms` : ''}: ${d.why}`, op, 'delayMs' in d ? { decision: d.action, delayMs: d.delayMs } : { decision: d.action });
    if (decision.action === 'complete') return complete(ctx, op, obs, decision.adopted);
    if (decision.action === 'handoff') return handOff(ctx, op, decision);

    if (op.signal?.aborted) {
      log('warn', 'aborted', `the caller aborted; state ${op.record.state} is kept for a later run or recover()`, op);
      await ledger.release(op.ref).catch(() => undefined);
      throw op.signal.reason ?? new Error('aborted');
    }
    const polling = decision.action === 'lookup' || isInProgress(obs);
    if (polling) {
      op.windowStartedAt ??= clock.now();
      op.polls++;
    }
    if (decision.delayMs > 0) await wait(ctx, op, decision.delayMs);
    if (decision.action === 'send' && (reliesOnKey(obs) || op.maybeApplied) && !resendSafety(op.card, op.record.firstDispatchedAt, clock.now(), op.policy.clockSkewMarginMs).safe) {
      // The wait outlasted the key's retention: decide again from the same observation, now without the key.
      decision = decide(op.card, stateOf(ctx, op), obs, { policy: op.policy, random });
      continue;
    }
    const startedAt = clock.now();
    const attemptId = op.attemptIds ? (op.attemptIds() as AttemptId) : newAttemptId();
    let kind: ReceiptKind;
    if (decision.action === 'send') {
      obs = await send(ctx, op, attemptId);
      kind = op.record.attemptCount === 1 ? 'dispatch' : 'resend';
    } else {
      kind = isInProgress(obs) ? 'poll' : 'lookup';
      obs = await lookup(ctx, op, attemptId);
    }
    const finishedAt = clock.now();
    if (decision.action === 'send' && obs !== null && 'retryAfterMs' in obs && typeof obs.retryAfterMs === 'number' && obs.retryAfterMs > 0) {
      op.notBefore = Math.max(op.notBefore ?? 0, finishedAt + obs.retryAfterMs);
    }
    const observedState = stateOf(ctx, op, startedAt);
    decision = decide(op.card, observedState, obs, { policy: op.policy, random });
    const observed = observationPatch(op.card, observedState, obs, op.policy.clockSkewMarginMs);
    const patchedAt = clock.now();
    op.maybeApplied = observed.maybeApplied;
    const sealed = seal(ctx, op, { kind, attemptId, startedAt, finishedAt, obs, decision });
    if (observed.patch !== null) await writeState(ctx, op, { ...observed.patch, now: patchedAt }, sealed);
    else if (ctx.receiptWithState && (decision.action === 'complete' || decision.action === 'handoff')) op.pendingReceipt = sealed; // written with the terminal state, next
    else await appendReceipt(ctx, op, sealed);
  }
}
