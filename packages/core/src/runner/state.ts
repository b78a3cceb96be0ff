/** What the attempt loop knows of one claimed operation: its mutable state, owned by loop.ts. */
import type { ClaimResult, Fenced, OperationRecord, Receipt, StatePatch } from '@retrysafe/contract';
import { type DecisionState, MAYBE_APPLIED_STATES } from '../decide.js';
import type { Operation } from '../intake/operation.js';
import { currentRevisionNumber, needsFreshKey } from '../intake/supersede.js';
import type { Lease, RunnerContext } from './context.js';

/** What a fenced write names: the id and the fence, not the record (a ledger gets no params it did not ask for). */
export const fenceOf = (record: OperationRecord): Fenced => ({
  businessOperationId: record.businessOperationId,
  fence: record.fence,
});

/** The ledger's claim (`takenOver`: from a worker whose lease expired), as this worker holds it. */
export interface Claimed
  extends Pick<Extract<ClaimResult, { kind: 'claimed' }>, 'record' | 'takenOver' | 'previousLeaseExpiresAt'> {
  /** When this worker asked for the claim (its lease runs from there, on its own clock). */
  readonly claimedAt: number;
  /** The claim wrote `dispatched` for the first send, not made yet: decisions see a fresh claim until then. */
  readonly dispatchWritten: boolean;
}

export interface DriveState {
  record: OperationRecord;
  /** The operation's receipts as written (earlier ones, then this worker's own). */
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
  /** The revision the provider key was derived for (1 unless superseded with a fresh key). */
  readonly keyRevision: number;
  /** Taken over from a worker that died after dispatching: an inconclusive end is a crash-recovery handoff. */
  readonly recovering: boolean;
  /** Taken over while maybe applied: when the stopped owner's lease ended on the ledger's clock. */
  readonly takenOverLeaseEnd: number | null;
  readonly startedAt: number;
}

/** `receipts`: the operation's receipts written before this claim (the state owns the array from here). */
export function startState(ctx: RunnerContext, op: Operation, c: Claimed, receipts: Receipt[]): DriveState {
  const { record } = c;
  const maybeApplied = MAYBE_APPLIED_STATES.includes(record.state);
  // Taken over from an owner that may still be sending: where workers' clocks judge leases, the owner's may
  // lag the taker's by the margin. A "not found" proves nothing before that (decide), so the lookup window opens
  // then. A released lease (null) has no owner left sending; a ledger that does not say: this claim's time, later.
  const skewed = c.takenOver && maybeApplied && ctx.ledger.capabilities?.sharedLeaseClock !== true;
  const leaseEnd = c.previousLeaseExpiresAt === undefined ? record.updatedAt : c.previousLeaseExpiresAt;
  const takenOverLeaseEnd = skewed ? leaseEnd : null;
  const now = ctx.clock.now();
  const windowOpensAt = takenOverLeaseEnd === null ? null : takenOverLeaseEnd + op.policy.clockSkewMarginMs;
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
    // Taken over: the dead owner could send until its lease ended (never after: checkOwnLease), and this
    // claim's write (record.updatedAt) happened once that lease had run out, so it bounds the dead owner's
    // last dispatch from above. Otherwise: the last write.
    lastDispatchedAt:
      c.dispatchWritten || record.firstDispatchedAt === null
        ? null
        : Math.max(record.firstDispatchedAt, record.updatedAt),
    maybeApplied: !c.dispatchWritten && maybeApplied,
    notBefore: undefined,
    runAttempts: 0,
    windowStartedAt: windowOpensAt !== null && windowOpensAt > now ? windowOpensAt : null,
    polls: 0,
    keyRevision: needsFreshKey(op.card) ? currentRevisionNumber(receipts) : 1,
    recovering: c.takenOver && maybeApplied,
    takenOverLeaseEnd,
    startedAt: now,
  };
}

export function decisionState(ctx: RunnerContext, s: DriveState, observedAt?: number): DecisionState {
  return {
    observedAt,
    // Dispatched by the claim but not sent yet: still the fresh claim it was.
    ledgerState: s.dispatchWritten ? 'claimed' : s.record.state,
    now: ctx.clock.now(),
    firstDispatchedAt: s.dispatchWritten ? null : s.record.firstDispatchedAt,
    lastDispatchedAt: s.lastDispatchedAt,
    takenOverLeaseEnd: s.takenOverLeaseEnd,
    maybeApplied: s.maybeApplied,
    notBefore: s.notBefore,
    runAttempts: s.runAttempts,
    runStartedAt: s.startedAt,
    windowStartedAt: s.windowStartedAt,
    polls: s.polls,
  };
}

/** A state and the receipt that led to it: one transaction when the ledger can, else state then receipt. */
export async function writeWith(ctx: RunnerContext, ref: DriveState['lease']['ref'], patch: StatePatch) {
  if (patch.receipt === undefined || ctx.receiptWithState) return ctx.ledger.setState(ref, patch);
  const { receipt, ...state } = patch;
  const record = await ctx.ledger.setState(ref, state);
  await ctx.ledger.appendReceipt(ref, receipt);
  return record;
}
