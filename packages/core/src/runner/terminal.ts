/** Terminal writes: a result recorded, an operation handed to a person, or an answer from what another worker finished. */
import { InvalidStateError, type OperationRecord, type Receipt, RetryExhaustedError } from '@retrysafe/contract';
import { stateWords } from '@retrysafe/contract/ledger';
import { completionRecoverable, resendSafety } from '@retrysafe/contract/rules';
import { type Stop, stopText, untilStopped } from '../clock.js';
import { answerOf, type Decision, type Observation } from '../decide.js';
import { buildPacket, waitsForUser } from '../handoff.js';
import { type Operation, paramsConflict } from '../intake/operation.js';
import { correctionRule, isSend, supersedeCheck } from '../intake/supersede.js';
import { errText, type LogSubject, type RunnerContext } from './context.js';
import type { DriveState } from './state.js';
import type { RunResult } from './types.js';

export async function complete(
  ctx: RunnerContext,
  op: Operation,
  s: Readonly<DriveState>,
  end: { readonly obs: Observation; readonly adopted: boolean; readonly pending: Receipt | null },
): Promise<RunResult> {
  const { obs, adopted, pending } = end;
  const src = answerOf(obs);
  let result: unknown = s.record.result;
  let providerRef = s.record.providerRef;
  if (src && (src.kind === 'succeeded' || src.kind === 'replayed')) {
    result = src.result ?? null;
    // Read out of the result, a reference may echo a sensitive param (an order named after its customer): it is kept,
    // printed and answered again as its receipt has it. The result itself stays whole, for the calls that adopt it.
    providerRef = src.providerRef === undefined ? providerRef : op.redactor.text(src.providerRef);
  }
  let record = s.record;
  if (pending !== null) s.receipts.push(pending);
  if (record.state !== 'succeeded') {
    // Deferrable where the card lets a lost write be looked up again (completionRecoverable): the claim
    // before the send was durable, and it is what a crash here would leave behind anyway.
    record = await ctx.ledger.setState(s.lease.ref, {
      state: 'succeeded',
      lastOutcome: obs === null ? record.lastOutcome : obs.kind,
      result,
      providerRef,
      now: ctx.clock.now(),
      receipt: pending ?? undefined,
      durability: completionRecoverable(op.card) ? 'deferrable' : undefined,
    });
  } else if (pending !== null) {
    await ctx.ledger.appendReceipt(s.lease.ref, pending);
  }
  const attempts = record.attemptCount;
  const ref = providerRef ? `, ref ${providerRef}` : '';
  const text = () => `succeeded${adopted ? ' (adopted)' : ''} after ${attempts} provider call(s)${ref}`;
  ctx.log('info', 'done', text, op, { attempt: attempts, adopted });
  return { status: 'done', businessOperationId: op.id, result, providerRef, adopted, attempts, receipts: s.receipts };
}

/** A recovery that cannot tell whether the stopped worker's send applied hands off as crash-recovery-inconclusive. */
export const handoffReason = (recovering: boolean, d: Extract<Decision, { action: 'handoff' }>) =>
  recovering && d.reason === 'unknown-no-safe-resend' ? 'crash-recovery-inconclusive' : d.reason;

export async function handOff(
  ctx: RunnerContext,
  op: Operation,
  s: Readonly<DriveState>,
  end: { readonly decided: Extract<Decision, { action: 'handoff' }>; readonly pending: Receipt | null },
): Promise<RunResult> {
  const { decided, pending } = end;
  const { clock, ledger, log } = ctx;
  const now = clock.now();
  const reason = handoffReason(s.recovering, decided);
  const crashed = reason !== decided.reason;
  const why = crashed ? `a worker stopped after dispatching; ${decided.why}` : decided.why;
  if (pending !== null) s.receipts.push(pending);
  const { receipts } = s;
  const sends = receipts.filter(isSend);
  const ids = sends.map((r) => r.attemptId);
  const error = reason === 'retry-exhausted' ? new RetryExhaustedError(op.redactor.text(why), ids) : undefined;
  const explanation = op.redactor.text(error ? error.message : why);
  const safety = resendSafety(op.card, s.record.firstDispatchedAt, now, op.policy.clockSkewMarginMs);
  // A key that holds a stored error only replays it: a resume cannot succeed until the key expires.
  const lastSend = sends.at(-1);
  const replaysError =
    op.card.storedResult.includesErrors.value === true &&
    lastSend?.outcome === 'unknown' &&
    typeof lastSend.status === 'number' &&
    lastSend.status >= 500;
  const resumeNote =
    replaysError && safety.safe
      ? `a resume re-sends with the same key, which holds the provider's stored ${lastSend.status}: it would only replay that error until the key expires (${String(op.card.retention.minimum.value)} after the first dispatch)`
      : undefined;
  const packet = buildPacket({
    record: s.record,
    reason,
    explanation,
    receipts,
    resendSafe: safety.safe && !replaysError,
    resumeNote,
    correction: correctionRule(op, now),
    now,
  });
  const attempts = (await ledger.handOff(s.lease.ref, packet, now, pending ?? undefined)).attemptCount;
  log('warn', 'handoff', `${reason}: ${explanation}`, op, { handoffReason: reason, attempt: attempts });
  // One the caller acts on (the user's step, then the same call) is no person's to be sent.
  if (!waitsForUser(packet, receipts))
    await sendPacket(ctx, packet, op, { ms: op.policy.maxElapsedMs, signal: op.signal });
  return { status: 'handed-off', businessOperationId: op.id, packet, attempts, receipts, ...(error ? { error } : {}) };
}

/** Given back (`not-sent`, already written): no call ever left, so no person is needed; the caller is told to call
 * again, which sends it as a new operation under the same id. */
export function givenBack(
  ctx: RunnerContext,
  op: Operation,
  s: Readonly<DriveState>,
  decided: Extract<Decision, { action: 'handoff' }>,
): never {
  const why = `nothing was sent: every provider call failed before its request left (${decided.why}); the operation was given back (state not-sent), and a call with the same business-operation id sends it as new`;
  ctx.log('warn', 'given-back', why, op, { attempt: s.record.attemptCount });
  const ids = s.receipts.filter(isSend).map((r) => r.attemptId);
  throw new RetryExhaustedError(op.redactor.text(why), ids);
}

/** How many receipts there are while each is a call that never sent its request, in any revision; null once one is not. */
export const neverSentCalls = (receipts: readonly Pick<Receipt, 'kind' | 'neverSent'>[]) =>
  receipts.every((r) => isSend(r) && r.neverSent === true) ? receipts.length : null;

/** The budget is spent and nothing can be at the provider: the claim is given back (state not-sent) instead of handed
 * off. A call counted with no receipt (its worker stopped) may have been sent. */
export function givesBack(
  decided: Decision,
  maybeApplied: boolean,
  receipts: readonly Pick<Receipt, 'kind' | 'neverSent'>[],
  { attemptCount }: Pick<OperationRecord, 'attemptCount'>,
): boolean {
  const calls = neverSentCalls(receipts);
  const spent = decided.action === 'handoff' && decided.reason === 'retry-exhausted';
  return spent && !maybeApplied && calls !== null && calls > 0 && attemptCount <= calls;
}

/** The packet, already in the ledger, to the sink: a failing sink is logged, never the operation's failure. A sink that
 * does not settle within `wait.ms` (or before `wait.signal` aborts) is logged too and no longer waited for. */
export async function sendPacket(
  ctx: RunnerContext,
  packet: ReturnType<typeof buildPacket>,
  op: LogSubject,
  wait: { readonly ms: number; readonly signal?: AbortSignal },
): Promise<void> {
  const sink = ctx.options.handoff;
  if (!sink) return;
  const failed = (err: unknown) =>
    ctx.log('warn', 'handoff-sink-failed', `the packet is in the ledger; the sink failed: ${errText(err)}`, op);
  const unconfirmed = (why: string) =>
    ctx.log('warn', 'handoff-sink-unconfirmed', `the packet is in the ledger; the sink did not confirm it: ${why}`, op);
  const sent = async () => void (await sink.send(packet));
  // A caller that has already given up is not kept waiting for the sink (an abort only ends a wait it interrupts).
  if (wait.signal?.aborted) {
    sent().catch(failed);
    return unconfirmed('the caller had given up, so the runner did not wait for it');
  }
  try {
    const stopped = await untilStopped<Stop | undefined>(wait.ms, wait.signal, sent, (why) => why);
    if (stopped !== undefined) unconfirmed(stopText(wait.ms, stopped));
  } catch (err) {
    failed(err);
  }
}

/** `paramsFingerprint`: null to answer whatever its params. */
export async function fromTerminal(
  ctx: RunnerContext,
  record: OperationRecord,
  paramsFingerprint: string | null,
  op: Operation,
): Promise<RunResult> {
  const { ledger, log } = ctx;
  // Other params under the same intent are a conflict even once it succeeded: adopting would tell the
  // caller that *their* request (say, another amount for the same order) was performed.
  if (paramsFingerprint !== null && record.paramsFingerprint !== paramsFingerprint) {
    const check =
      record.state === 'succeeded'
        ? null
        : supersedeCheck(
            record,
            await ledger.receipts(record.businessOperationId),
            correctionRule(op, ctx.clock.now()),
          );
    if (check === null || check.ok) {
      const detail = `the operation is ${stateWords(record.state)} with other params`;
      throw paramsConflict(op, record, detail, check?.ok ? 'not-applied' : 'may-apply');
    }
    const detail = `the operation is ${stateWords(record.state)} with other params and cannot be superseded: ${check.why}`;
    throw paramsConflict(op, record, detail, 'needs-person');
  }
  const { businessOperationId, result, providerRef, attemptCount: attempts, handoff: packet } = record;
  const receipts = await ledger.receipts(businessOperationId);
  if (record.state === 'succeeded') {
    log('info', 'adopt', 'already succeeded: adopting the stored result, nothing sent', op);
    return { status: 'done', businessOperationId, result, providerRef, adopted: true, attempts, receipts };
  }
  if (record.state === 'not-sent')
    throw new InvalidStateError(
      businessOperationId,
      record.state,
      'given back, nothing sent: call it again to send it',
    );
  if (!packet) throw new InvalidStateError(businessOperationId, record.state, 'terminal without a handoff packet');
  return { status: 'handed-off', businessOperationId, packet, attempts, receipts };
}
