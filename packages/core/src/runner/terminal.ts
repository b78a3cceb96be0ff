/** Terminal writes: a result recorded, an operation handed to a person, or an answer from what another worker finished. */
import { InvalidStateError, RetryExhaustedError, completionRecoverable, type OperationRecord } from '@retrysafe/contract';
import { resendSafety } from '@retrysafe/contract';
import type { Decision, Observation } from '../decide.js';
import { buildPacket } from '../handoff.js';
import { supersedeCheck } from '../intake/index.js';
import type { Op, RunnerContext } from './context.js';
import { errText } from './guards.js';
import { paramsConflict } from './intake.js';
import { appendReceipt, recorded, writeState } from './receipt-chain.js';
import type { RunResult } from './types.js';

/**
 * The operation succeeded: its result (and the attempt's pending receipt) written, then the answer. Not
 * an async function: one write and one continuation, so the optimised code carries no coroutine.
 * Whatever throws comes back as a rejection, as from an async function.
 */
export function complete(ctx: RunnerContext, op: Op, obs: Observation, adopted: boolean): Promise<RunResult> {
  try {
    const src = obs === null ? null : obs.kind === 'found' ? obs.outcome : obs;
    let result: unknown = op.record.result;
    let providerRef: string | null = op.record.providerRef;
    if (src && (src.kind === 'succeeded' || src.kind === 'replayed')) {
      result = src.result ?? null;
      providerRef = src.providerRef ?? providerRef;
    }
    const pending = op.pendingReceipt;
    op.pendingReceipt = null;
    let written: Promise<void> | null = null;
    if (op.record.state !== 'succeeded') {
      // The attempt's receipt (if pending) lands in the same transaction as the result it led to. Deferrable
      // where the card lets a lost write be looked up again (completionRecoverable): the claim before the
      // send was durable, and it is what a crash here would leave behind anyway.
      const durability = completionRecoverable(op.card) ? 'deferrable' : undefined;
      written = writeState(ctx, op, { state: 'succeeded', lastOutcome: obs === null ? op.record.lastOutcome : obs.kind, result, providerRef, now: ctx.clock.now(), durability }, pending);
    } else if (pending !== null) {
      written = appendReceipt(ctx, op, pending);
    }
    if (written === null) return Promise.resolve(completed(ctx, op, result, providerRef, adopted));
    return written.then(() => completed(ctx, op, result, providerRef, adopted));
  } catch (err) {
    return Promise.reject(err);
  }
}

/** The answer once the result is written. */
function completed(ctx: RunnerContext, op: Op, result: unknown, providerRef: string | null, adopted: boolean): RunResult {
  const attempts = op.record.attemptCount;
  ctx.log('info', 'done', () => `succeeded${adopted ? ' (adopted)' : ''} after ${attempts} provider call(s)${providerRef ? `, ref ${providerRef}` : ''}`, op, { attempt: attempts, adopted });
  return { status: 'done', businessOperationId: op.id, result, providerRef, adopted, attempts: op.record.attemptCount, receipts: [...op.receipts] };
}

export async function handOff(ctx: RunnerContext, op: Op, decided: Extract<Decision, { action: 'handoff' }>): Promise<RunResult> {
  const { clock, ledger, log, sink } = ctx;
  const now = clock.now();
  const decision =
    op.recovering && decided.reason === 'unknown-no-safe-resend'
      ? { ...decided, reason: 'crash-recovery-inconclusive' as const, why: `a worker stopped after dispatching; ${decided.why}` }
      : decided;
  const pending = op.pendingReceipt;
  op.pendingReceipt = null;
  // The attempt's receipt (if pending) is part of the packet and lands in the handoff's transaction.
  const receipts = pending !== null ? [...op.receipts, pending] : [...op.receipts];
  const error = decision.reason === 'retry-exhausted' ? new RetryExhaustedError(op.redactor.text(decision.why), receipts.filter((r) => r.kind === 'dispatch' || r.kind === 'resend').map((r) => r.attemptId)) : undefined;
  const explanation = op.redactor.text(error ? error.message : decision.why);
  const safety = resendSafety(op.card, op.record.firstDispatchedAt, now, op.policy.clockSkewMarginMs);
  // A key that holds a stored error only replays it: a resume cannot succeed until the key expires.
  const lastSend = [...receipts].reverse().find((r) => r.kind === 'dispatch' || r.kind === 'resend');
  const replaysError = op.card.storedResult.includesErrors.value === true && lastSend?.outcome === 'unknown' && typeof lastSend.status === 'number' && lastSend.status >= 500;
  const packet = buildPacket({ record: op.record, reason: decision.reason, explanation, receipts, resendSafe: safety.safe && !replaysError, ...(replaysError && safety.safe ? { resumeNote: `a resume re-sends with the same key, which holds the provider's stored ${lastSend.status}: it would only replay that error until the key expires (${String(op.card.retention.minimum.value)} after the first dispatch)` } : {}), now });
  op.record = pending !== null ? await ledger.handOff(op.ref, packet, now, pending) : await ledger.handOff(op.ref, packet, now);
  if (pending !== null) recorded(op, pending);
  log('warn', 'handoff', `${decision.reason}: ${explanation}`, op, { handoffReason: decision.reason, attempt: op.record.attemptCount });
  if (sink) {
    try {
      await sink.send(packet);
    } catch (err) {
      log('warn', 'handoff-sink-failed', `the packet is in the ledger; the sink failed: ${errText(err)}`, op);
    }
  }
  return { status: 'handed-off', businessOperationId: op.id, packet, attempts: op.record.attemptCount, receipts, ...(error ? { error } : {}) };
}

/** The answer for an operation already at rest (this worker's earlier run, or another's). */
export async function fromTerminal(ctx: RunnerContext, record: OperationRecord, paramsFingerprint: string | null, base: Pick<Op, 'id' | 'card' | 'redactor' | 'comparison' | 'params'>): Promise<RunResult> {
  const { ledger, log } = ctx;
  // Other params under the same intent are a conflict even once it succeeded: adopting would tell the
  // caller that *their* request (say, another amount for the same order) was performed.
  if (paramsFingerprint !== null && record.paramsFingerprint !== paramsFingerprint) {
    const why = record.state === 'succeeded' ? 'it succeeded' : supersedeCheck(record, await ledger.receipts(record.businessOperationId));
    const detail = typeof why === 'string' || why.ok ? `the operation is ${record.state} with other params` : `the operation is ${record.state} with other params and cannot be superseded: ${why.why}`;
    throw paramsConflict(base, record, detail);
  }
  if (record.state === 'succeeded') {
    log('info', 'adopt', 'already succeeded: adopting the stored result, nothing sent', base);
    return {
      status: 'done',
      businessOperationId: record.businessOperationId,
      result: record.result,
      providerRef: record.providerRef,
      adopted: true,
      attempts: record.attemptCount,
      receipts: await ledger.receipts(record.businessOperationId),
    };
  }
  if (!record.handoff) throw new InvalidStateError(record.businessOperationId, record.state, 'terminal without a handoff packet');
  return { status: 'handed-off', businessOperationId: record.businessOperationId, packet: record.handoff, attempts: record.attemptCount, receipts: await ledger.receipts(record.businessOperationId) };
}
