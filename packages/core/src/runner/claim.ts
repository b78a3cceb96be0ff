/** The claim and what its answer means: drive the operation, wait for its holder, answer from its end, or revise it. */
import {
  type ClaimInput,
  type ClaimResult,
  ClockSkewError,
  ConflictError,
  InvalidStateError,
  LeaseLostError,
  LedgerError,
  type OperationRecord,
  type Receipt,
  revisionKeySource,
} from '@retrysafe/contract';
import { leaseLive, TERMINAL_STATES } from '@retrysafe/contract/ledger';
import { changedParamsRevise } from '@retrysafe/contract/rules';
import { resumeSafeByKey } from '../handoff.js';
import { derivedProviderKey } from '../intake/adapter.js';
import {
  anotherIntent,
  changedParamPaths,
  type Operation,
  paramsConflict,
  storedOperation,
  withProviderKey,
} from '../intake/operation.js';
import {
  correctionRule,
  currentRevisionNumber,
  needsFreshKey,
  reissueCheck,
  SUPERSEDE_ACTION,
  supersedeCheck,
} from '../intake/supersede.js';
import type { RunnerContext } from './context.js';
import { drive } from './loop.js';
import { checkSealable, resolveReceipt } from './receipt-chain.js';
import { type Claimed, fenceOf, orRelease, releaseLease, takenOverLeaseEnd } from './state.js';
import { fromTerminal } from './terminal.js';
import type { RunResult } from './types.js';

/** `how`: a new operation born `dispatched`, a person's resume, or a new revision. */
export function claimInput(
  ctx: RunnerContext,
  op: Operation,
  now: number,
  how?: Pick<ClaimInput, 'dispatch' | 'resume' | 'supersede'>,
): ClaimInput {
  return {
    businessOperationId: op.id,
    provider: op.adapter.provider,
    account: op.adapter.account,
    operation: op.card.operation,
    intentFrom: op.intentFrom === 'caller' ? 'caller' : undefined,
    intentFingerprint: op.intentFingerprint,
    paramsFingerprint: op.paramsFingerprint,
    params: op.params,
    providerKey: op.providerKey,
    owner: ctx.owner,
    leaseMs: op.policy.leaseMs,
    now,
    dispatch: how?.dispatch,
    resume: how?.resume,
    supersede: how?.supersede,
  };
}

/** `waitUntil`: the deadline of the wait for another worker this claim is part of (waitForOther). */
export async function claimAndDrive(ctx: RunnerContext, op: Operation, waitUntil?: number): Promise<RunResult> {
  const { clock, ledger, log } = ctx;
  // A new operation's first decision is always "send now" (decide: claimed, nothing observed), so the claim
  // creates it already `dispatched`. An existing one is decided from its state.
  const dispatch = !op.signal?.aborted;
  const claimedAt = clock.now();
  const claim = await ledger
    .claim(claimInput(ctx, op, claimedAt, dispatch ? { dispatch: true } : undefined))
    .catch((err: unknown) => {
      if (ClockSkewError.isInstance(err)) log('warn', 'clock-skew', `claim refused: ${err.message}`, op);
      throw err;
    });
  if (claim.kind === 'gone') throw gone(op.id); // never: run() claims no `existing` row
  const record = claim.record;
  const joined = waitUntil !== undefined;
  switch (claim.kind) {
    case 'conflict':
      log('warn', 'conflict', `same id, different ${claim.field}: nothing sent`, op);
      if (claim.field === 'operation')
        throw new ConflictError({
          businessOperationId: op.id,
          field: 'operation',
          detail: `stored ${record.operation}`,
        });
      // Another intent under the caller's own id: which fields differ (never the values), and whether the stored
      // request may have applied, so the caller never redoes it under another id on a silent answer.
      throw anotherIntent(record, await ledger.receipts(op.id), op.card, changedParamPaths(op, record));
    case 'terminal': {
      // A corrected request for an operation none of whose attempts was applied, or the same request once the user
      // took the step the provider asked for: a new revision. A call that joined it in flight has not seen its end.
      const corrected = record.paramsFingerprint !== op.paramsFingerprint;
      // Other values of a set done or abandoned: its next revision, sent; a follow-up's values too are the ones wanted now.
      if (corrected && endedSet(record) && changedParamsRevise(op.card) && !joined) {
        checkSealable(ctx, record, 'send its next values');
        const receipts = await ledger.receipts(record.businessOperationId);
        return supersede(ctx, op, record, receipts, 'other values for its target, after it was done');
      }
      if (!repeats(op, record) && !joined && (corrected || record.handoff?.reason === 'rejected')) {
        const receipts = await ledger.receipts(record.businessOperationId);
        const check = corrected ? supersedeCheck : reissueCheck;
        if (check(record, receipts, correctionRule(op, ctx.clock.now())).ok) {
          const by = corrected ? 'a corrected request' : 'the same request, after the step the provider asked for';
          checkSealable(ctx, record, `send ${by}`);
          return supersede(ctx, op, record, receipts, by);
        }
      }
      return fromTerminal(ctx, record, op.paramsFingerprint, op);
    }
    case 'busy':
      if (record.paramsFingerprint === op.paramsFingerprint) {
        log('info', 'busy', `another worker (${record.leaseOwner}) holds the operation: waiting for its result`, op);
        return waitForOther(ctx, op, waitUntil);
      }
      // A set's other values are refused, not queued: waiting, they could land after a change that arrived later.
      throw paramsConflict(
        op,
        record,
        changedParamsRevise(op.card)
          ? 'another change of its target is in flight; nothing of this call was sent: call again once it ends'
          : 'another worker is performing this operation with other params',
      );
    case 'claimed': {
      const { takenOver } = claim;
      // A set's change a stopped worker left mid-way is finished first (its values again are harmless), then this one.
      const changed = record.paramsFingerprint !== op.paramsFingerprint;
      const finishFirst = changed && takenOver && changedParamsRevise(op.card);
      if (changed && !finishFirst) {
        await releaseLease(ctx, fenceOf(record), takenOverLeaseEnd(ctx, claim), op.policy.clockSkewMarginMs);
        throw paramsConflict(op, record, 'a re-send with the same key and other params would be a different request');
      }
      // The key that may already be at the provider is the one recorded: keep using it, and the params recorded
      // with it (the caller's equal them only as the card compares: the provider may take ' A-17' for another body).
      // Taken over, what the last owner left (its receipts, its stored params) may be refused: the lease goes back.
      const driven = takenOver
        ? await orRelease(ctx, claim, op.policy.clockSkewMarginMs, () => {
            checkSealable(ctx, record, 'take it over');
            return {
              ...storedOperation(ctx, op, record, op),
              signal: op.signal,
              scope: op.scope,
              startedAt: op.startedAt,
            };
          })
        : withProviderKey(op, record.providerKey);
      if (takenOver) log('info', 'takeover', `took over from state ${record.state} (fence ${record.fence})`, op);
      const dispatchWritten = dispatch && !takenOver && record.state === 'dispatched';
      const { previousLeaseExpiresAt } = claim;
      const ended = execute(ctx, driven, { record, claimedAt, takenOver, previousLeaseExpiresAt, dispatchWritten });
      return finishFirst ? ended.then(() => claimAndDrive(ctx, op, waitUntil)) : ended;
    }
  }
}

/** A set's change that ended for good (done, or abandoned by a person): other values are its next revision. */
const endedSet = (r: OperationRecord) => r.state === 'succeeded' || r.state === 'abandoned';

/** Whether the call repeats one that has not seen the end `record` rests at (RunInput's followUp). */
const repeats = ({ followUp }: Operation, record: OperationRecord) =>
  typeof followUp === 'function' ? record.handoff === null || followUp(record.handoff) : followUp;

/** A person's resume safe only because the key folds a re-send: claimed, then set `unknown` (operator.ts resume). */
const resumedByKey = (r: OperationRecord) =>
  r.state === 'claimed' &&
  r.resolution?.action === 'resume' &&
  resumeSafeByKey(r.handoff?.safeNextActions.find((a) => a.action === 'resume'));

/** Drives one claimed operation to its end; a lost lease turns into waiting for the worker that took it. */
export async function execute(ctx: RunnerContext, op: Operation, claimed: Claimed): Promise<RunResult> {
  let { record } = claimed;
  // Taken over between a resume's claim and its `unknown`: that step first, or the run would send from `claimed` as if
  // nothing could have applied (past the key's retention, a second effect).
  if (claimed.takenOver && resumedByKey(record))
    record = await ctx.ledger.setState(fenceOf(record), { state: 'unknown', now: ctx.clock.now() });
  // A brand-new claim (fence 1: every claim of a stored row raises it) has no receipts yet: no read.
  const receipts = record.fence === 1 ? [] : await ctx.ledger.receipts(op.id);
  try {
    return await drive(ctx, op, { ...claimed, record }, receipts);
  } catch (err) {
    if (!LeaseLostError.isInstance(err)) throw err;
    ctx.log('warn', 'lease-lost', 'another worker took the operation over: stopping, waiting for its result', op);
    return waitForOther(ctx, op);
  }
}

/** Waits (bounded) for the worker that holds the operation: its result, or the claim once its lease has run out. */
export async function waitForOther(ctx: RunnerContext, op: Operation, until?: number): Promise<RunResult> {
  const { clock, ledger, log } = ctx;
  const deadline = until ?? clock.now() + op.policy.waitForOtherMs;
  // Back from a claim the ledger (judging by its own clock) refused as busy: sleep, at the longest poll, before claiming again.
  let refused = until !== undefined;
  let delay = refused ? 500 : Math.min(20, op.policy.baseMs || 20);
  for (;;) {
    const rec = await ledger.get(op.id);
    if (!rec) throw new InvalidStateError(op.id, 'absent', 'the operation disappeared from the ledger');
    // Given back by the worker waited for (nothing sent): this call's claim opens it again.
    if (rec.state === 'not-sent') return claimAndDrive(ctx, op, deadline);
    if (TERMINAL_STATES.includes(rec.state)) return fromTerminal(ctx, rec, op.paramsFingerprint, op);
    // The caller gave up (an agent loop stopped): it holds nothing here, so it stops waiting now.
    if (op.signal?.aborted) throw op.signal.reason ?? new Error('aborted');
    const now = clock.now();
    if (!refused && !leaseLive(rec, now)) return claimAndDrive(ctx, op, deadline);
    refused = false;
    if (now >= deadline) {
      log('info', 'in-progress', `another worker still holds it after ${op.policy.waitForOtherMs} ms`, op);
      return heldElsewhere(rec, now);
    }
    await clock.sleep(Math.max(1, Math.min(delay, deadline - now)));
    delay = Math.min(delay * 2, 500);
  }
}

/** Another worker holds the operation: the caller checks back once its lease has run out. */
export function heldElsewhere(record: OperationRecord, now: number): RunResult {
  const { businessOperationId, statusRef, leaseExpiresAt } = record;
  const retryAfterMs = Math.max(0, (leaseExpiresAt ?? now) - now);
  return { status: 'in-progress', businessOperationId, statusRef, retryAfterMs };
}

/** A stored operation a claim no longer found (finished and pruned meanwhile): nothing written, nothing sent. */
const gone = (id: Operation['id']) =>
  new InvalidStateError(id, 'absent', 'the operation is no longer in the ledger (finished and pruned?): nothing sent');

/** The corrected request `op` as a new revision of a row none of whose attempts applied (key of its own if errors are stored). */
export async function supersede(
  ctx: RunnerContext,
  op: Operation,
  record: OperationRecord,
  receipts: readonly Receipt[],
  by: string,
): Promise<RunResult> {
  const { clock, log } = ctx;
  const done = endedSet(record);
  // A revision whose receipt was lost (appended after its claim, restartClaimed) still counts: its resolution names it.
  const revision = Math.max(currentRevisionNumber(receipts), record.resolution?.revision ?? 1) + 1;
  // A done revision never reuses a key that holds the earlier values' result.
  const freshKey = done ? record.providerKey !== null : needsFreshKey(op.card, receipts);
  const providerKey = freshKey
    ? derivedProviderKey(op.adapter, op.opName, op.card, revisionKeySource(record.businessOperationId, revision))
    : record.providerKey;
  const revised = withProviderKey(op, providerKey);
  const paths = changedParamPaths(op, record);
  const before = done
    ? `which ended ${record.state} (the card makes other values of a set its next revision)`
    : 'whose every attempt was known not applied';
  const key = freshKey
    ? `new provider key (the provider may have stored ${done ? 'the earlier result' : 'the rejection'} under the old one)`
    : done
      ? 'no provider key'
      : 'same provider key (nothing rejected is stored under it, and the card says a call that did land under it refuses the correction or takes it over the first)';
  const why = `revision ${revision} (${by}) replaces revision ${revision - 1}, ${before}; changed: ${paths.join(', ') || '(none)'}; ${key}`;
  const claimedAt = clock.now();
  const supersede = { fence: record.fence, revision, ...(done && { done: true as const }) };
  const restartAs = { action: SUPERSEDE_ACTION, reason: why, claimedAt, supersede };
  const { claim, restart } = await claimAgain(ctx, revised, record, receipts.at(-1), restartAs);
  if (claim.kind === 'claimed' && claim.takenOver) {
    // Not a revision: another's run of it (a revision, a resume) stopped mid-flight since the check, and this claim
    // took that run over, its params and key on record. Given back; answered as a claim that found it busy.
    await releaseLease(ctx, fenceOf(claim.record), takenOverLeaseEnd(ctx, claim), op.policy.clockSkewMarginMs);
  }
  if (claim.kind !== 'claimed' || claim.takenOver) {
    // A done set another call changed since it was read: this change goes next, from what is there now.
    if (done && claim.kind !== 'conflict') return claimAndDrive(ctx, op);
    // Someone else changed it between the check and the claim: answer from what is there now.
    if (claim.kind === 'terminal') return fromTerminal(ctx, claim.record, op.paramsFingerprint, op);
    // The same corrected request, made by another call a moment earlier: wait for its result, as for any call in flight.
    if (claim.kind !== 'conflict' && claim.record.paramsFingerprint === op.paramsFingerprint)
      return waitForOther(ctx, op);
    throw paramsConflict(
      op,
      claim.record,
      `the operation changed while a new revision was being written (${claim.record.state})`,
    );
  }
  log('info', 'supersede', why, op);
  return restartClaimed(ctx, revised, { record: claim.record, claimedAt }, restart);
}

/** Claims a stored row again (a resume, a revision) with its `resolve` receipt in the claim's own write while the chain
 * is the one read; only the stored row (`existing`): one pruned since it was read is not created again. */
export async function claimAgain(
  ctx: RunnerContext,
  op: Operation,
  record: OperationRecord,
  last: Receipt | undefined,
  why: { readonly action: string; readonly reason: string; readonly claimedAt: number } & Pick<
    ClaimInput,
    'resume' | 'supersede'
  >,
) {
  const receipt = resolveReceipt(ctx, record, last, op, { action: why.action, reason: op.redactor.text(why.reason) });
  const written = (last?.seq ?? 0) === record.receiptChain.length;
  const input = { ...claimInput(ctx, op, why.claimedAt, why), existing: true } as const;
  const claim = await ctx.ledger
    .claim(written ? { ...input, receipt } : input)
    .catch((err: unknown) =>
      written && LedgerError.isInstance(err) ? movedOn(ctx, record, err) : Promise.reject(err),
    );
  if (claim.kind === 'gone') throw gone(op.id);
  return { claim, restart: { receipt, written } };
}

/** The receipt, chained to what was read, was refused because the row moved on since (another's run of it): its answer. */
async function movedOn(ctx: RunnerContext, read: OperationRecord, err: unknown): Promise<ClaimResult> {
  const record = await ctx.ledger.get(read.businessOperationId);
  if (record === null || record.fence === read.fence) throw err;
  return { kind: TERMINAL_STATES.includes(record.state) ? 'terminal' : 'busy', record };
}

/** Drives a stored operation claimed again; its receipt is appended first when the chain had moved on since the read. */
export async function restartClaimed(
  ctx: RunnerContext,
  op: Operation,
  { record, claimedAt }: Pick<Claimed, 'record' | 'claimedAt'>,
  restart: { readonly receipt: Receipt; readonly written: boolean },
): Promise<RunResult> {
  if (!restart.written) await ctx.ledger.appendReceipt(fenceOf(record), restart.receipt);
  return execute(ctx, op, { record, claimedAt, takenOver: false, dispatchWritten: false });
}
