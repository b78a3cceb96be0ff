/** The attempt loop: decide, wait, send or look up, write what it means, until complete or handoff. */
import {
  type AttemptId,
  LeaseLostError,
  LedgerError,
  type LookupResult,
  type Outcome,
  type Receipt,
  type ReceiptKind,
} from '@retrysafe/contract';
import { decide, isInProgress, keyGoneBeforeSend, type Observation, observationPatch } from '../decide.js';
import { defined } from '../defined.js';
import type { Operation } from '../intake/operation.js';
import { callProvider, lookupProvider } from './adapter-call.js';
import type { RunnerContext } from './context.js';
import { checkOwnLease, renew, wait } from './lease.js';
import { attemptReceipt } from './receipt-chain.js';
import { type Claimed, type DriveState, decisionState, releaseLease, startState } from './state.js';
import { complete, givenBack, givesBack, handOff } from './terminal.js';
import type { RunResult } from './types.js';

/** On a failure other than a lost lease, releases the lease first. */
export async function drive(ctx: RunnerContext, op: Operation, c: Claimed, receipts: Receipt[]): Promise<RunResult> {
  const s = startState(ctx, op, c, receipts);
  try {
    return await attemptLoop(ctx, op, s);
  } catch (err) {
    if (LeaseLostError.isInstance(err)) throw err;
    await releaseLease(ctx, s.lease.ref, s.takenOverLeaseEnd, op.policy.clockSkewMarginMs);
    throw ledgerFailure(ctx, err, s.runAttempts > 0, op);
  }
}

async function attemptLoop(ctx: RunnerContext, op: Operation, s: DriveState): Promise<RunResult> {
  const budget = { policy: op.policy, random: ctx.random };
  let obs: Observation = null;
  let pending: Receipt | null = null;
  let decision = decide(op.card, decisionState(ctx, op.card, s), null, budget);
  for (;;) {
    ctx.log(
      'info',
      'decision',
      () => `${decision.action}${'delayMs' in decision ? ` in ${decision.delayMs} ms` : ''}: ${decision.why}`,
      op,
      'delayMs' in decision ? { decision: decision.action, delayMs: decision.delayMs } : { decision: decision.action },
    );
    if (decision.action === 'complete') return complete(ctx, op, s, { obs, adopted: decision.adopted, pending });
    if (decision.action === 'handoff')
      return s.record.state === 'not-sent'
        ? givenBack(ctx, op, s, decision)
        : handOff(ctx, op, s, { decided: decision, pending });
    stopIfAborted(ctx, op, s);
    if (decision.action === 'lookup' || isInProgress(obs)) {
      s.windowStartedAt ??= ctx.clock.now();
      s.polls++;
    }
    if (decision.delayMs > 0) {
      await wait(ctx, s.lease, decision.delayMs, op.signal);
      stopIfAborted(ctx, op, s); // the caller may give up during the wait: nothing goes out after that
    }
    const waited = decisionState(ctx, op.card, s);
    if (keyGoneBeforeSend(op.card, decision, obs, waited, op.policy.clockSkewMarginMs)) {
      decision = decide(op.card, waited, obs, budget); // from the same observation, now without the key
      continue;
    }
    const acted = decision;
    const startedAt = ctx.clock.now();
    const attemptId = op.attemptIds();
    const prev = obs;
    // A send's kind from the attempt it became; a lookup's from what it followed (an in-progress answer is polled).
    let kind: ReceiptKind;
    if (acted.action === 'send') {
      obs = await send(ctx, op, s, attemptId);
      kind = s.record.attemptCount === 1 ? 'dispatch' : 'resend';
    } else {
      obs = await lookUp(ctx, op, s, attemptId);
      kind = isInProgress(prev) ? 'poll' : 'lookup';
    }
    const finishedAt = ctx.clock.now();
    // A provider's Retry-After (checked as a number ≥ 0 with the outcome) holds back every later call.
    const retryAfterMs = acted.action === 'send' && 'retryAfterMs' in obs ? (obs.retryAfterMs ?? 0) : 0;
    if (retryAfterMs > 0) s.notBefore = Math.max(s.notBefore ?? 0, finishedAt + retryAfterMs);
    const observedState = decisionState(ctx, op.card, s, startedAt);
    decision = decide(op.card, observedState, obs, budget);
    const observed = observationPatch(op.card, observedState, obs);
    const patchedAt = ctx.clock.now();
    s.maybeApplied = observed.maybeApplied;
    // The budget is spent and no call ever left: the claim is given back with this receipt, in the same write.
    const neverSent = obs.kind === 'not-applied' && obs.neverSent === true;
    const calls = [...s.receipts, { kind, ...(neverSent && { neverSent }) }];
    const giveBack = givesBack(decision, observed.maybeApplied, calls, s.record);
    const receipt = attemptReceipt(ctx, op, s.receipts.at(-1), {
      kind,
      attemptId,
      startedAt,
      finishedAt,
      obs,
      decision: giveBack ? { action: 'give-back', why: `${decision.why}; nothing was ever sent` } : decision,
    });
    if (observed.patch !== null) {
      const state = giveBack ? 'not-sent' : observed.patch.state;
      s.record = await ctx.ledger.setState(s.lease.ref, { ...observed.patch, state, now: patchedAt, receipt });
      s.receipts.push(receipt);
    } else if (decision.action === 'complete' || decision.action === 'handoff') {
      pending = receipt; // written with the terminal state, next
    } else {
      await ctx.ledger.appendReceipt(s.lease.ref, receipt);
      s.receipts.push(receipt);
    }
  }
}

function stopIfAborted(ctx: RunnerContext, op: Operation, s: DriveState): void {
  if (!op.signal?.aborted) return;
  ctx.log('warn', 'aborted', `the caller aborted; state ${s.record.state} is kept for a later run or recover()`, op);
  throw op.signal.reason ?? new Error('aborted');
}

/** One provider call: `dispatched` written first (unless the claim already wrote it), the lease checked, then the request. */
async function send(ctx: RunnerContext, op: Operation, s: DriveState, attemptId: AttemptId): Promise<Outcome> {
  if (s.dispatchWritten) {
    // The claim itself durably created the operation as `dispatched` (fresh lease, attempt 1).
    s.dispatchWritten = false;
  } else {
    await renew(ctx, s.lease);
    // Durably `dispatched` BEFORE the provider is called: a crash from here on is found and reconciled.
    s.record = await ctx.ledger.markDispatched(s.lease.ref, ctx.clock.now());
  }
  stopIfAborted(ctx, op, s); // aborted during the write: `dispatched` is what a crash here leaves, looked up later
  checkOwnLease(ctx, s.lease, op);
  // The late-apply window runs from the moment the request goes out, not from the write before it; never earlier than
  // the bound a takeover set (an old owner may send until its lease end + the margin).
  s.lastDispatchedAt = Math.max(s.lastDispatchedAt ?? -Infinity, s.record.updatedAt, ctx.clock.now());
  s.runAttempts++;
  ctx.log(
    'info',
    'dispatch',
    () =>
      `provider call ${s.record.attemptCount} (run attempt ${s.runAttempts}) with key ${op.providerKey ?? '(none)'}`,
    op,
    { attempt: s.record.attemptCount },
  );
  return callProvider(ctx, op, s, attemptId);
}

async function lookUp(ctx: RunnerContext, op: Operation, s: DriveState, attemptId: AttemptId): Promise<LookupResult> {
  await renew(ctx, s.lease);
  if (s.record.state !== 'reconciling' && s.record.state !== 'in-progress')
    s.record = await ctx.ledger.setState(s.lease.ref, { state: 'reconciling', now: ctx.clock.now() });
  const result = await lookupProvider(ctx, op, s, attemptId);
  // Found under a key an earlier revision used: it may be that revision's effect, never the correction's to adopt.
  if (s.earlierEffectMayShow && result.kind === 'found' && result.outcome.kind !== 'rejected') {
    const { status, code, requestId, providerRef } = result.outcome;
    const reason = `found ${providerRef ?? 'an effect'} (${result.outcome.kind}), but it may be the earlier revision's: a call of it under this key was recorded not applied, which may only mean a re-send folds into it`;
    return defined<LookupResult>({ kind: 'cannot-tell', reason, status, code, requestId });
  }
  return result;
}

function ledgerFailure(ctx: RunnerContext, err: unknown, called: boolean, op: Operation): unknown {
  // Only a LedgerError after the request went out that does not say so yet is rewritten (driver errors are typed by
  // the context's ledger).
  if (!LedgerError.isInstance(err) || !called || err.providerMayHaveBeenCalled) return err;
  const text = `the ledger failed after the request was sent (the provider may have applied it): ${err.message}`;
  ctx.log('warn', 'ledger-failed-after-dispatch', text, op);
  const after = `run the same id again or recover() once the ledger works (both look up first)`;
  return new LedgerError(
    `${err.message} — after this call had sent the request: the provider may have applied it; ${after}`,
    { cause: err, providerMayHaveBeenCalled: true },
  );
}
