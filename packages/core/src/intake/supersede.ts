import type { OperationRecord, Receipt, RetrySafetyCard } from '@retrysafe/contract';
import { stateWords } from '@retrysafe/contract/ledger';
import { retentionPassed } from '@retrysafe/contract/rules';

export const SUPERSEDE_ACTION = 'supersede';

const NOT_APPLIED = new Set(['rejected', 'not-applied']);
// Refused before the provider processed the request, for a cause outside its params: nothing stored, nothing made.
const UNPROCESSED_REJECTIONS = new Set(['authentication', 'permission', 'configuration', 'action-required']);
export const refusedOutsideParams = (reason: unknown) => UNPROCESSED_REJECTIONS.has(String(reason));
/** A rejection given after the provider processed the request: it may have stored an answer or left an object. */
const processedRejection = (r: Receipt) => r.outcome === 'rejected' && !refusedOutsideParams(r.rejectReason);

const isSupersede = (r: Receipt) => r.kind === 'resolve' && r.decision.action === SUPERSEDE_ACTION;
export const isSend = (r: Pick<Receipt, 'kind'>) => r.kind === 'dispatch' || r.kind === 'resend';
const currentRevision = (receipts: readonly Receipt[]) => receipts.slice(receipts.findLastIndex(isSupersede) + 1);

type Verdict = { ok: true } | { ok: false; why: string };
const refused = (why: string): Verdict => ({ ok: false, why });
/** A provider call as a why names it: by its time, as the packet lists it; its ids are for receipts, not for an agent. */
const callOf = (r: Receipt) => `the call at ${r.startedAt}`;

/** The card a correction is judged by, when it would go out, and the margin its key's age is counted with. */
export interface CorrectionRule {
  readonly card: RetrySafetyCard;
  readonly now: number;
  readonly clockSkewMarginMs: number;
}

export const correctionRule = (
  op: { readonly card: RetrySafetyCard; readonly policy: { readonly clockSkewMarginMs: number } },
  now: number,
): CorrectionRule => ({
  card: op.card,
  now,
  clockSkewMarginMs: op.policy.clockSkewMarginMs,
});

/** Whether a corrected request may supersede the operation: at rest after a rejection or a spent budget, every
 * provider call of its current revision known not applied (any doubt: a conflict). */
export function supersedeCheck(record: OperationRecord, receipts: readonly Receipt[], rule: CorrectionRule): Verdict {
  const none = nothingApplied(record, receipts, rule.card);
  return none.ok ? keptKeyCheck(rule, record, receipts) : none;
}

/** Whether the operation is at rest with nothing its calls may have applied or left: only then can another intent go
 * out as a new operation without making the effect twice. */
export function nothingApplied(record: OperationRecord, receipts: readonly Receipt[], card: RetrySafetyCard): Verdict {
  // Given back, nothing left, but the next call of its id opens it again and sends it.
  if (record.state === 'not-sent') return refused('nothing of it was sent, but a call of it under this id sends it');
  if (record.state !== 'rejected' && record.state !== 'handed-off')
    return refused(`the operation is ${stateWords(record.state)}`);
  const reason = record.handoff?.reason;
  if (record.state === 'handed-off' && reason && reason !== 'rejected' && reason !== 'retry-exhausted')
    return refused(`it was handed off as ${reason}: an attempt may have been applied`);
  const attempts = everyAttemptNotApplied(receipts, record);
  return attempts.ok ? unnamedLeftObject(card, receipts) : attempts;
}

/** The same request again, once the user took the step its last call was refused for. */
export function reissueCheck(record: OperationRecord, receipts: readonly Receipt[], rule: CorrectionRule): Verdict {
  if (!refusedUntilUserActs(receipts))
    return refused('its last call was not refused for a step the user must take first');
  return supersedeCheck(record, receipts, rule);
}

export function refusedUntilUserActs(receipts: readonly Receipt[]): boolean {
  const last = currentRevision(receipts).findLast(isSend);
  return last?.outcome === 'rejected' && last.rejectReason === 'action-required';
}

export function refusedBeforeProcessing(receipts: readonly Receipt[]): boolean {
  const last = currentRevision(receipts).findLast(isSend);
  return last?.outcome === 'rejected' && !processedRejection(last);
}

/** supersedeCheck without the state. */
export function correctionCheck(
  receipts: readonly Receipt[],
  record: Pick<OperationRecord, 'attemptCount' | 'resolution' | 'providerKey' | 'firstDispatchedAt'>,
  rule: CorrectionRule,
): Verdict {
  const attempts = everyAttemptNotApplied(receipts, record);
  if (!attempts.ok) return attempts;
  const unnamed = unnamedLeftObject(rule.card, receipts);
  return unnamed.ok ? keptKeyCheck(rule, record, receipts) : unnamed;
}

/** Where the card does not know whether a rejected call leaves an object, a processed rejection that names none
 * proves nothing: a correction could make a second one. */
function unnamedLeftObject(card: RetrySafetyCard, receipts: readonly Receipt[]): Verdict {
  if (card.sideEffect.rejectionMayCreate?.value !== 'unknown') return { ok: true };
  const r = currentRevision(receipts).find((r) => isSend(r) && processedRejection(r));
  if (r === undefined) return { ok: true };
  return refused(
    `${callOf(r)} was rejected (${String(r.rejectReason)}) and named nothing left at the provider, but the card does not know whether a rejected call leaves an object (sideEffect.rejectionMayCreate unknown): a corrected request could make a second one (check at the provider, then mark-done or abandon)`,
  );
}

/** Every provider call of the record's current revision known not applied. */
export function everyAttemptNotApplied(
  receipts: readonly Receipt[],
  { attemptCount, resolution }: Pick<OperationRecord, 'attemptCount' | 'resolution'>,
): Verdict {
  // A revision claimed without its supersede receipt (appended after the claim, restartClaimed, and lost): its calls
  // would be counted with the revision before, whose rejections then vouch for a call of its own that may have applied.
  const claimed = resolution?.action === SUPERSEDE_ACTION ? (resolution.revision ?? 1) : 1;
  if (claimed > currentRevisionNumber(receipts))
    return refused(`revision ${claimed} has no supersede receipt: which provider calls are its own cannot be told`);
  const mine = currentRevision(receipts);
  for (const r of mine) {
    if (r.kind === 'lookup' || r.kind === 'poll')
      return refused('an earlier outcome was uncertain (it was looked up): an attempt may have been applied');
    if (isSend(r) && !NOT_APPLIED.has(String(r.outcome)))
      return refused(
        `${callOf(r)} ${r.outcome ? `ended with outcome ${r.outcome}` : 'left no outcome'}: it may have been applied`,
      );
    // A rejection that created something (a declined create+confirm leaves its PaymentIntent) would be made
    // twice; a `conflict` rejection says the key already holds something, and no recorded reason proves nothing.
    if (r.created !== undefined)
      return refused(
        `${callOf(r)} was rejected but left ${r.created} at the provider: a corrected request would make a second one (finish or cancel ${r.created} there, then mark-done or abandon)`,
      );
    if (r.outcome === 'rejected' && (r.rejectReason === undefined || r.rejectReason === 'conflict'))
      return refused(
        `${callOf(r)} was rejected ${r.rejectReason === 'conflict' ? 'as a conflict with what the provider already holds under the key' : 'for a reason not on record'}: an effect may exist`,
      );
  }
  const sends = mine.filter(isSend).length;
  if (sends === 0) return refused('no attempt of it is on record');
  // A call counted on the record with no receipt (its worker stopped after sending) may have been applied.
  if (attemptCount > sends)
    return refused(`${attemptCount - sends} provider call(s) left no outcome on record: it may have been applied`);
  return { ok: true };
}

export function currentRevisionNumber(receipts: readonly Receipt[]): number {
  return 1 + receipts.filter(isSupersede).length;
}

/** A key of its own only where the provider may have stored a processed rejection under the current one; otherwise
 * the key is kept, so the provider folds or refuses the correction instead of making a second object. */
export function needsFreshKey(card: RetrySafetyCard, receipts: readonly Receipt[]): boolean {
  if (card.providerKey.travels.value === 'none' || card.storedResult.includesErrors.value === false) return false;
  return currentRevision(receipts).some((r) => isSend(r) && processedRejection(r));
}

const notAppliedIsProof = (card: RetrySafetyCard) => card.storedResult.semantics.value === 'none';

/** Whether a same-key request sent at `at` may find the key forgotten, where a "not applied" under it holds only
 * while the provider keeps the key. */
export function keyMayBeForgotten(
  card: RetrySafetyCard,
  firstDispatchedAt: number | null,
  at: number,
  clockSkewMarginMs: number,
): boolean {
  const retention = card.retention.minimum.value;
  if (card.providerKey.travels.value === 'none' || notAppliedIsProof(card)) return false;
  if (retention === null || retention === 'unknown') return false;
  return retentionPassed(card, firstDispatchedAt, at, clockSkewMarginMs);
}

/** The record's last call was recorded not applied under a key the provider may have forgotten by `at` (no card: any key). */
export function notAppliedKeyGone(
  card: RetrySafetyCard | null,
  record: OperationRecord,
  at: number,
  clockSkewMarginMs: number,
): boolean {
  if (record.lastOutcome !== 'not-applied' || record.providerKey === null) return false;
  return card === null || keyMayBeForgotten(card, record.firstDispatchedAt, at, clockSkewMarginMs);
}

/** A call under `key` recorded not applied, which may only mean a same-key re-send folds it (null: its precondition);
 * one that never left holds nothing under the key. */
const notAppliedUnder = (key: OperationRecord['providerKey'], receipts: readonly Receipt[]) =>
  receipts.find((r) => isSend(r) && r.outcome === 'not-applied' && r.neverSent !== true && r.providerKey === key);

/** The card's half of correctionCheck. After a "not applied" that may have landed, the correction keeps that key: safe
 * only where the provider, still holding it, refuses other params under it, applies them over the first (idempotent by
 * nature) or folds nothing; elsewhere it could be answered with the first result or made twice: a person decides. */
function keptKeyCheck(
  { card, now, clockSkewMarginMs }: CorrectionRule,
  record: Pick<OperationRecord, 'providerKey' | 'firstDispatchedAt'>,
  receipts: readonly Receipt[],
): Verdict {
  const matching = card.parameterMatching.value;
  if (notAppliedIsProof(card)) return { ok: true };
  const notApplied = notAppliedUnder(record.providerKey, receipts);
  if (notApplied === undefined) return { ok: true };
  const folds = `${callOf(notApplied)} was recorded not applied, which may only mean that a re-send under its key (or its precondition) folds into it`;
  // A later rejection under the key proves nothing of it: the provider may refuse (a quota, a check) before its key store.
  if (needsFreshKey(card, receipts))
    return refused(
      `${folds}, and a rejection after it would send the correction under a key of its own (the provider may have stored the rejection under the first): it could be made a second time`,
    );
  if (matching === 'none' && card.sideEffect.idempotentByNature.value === true) return { ok: true };
  const doubt = `${folds}; the correction would go out under that key`;
  if (matching !== 'mismatch-error')
    return refused(
      `${doubt}, and the provider does not refuse other params under it (card parameterMatching: ${matching}): it could be answered with the first request's result or made a second time`,
    );
  if (retentionPassed(card, record.firstDispatchedAt, now, clockSkewMarginMs))
    return refused(
      `${doubt}, which the provider may no longer hold when it lands (past its ${String(card.retention.minimum.value)} retention, counted from its first use with the clock-skew margin and a late apply): it could be made a second time`,
    );
  return { ok: true };
}

export const notAppliedMayHaveLanded = (
  card: RetrySafetyCard,
  key: OperationRecord['providerKey'],
  receipts: readonly Receipt[],
) => !notAppliedIsProof(card) && notAppliedUnder(key, receipts) !== undefined;

/** Superseded under a key one of whose calls was recorded not applied: a lookup may find the first request's effect. */
export function earlierEffectMayShow(
  record: Pick<OperationRecord, 'providerKey' | 'resolution'>,
  receipts: readonly Receipt[],
): boolean {
  const revised = currentRevisionNumber(receipts) > 1 || record.resolution?.action === SUPERSEDE_ACTION;
  return revised && record.providerKey !== null && notAppliedUnder(record.providerKey, receipts) !== undefined;
}

/** The revision the key in use was derived for: the last whose supersede took a key of its own (1 until then). */
export function keyRevisionNumber(receipts: readonly Receipt[]): number {
  let revision = 1;
  let keyRevision = 1;
  for (const [i, r] of receipts.entries()) {
    if (!isSupersede(r)) continue;
    revision++;
    if (r.providerKey !== receipts[i - 1]?.providerKey) keyRevision = revision;
  }
  return keyRevision;
}
