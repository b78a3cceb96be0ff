/** What the attempt loop knows of one claimed operation: its mutable state, owned by loop.ts. */
import type { ClaimResult, Fenced, OperationRecord, Receipt, RetrySafetyCard } from '@retrysafe/contract';
import { type DecisionState, MAYBE_APPLIED_STATES } from '../decide.js';
import type { Operation } from '../intake/operation.js';
import {
  earlierEffectMayShow,
  keyMayBeForgotten,
  keyRevisionNumber,
  notAppliedKeyGone,
  notAppliedMayHaveLanded,
} from '../intake/supersede.js';
import type { Lease, RunnerContext } from './context.js';

/** What the state rules read of the runner (the explorer runs them too). */
export interface StateContext {
  readonly clock: Pick<RunnerContext['clock'], 'now'>;
  readonly ledger: Pick<RunnerContext['ledger'], 'capabilities'>;
}

/** A ledger gets no params it did not ask for. */
export const fenceOf = ({ businessOperationId, fence }: OperationRecord): Fenced => ({ businessOperationId, fence });

export interface Claimed
  extends Pick<Extract<ClaimResult, { kind: 'claimed' }>, 'record' | 'takenOver' | 'previousLeaseExpiresAt'> {
  /** When this worker asked for the claim (its lease runs from there, on its own clock). */
  readonly claimedAt: number;
  /** The claim wrote `dispatched` for the first send, not made yet: decisions see a fresh claim until then. */
  readonly dispatchWritten: boolean;
}

export interface DriveState {
  record: OperationRecord;
  readonly receipts: Receipt[];
  readonly lease: Lease;
  dispatchWritten: boolean;
  // These, as in DecisionState:
  lastDispatchedAt: number | null;
  maybeApplied: boolean;
  notBefore: number | undefined;
  runAttempts: number;
  windowStartedAt: number | null;
  polls: number;
  readonly keyRevision: number;
  readonly earlierEffectMayShow: boolean;
  /** Taken over from a worker that died after dispatching: an inconclusive end is a crash-recovery handoff. */
  readonly recovering: boolean;
  /** Taken over while maybe applied: when the stopped owner's lease ended on the ledger's clock. */
  readonly takenOverLeaseEnd: number | null;
  readonly startedAt: number;
}

/** Taken over from an owner that may still be sending: where workers' clocks judge leases, the owner's may lag the
 * taker's by the margin, so it may send until its lease end + the margin. A released lease (null) has no owner left
 * sending; a ledger that does not say: this claim's time, later. Null otherwise. */
export function takenOverLeaseEnd(
  ctx: StateContext,
  c: Pick<Claimed, 'record' | 'takenOver' | 'previousLeaseExpiresAt'>,
): number | null {
  const skewed = c.takenOver && MAYBE_APPLIED_STATES.includes(c.record.state);
  if (!skewed || ctx.ledger.capabilities?.sharedLeaseClock === true) return null;
  return c.previousLeaseExpiresAt === undefined ? c.record.updatedAt : c.previousLeaseExpiresAt;
}

/** Whether an owner it was taken over from may still be sending (`leaseEnd` + the margin not passed): the lease is then
 * not given back, as a release erases that lease end and the next claim would trust a "not found" at once. */
export const oldOwnerMaySend = (leaseEnd: number | null, now: number, marginMs: number) =>
  leaseEnd !== null && now < leaseEnd + marginMs;

/** Unless an old owner may still be sending: then it lapses. */
export async function releaseLease(ctx: RunnerContext, ref: Fenced, leaseEnd: number | null, marginMs: number) {
  if (oldOwnerMaySend(leaseEnd, ctx.clock.now(), marginMs)) return;
  await ctx.ledger.release(ref).catch(() => undefined);
}

/** `fn` on a claim this worker holds; should it throw, the lease goes back first. */
export async function orRelease<T>(
  ctx: RunnerContext,
  claim: Pick<Claimed, 'record' | 'takenOver' | 'previousLeaseExpiresAt'>,
  marginMs: number,
  fn: () => T,
): Promise<T> {
  try {
    return fn();
  } catch (err) {
    await releaseLease(ctx, fenceOf(claim.record), takenOverLeaseEnd(ctx, claim), marginMs);
    throw err;
  }
}

/** `receipts`: the operation's receipts written before this claim (the state owns the array from here). */
export function startState(
  ctx: StateContext,
  op: Pick<Operation, 'card' | 'policy'> & Partial<Pick<Operation, 'startedAt'>>,
  c: Claimed,
  receipts: Receipt[],
): DriveState {
  const { record } = c;
  const now = ctx.clock.now();
  const margin = op.policy.clockSkewMarginMs;
  const earlierEffect = earlierEffectMayShow(record, receipts);
  // Taken over after a call recorded not applied under a key the provider may since have forgotten (the last call, or a
  // revision's before it superseded under the key): it may have landed.
  const keyGone =
    notAppliedKeyGone(op.card, record, now, margin) ||
    (earlierEffect && keyMayBeForgotten(op.card, record.firstDispatchedAt, now, margin));
  const maybeApplied = MAYBE_APPLIED_STATES.includes(record.state) || (c.takenOver && keyGone);
  // A "not found" proves nothing before the old owner's lease end + the margin (decide): the lookup window opens then.
  const leaseEnd = takenOverLeaseEnd(ctx, c);
  const windowOpensAt = leaseEnd === null ? null : leaseEnd + margin;
  // Taken over, the old owner stopped sending by its lease end (+ the margin: another clock may have written it).
  const stopped =
    c.takenOver && typeof c.previousLeaseExpiresAt === 'number' ? c.previousLeaseExpiresAt + margin : Infinity;
  return {
    record,
    receipts,
    // On this worker's clock from before it asked: never later than the ledger's view, whatever the clock offset.
    lease: {
      ref: fenceOf(record),
      leaseMs: op.policy.leaseMs,
      expiresAt: Math.min(record.leaseExpiresAt ?? 0, c.claimedAt + op.policy.leaseMs),
    },
    dispatchWritten: c.dispatchWritten,
    // An upper bound on the last dispatch, on this clock: a stopped owner's lease end + the margin where it may send
    // until then (checkOwnLease), else the earlier of that and this claim's write (record.updatedAt).
    lastDispatchedAt:
      c.dispatchWritten || record.firstDispatchedAt === null
        ? null
        : Math.max(record.firstDispatchedAt, windowOpensAt ?? Math.min(record.updatedAt, stopped)),
    maybeApplied: !c.dispatchWritten && maybeApplied,
    notBefore: undefined,
    runAttempts: 0,
    windowStartedAt: windowOpensAt !== null && windowOpensAt > now ? windowOpensAt : null,
    polls: 0,
    keyRevision: keyRevisionNumber(receipts),
    earlierEffectMayShow: earlierEffect,
    recovering: c.takenOver && maybeApplied,
    takenOverLeaseEnd: leaseEnd,
    startedAt: op.startedAt ?? now,
  };
}

export function decisionState(
  ctx: StateContext,
  card: RetrySafetyCard,
  s: Omit<DriveState, 'lease'>,
  observedAt?: number,
): DecisionState {
  return {
    keyMayHoldEarlier: notAppliedMayHaveLanded(card, s.record.providerKey, s.receipts),
    observedAt,
    // Dispatched by the claim but not sent yet: still the fresh claim it was.
    ledgerState: s.dispatchWritten ? 'claimed' : s.record.state,
    now: ctx.clock.now(),
    firstDispatchedAt: s.dispatchWritten ? null : s.record.firstDispatchedAt,
    lastDispatchedAt: s.lastDispatchedAt,
    maybeApplied: s.maybeApplied,
    notBefore: s.notBefore,
    runAttempts: s.runAttempts,
    runStartedAt: s.startedAt,
    windowStartedAt: s.windowStartedAt,
    polls: s.polls,
  };
}
