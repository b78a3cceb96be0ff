/**
 * Claim and coordination: the claim and what its answer means (drive it, wait for the worker that holds
 * it, answer from its terminal state, or write a new revision), and the run of one claimed operation.
 */
import { ClockSkewError, ConflictError, InvalidStateError, LeaseLostError, TERMINAL_STATES, newAttemptId, type ClaimInput, type Fenced, type OperationRecord, type OperationState, type Receipt } from '@retrysafe/contract';
import { decide } from '../decide.js';
import { needsFreshKey, nextRevision, revisionKeySource, supersedeCheck, SUPERSEDE_ACTION } from '../intake/index.js';
import { leaseLive } from '@retrysafe/contract';
import type { Mutable, OpBase, RunnerContext } from './context.js';
import { paramsConflict, rebased } from './intake.js';
import { drive, mayHaveCalled, startOp, stateOf } from './loop.js';
import { resolveReceipt } from './receipt-chain.js';
import { fromTerminal } from './terminal.js';
import type { RunResult } from './types.js';

/** A new call's claim as of `now` (a plain literal, not a spread of the intake's: the clean path's shape). */
function claimAt(c: ClaimInput, now: number, dispatch: boolean): ClaimInput {
  const at: Mutable<ClaimInput> = {
    businessOperationId: c.businessOperationId,
    provider: c.provider,
    operation: c.operation,
    intentFingerprint: c.intentFingerprint,
    paramsFingerprint: c.paramsFingerprint,
    params: c.params,
    providerKey: c.providerKey,
    owner: c.owner,
    leaseMs: c.leaseMs,
    now,
  };
  // Only when asked: a ledger without the capability never sees the field.
  if (dispatch) at.dispatch = true;
  return at;
}

const isTerminalState = (s: OperationState) => TERMINAL_STATES.includes(s);

export async function claimAndDrive(ctx: RunnerContext, base: OpBase, claimInput: ClaimInput, paramsFingerprint: string): Promise<RunResult> {
  const { clock, ledger, log } = ctx;
  // A new operation's first decision is always "send now" (decide: claimed, nothing observed), so the
  // claim may create it already `dispatched`. An existing one is claimed as before and decided from its state.
  const dispatch = ctx.claimDispatches && !base.signal?.aborted;
  const claimed = claimAt(claimInput, clock.now(), dispatch);
  const claim = await ledger.claim(claimed).catch((err: unknown) => {
    if (ClockSkewError.isInstance(err)) log('warn', 'clock-skew', `claim refused: ${err.message}`, base);
    throw err;
  });
  switch (claim.kind) {
    case 'conflict':
      log('warn', 'conflict', `same id, different ${claim.field}: nothing sent`, { ...base });
      throw new ConflictError(base.id, claim.field, `stored ${claim.field === 'intent' ? claim.record.intentFingerprint : claim.record.operation}`);
    case 'terminal':
      if (claim.record.paramsFingerprint !== paramsFingerprint) {
        // A corrected request for an operation none of whose attempts was applied: a new revision.
        const receipts = await ledger.receipts(claim.record.businessOperationId);
        if (supersedeCheck(claim.record, receipts).ok) return supersede(ctx, base, claimInput, claim.record, receipts, 'a corrected request');
      }
      return fromTerminal(ctx, claim.record, paramsFingerprint, base);
    case 'busy':
      if (claim.record.paramsFingerprint !== paramsFingerprint) throw paramsConflict(base, claim.record, 'another worker is performing this operation with other params');
      log('info', 'busy', `another worker (${claim.record.leaseOwner}) holds the operation: waiting for its result`, base);
      return waitForOther(ctx, base, claimInput, paramsFingerprint);
    case 'claimed': {
      const record = claim.record;
      const ref: Fenced = { businessOperationId: record.businessOperationId, fence: record.fence };
      if (record.paramsFingerprint !== paramsFingerprint) {
        await ledger.release(ref).catch(() => undefined);
        throw paramsConflict(base, record, 'a re-send with the same key and other params would be a different request');
      }
      if (claim.takenOver) log('info', 'takeover', `took over from state ${record.state} (fence ${record.fence})`, base);
      // The key that may already be at the provider is the one recorded: keep using it.
      const dispatchWritten = dispatch && !claim.takenOver && record.state === 'dispatched';
      return execute(ctx, rebased(base, record.providerKey, base.scope), record, ref, paramsFingerprint, claimed, claim.takenOver, dispatchWritten);
    }
  }
}

/** Drives one claimed operation to its end; a lost lease turns into waiting for the worker that took it. */
export async function execute(
  ctx: RunnerContext,
  base: OpBase,
  record: OperationRecord,
  ref: Fenced,
  paramsFingerprint: string,
  claimInput: ClaimInput,
  takenOver: boolean,
  dispatchWritten = false,
): Promise<RunResult> {
  // A brand-new claim has no receipts yet: skip the read.
  const prior = dispatchWritten || (record.fence === 1 && record.attemptCount === 0 && !takenOver) ? [] : await ctx.ledger.receipts(base.id);
  const op = startOp(ctx, base, record, ref, prior, claimInput, takenOver, dispatchWritten);
  try {
    const first = decide(op.card, stateOf(ctx, op), null, { policy: op.policy, random: ctx.random });
    return await drive(ctx, op, first);
  } catch (err) {
    if (LeaseLostError.isInstance(err)) {
      ctx.log('warn', 'lease-lost', 'another worker took the operation over: stopping, waiting for its result', op);
      return waitForOther(ctx, base, claimInput, paramsFingerprint);
    }
    await ctx.ledger.release(op.ref).catch(() => undefined);
    throw mayHaveCalled(ctx, err, op.runAttempts > 0, op);
  }
}

export async function waitForOther(ctx: RunnerContext, base: OpBase, claimInput: ClaimInput, paramsFingerprint: string): Promise<RunResult> {
  const { clock, ledger, log } = ctx;
  const policy = base.policy;
  const deadline = clock.now() + policy.waitForOtherMs;
  let delay = Math.min(20, policy.baseMs || 20);
  for (;;) {
    const rec = await ledger.get(base.id);
    if (!rec) throw new InvalidStateError(base.id, 'absent', 'the operation disappeared from the ledger');
    if (isTerminalState(rec.state)) return fromTerminal(ctx, rec, paramsFingerprint, base);
    const now = clock.now();
    if (!leaseLive(rec, now)) return claimAndDrive(ctx, base, claimInput, paramsFingerprint);
    if (now >= deadline) {
      log('info', 'in-progress', `another worker still holds it after ${policy.waitForOtherMs} ms`, base);
      return { status: 'in-progress', businessOperationId: base.id, statusRef: rec.statusRef, retryAfterMs: Math.max(0, (rec.leaseExpiresAt ?? now) - now) };
    }
    await clock.sleep(Math.max(1, Math.min(delay, deadline - now)));
    delay = Math.min(delay * 2, 500);
  }
}

/**
 * Re-opens an operation whose every attempt is known not applied (supersedeCheck) with the corrected
 * request in `base`/`claimInput`: a new revision in the same ledger row, with a `supersede` receipt,
 * and a provider key of its own unless the card says the provider stores no errors.
 */
export async function supersede(ctx: RunnerContext, base: OpBase, claimInput: ClaimInput, record: OperationRecord, receipts: readonly Receipt[], by: string): Promise<RunResult> {
  const { clock, ledger, log } = ctx;
  const revision = nextRevision(receipts);
  const freshKey = needsFreshKey(base.card);
  const providerKey = freshKey ? base.adapter.deriveProviderKey(base.opName, revisionKeySource(record.businessOperationId, revision)) : record.providerKey;
  const input: ClaimInput = { ...claimInput, providerKey, now: clock.now(), supersede: { fence: record.fence, revision } };
  const claim = await ledger.claim(input);
  if (claim.kind !== 'claimed') {
    // Someone else changed it between the check and the claim: answer from what is there now.
    if (claim.kind === 'terminal') return fromTerminal(ctx, claim.record, claimInput.paramsFingerprint, base);
    throw paramsConflict(base, claim.record, `the operation changed while a new revision was being written (${claim.record.state})`);
  }
  const ref: Fenced = { businessOperationId: record.businessOperationId, fence: claim.record.fence };
  const paths = base.comparison.differences(record.params, base.params);
  const why = `revision ${revision} (${by}) replaces revision ${revision - 1}, whose every attempt was known not applied; changed: ${paths.join(', ') || '(none)'}; ${freshKey ? 'new provider key (the provider may have stored the rejection under the old one)' : 'same provider key (the provider stores no errors)'}`;
  const receipt = resolveReceipt(
    {
      record,
      last: receipts[receipts.length - 1],
      runId: base.runId,
      attemptId: newAttemptId(),
      action: SUPERSEDE_ACTION,
      reason: base.redactor.text(why),
      providerKey,
      // The redacted params' fingerprint (preclaim), as every receipt of this request carries it.
      requestFingerprint: base.requestFingerprint,
      now: clock.now(),
    },
    ctx.options.receiptKey,
  );
  await ledger.appendReceipt(ref, receipt);
  log('info', 'supersede', why, base);
  return execute(ctx, rebased(base, providerKey, base.scope), claim.record, ref, claimInput.paramsFingerprint, { ...claimInput, providerKey }, false);
}
