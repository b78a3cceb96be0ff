// Every reading of a card that decides what may happen after an unknown outcome, so the runner, the policy,
// agent tools and adapters never read those fields themselves. Pure: times are passed in.
import type { LookupContext } from './adapter.js';
import type { RetrySafetyCard } from './card.js';
import { type Duration, durationMs, roughly } from './duration.js';

export const DEFAULT_CLOCK_SKEW_MARGIN: Duration = '1m';

export function cardMargin(card: RetrySafetyCard): number {
  return durationMs(card.limits.clockSkewMargin ?? DEFAULT_CLOCK_SKEW_MARGIN);
}

/** Why a policy's `clockSkewMarginMs` cannot work (NaN would make every key look young enough to re-send), or null. */
export function marginProblem(ms: unknown): string | null {
  if (ms === undefined || (typeof ms === 'number' && Number.isFinite(ms) && ms >= 0)) return null;
  return `expected a finite number ≥ 0, got ${String(ms)}`;
}

type MarginPolicy = { readonly clockSkewMarginMs?: number | undefined };

/** The margin the runner works with for `card`: the policy's when it sets one (it may widen it), else the card's. */
export function marginInForce(card: RetrySafetyCard, policy: MarginPolicy = {}): number {
  checkMargin(policy.clockSkewMarginMs);
  return policy.clockSkewMarginMs ?? cardMargin(card);
}

/** Every rule that is given a margin refuses one that cannot work rather than judge with it. */
function checkMargin(ms: unknown) {
  const why = marginProblem(ms);
  if (why !== null) throw new RangeError(`policy.clockSkewMarginMs: ${why}`);
}

/** How long a closed record must outlive its last change, so a repeat never meets a key the provider still holds
 * without the record: the longest retention + margin + late-apply allowance. An unknown retention counts as
 * `unknownRetentionMs`, else its card is listed in `unknown` for the caller to refuse or skip. */
export function retentionFloor(
  cards: readonly RetrySafetyCard[],
  policy: MarginPolicy = {},
  unknownRetentionMs?: number,
): { readonly ms: number; readonly card: string | null; readonly unknown: readonly RetrySafetyCard[] } {
  checkMargin(policy?.clockSkewMarginMs);
  let floor = { ms: 0, card: null as string | null };
  const unknown: RetrySafetyCard[] = [];
  for (const card of cards) {
    const keep = card.retention.minimum.value;
    if (keep === null) continue;
    if (keep === 'unknown' && unknownRetentionMs === undefined) {
      unknown.push(card);
      continue;
    }
    const margin = marginInForce(card, policy);
    const ms =
      (keep === 'unknown' ? unknownRetentionMs! : durationMs(keep)) + margin + lateApplyAllowanceMs(card, margin);
    if (ms > floor.ms) floor = { ms, card: card.operation };
  }
  return { ...floor, unknown };
}

/** Why a backoff cap cannot work with its base (no usable backoff), or null; a config with both checks it alone. */
export function capProblem(baseMs: number, capMs: number): string | null {
  return capMs < baseMs ? `the backoff cap (${capMs}) is below its base (${baseMs})` : null;
}

/** What leaves the runner no usable backoff or time, from a card's or a policy's numbers, each with its policy field. */
export function budgetProblems(p: { readonly maxElapsedMs: number; readonly baseMs: number; readonly capMs: number }) {
  const out: { readonly field: 'maxElapsedMs' | 'capMs'; readonly why: string }[] = [];
  if (!(p.maxElapsedMs > 0)) out.push({ field: 'maxElapsedMs', why: 'must be greater than 0' });
  const cap = capProblem(p.baseMs, p.capMs);
  if (cap !== null) out.push({ field: 'capMs', why: cap });
  return out;
}

/** A set or upsert idempotent by nature: its intent names the target, its values are params, and other values once it
 * is done are its next revision, sent (the same values again are a retry, answered from the ledger). */
export function changedParamsRevise(card: RetrySafetyCard): boolean {
  const kind = card.sideEffect.kind.value;
  return (kind === 'set' || kind === 'upsert') && card.sideEffect.idempotentByNature.value === true;
}

/** A same-key re-send counts as a lookup. */
export function lookupAvailable(card: RetrySafetyCard): boolean {
  const m = card.lookup.method.value;
  return m !== 'none' && m !== 'unknown';
}

/** A lost final `succeeded` write is recovered by looking the `dispatched` row up; without a lookup, a handoff. */
export const completionRecoverable = lookupAvailable;

/** A key travels and the provider replays or rejects a same-key duplicate. */
export function keyFoldsResends(card: RetrySafetyCard): boolean {
  const t = card.providerKey.travels.value;
  const sem = card.storedResult.semantics.value;
  return t !== 'none' && t !== 'unknown' && (sem === 'replays' || sem === 'rejects-duplicate');
}

/** How long after it goes out a same-key request may still land: lookup.lateApplyBound, or one more margin when unknown. */
export function lateApplyAllowanceMs(card: RetrySafetyCard, clockSkewMarginMs = cardMargin(card)): number {
  checkMargin(clockSkewMarginMs);
  const late = card.lookup.lateApplyBound?.value ?? 'unknown';
  return late === 'unknown' ? clockSkewMarginMs : durationMs(late);
}

function readRetention(card: RetrySafetyCard, firstDispatchedAt: number | null, at: number, clockSkewMarginMs: number) {
  const retention = card.retention.minimum.value;
  const lateMs = lateApplyAllowanceMs(card, clockSkewMarginMs);
  if (retention === 'unknown' || retention === null) return { passed: true, ageMs: 0, lateMs };
  if (firstDispatchedAt === null) return { passed: false, ageMs: 0, lateMs };
  const ageMs = at - firstDispatchedAt;
  // The provider's clock may run ahead of ours: the key counts as the margin older. And the request sent at `at`
  // may itself land late: it must still find the key when it lands.
  return { passed: ageMs + clockSkewMarginMs + lateMs >= durationMs(retention), ageMs, lateMs };
}

/** The provider may no longer hold the key when a request sent at `at` lands (retention unknown or none: passed). */
export function retentionPassed(
  card: RetrySafetyCard,
  firstDispatchedAt: number | null,
  at: number,
  clockSkewMarginMs = cardMargin(card),
): boolean {
  return readRetention(card, firstDispatchedAt, at, clockSkewMarginMs).passed;
}

export interface ResendSafety {
  readonly safe: boolean;
  readonly pastRetention: boolean;
  readonly why: string;
}

const verdict = (safe: boolean, why: string, pastRetention = false): ResendSafety => ({ safe, pastRetention, why });
const unsafe = (why: string) => verdict(false, why);

/** Whether a same-key re-send at `now` cannot create a second effect. */
export function resendSafety(
  card: RetrySafetyCard,
  firstDispatchedAt: number | null,
  now: number,
  clockSkewMarginMs = cardMargin(card),
): ResendSafety {
  if (card.sideEffect.idempotentByNature.value === true)
    return verdict(true, 'the operation is idempotent by nature (card sideEffect.idempotentByNature)');
  const travels = card.providerKey.travels.value;
  if (travels === 'unknown' || travels === 'none')
    return unsafe(`no provider key travels (card providerKey.travels = ${travels})`);
  const sem = card.storedResult.semantics.value;
  if (!keyFoldsResends(card))
    return unsafe(`the provider does not fold re-sends together (card storedResult.semantics = ${sem})`);
  const retention = card.retention.minimum.value;
  if (retention === 'unknown' || retention === null)
    return unsafe(`the key's retention is not known (card retention.minimum = ${retention})`);
  if (card.parameterMatching.value === 'unknown')
    return unsafe("the provider's parameter matching is unknown (card parameterMatching)");
  // The first request may still be running: a same-key duplicate must be refused or folded, not processed again.
  const conc = card.concurrency.value;
  if (conc !== 'rejects-in-progress' && conc !== 'waits-then-replays')
    return unsafe(`a re-send while the first request may still be running is not folded (card concurrency = ${conc})`);
  // A lost answer may have been a rejection that left an object; a key holding no error does not fold a re-send into it.
  const errors = card.storedResult.includesErrors.value;
  const rejectionMayCreate = card.sideEffect.rejectionMayCreate.value;
  if (errors !== true && rejectionMayCreate !== false)
    return unsafe(
      `a rejection may leave an object (card sideEffect.rejectionMayCreate = ${rejectionMayCreate}) that the key does not hold (card storedResult.includesErrors = ${errors}): a re-send could make a second one`,
    );
  const r = readRetention(card, firstDispatchedAt, now, clockSkewMarginMs);
  if (r.passed) {
    const late = card.lookup.lateApplyBound?.value ?? 'unknown';
    return verdict(
      false,
      `the key is ${roughly(r.ageMs)} old; with the ${roughly(clockSkewMarginMs)} clock-skew margin and ${roughly(r.lateMs)} for a late apply (lateApplyBound ${late}) that is past the provider's ${retention} retention: a re-send could be a new operation`,
      true,
    );
  }
  const fold = sem === 'replays' ? 'replays its stored result' : 'rejects the duplicate';
  return verdict(true, `same key, inside the ${retention} retention, provider ${fold}`);
}

/** A card's `storedResult.replayIndicator` value: the header and value that mark a replayed answer. */
export type ReplayIndicatorValue = NonNullable<RetrySafetyCard['storedResult']['replayIndicator']>['value'];

/** Whether an answer is the provider's stored one replayed, by the card's indicator; `header(name)` reads the answer. */
export function isReplayedAnswer(
  indicator: ReplayIndicatorValue | undefined,
  header: (name: string) => string | undefined,
): boolean {
  if (typeof indicator !== 'object' || indicator === null) return false;
  return header(indicator.header)?.toLowerCase() === indicator.value.toLowerCase();
}

/** How long after the last dispatch a "not found" proves absence: lateApplyBound + consistencyDelay; null when either is unknown. */
export function lookupSettleMs(card: RetrySafetyCard): number | null {
  const delay = card.lookup.consistencyDelay.value;
  const late = card.lookup.lateApplyBound?.value ?? 'unknown';
  if (delay === 'unknown' || late === 'unknown') return null;
  return durationMs(late) + (delay === null ? 0 : durationMs(delay));
}

/** After a takeover, `lastDispatchedAt` is bounded by the stopped worker's lease end + the clock-skew margin. */
export type DispatchTimes = Pick<LookupContext, 'firstDispatchedAt' | 'lastDispatchedAt'>;

/** From when a "not found" proves absence: the last dispatch + lookupSettleMs; `never` when a bound is unknown. */
export function absenceProvenFrom(
  card: RetrySafetyCard,
  times: DispatchTimes,
): { readonly at: number } | { readonly never: string } {
  if (card.lookup.consistencyDelay.value === 'unknown')
    return { never: 'its consistency delay is unknown (card lookup.consistencyDelay)' };
  const last = times.lastDispatchedAt ?? times.firstDispatchedAt;
  if (last === null) return { at: -Infinity }; // never dispatched: nothing can land
  const settle = lookupSettleMs(card);
  if (settle === null)
    return {
      never:
        'the provider may still apply an earlier request for an unknown time after the client gave up (card lookup.lateApplyBound unknown)',
    };
  return { at: last + settle };
}

/** `observedAt`: when the lookup was asked (default `now`). */
export interface LookupTiming extends DispatchTimes, Pick<LookupContext, 'now'> {
  readonly observedAt?: number;
}

/** Whether a lookup's "not found" proves the effect was not applied. */
export function notFoundIsAuthoritative(card: RetrySafetyCard, timing: LookupTiming): boolean {
  const proof = absenceProvenFrom(card, timing);
  return 'at' in proof && (timing.observedAt ?? timing.now) >= proof.at;
}

/** An agent tool's `idempotentHint`: the re-send rule for a key sent just now. */
export function agentIdempotentHint(card: RetrySafetyCard, clockSkewMarginMs = cardMargin(card)): boolean {
  return resendSafety(card, 0, 0, clockSkewMarginMs).safe;
}
