import { DEFAULT_CLOCK_SKEW_MARGIN, durationMs, type HandoffReason, type LookupResult, type OperationState, type Outcome, type RetrySafetyCard, type StatePatch } from '@retrysafe/contract';
import { planPoll, planRetry, type RetryPolicy } from './retry-policy.js';

/** What the runner knows about the operation when it decides. All times epoch ms. */
export interface DecisionState {
  /** The ledger state before this observation (`succeeded` ⇒ a stored result exists). */
  readonly ledgerState: OperationState;
  readonly now: number;
  /** First `dispatched` write: the provider key's age is measured from here. Null = never dispatched. */
  readonly firstDispatchedAt: number | null;
  /**
   * Latest dispatch (or an upper bound of it, for an operation taken over from a dead worker). A lookup's
   * consistency delay runs from here: a record created by a re-send is not visible before it either.
   * Defaults to firstDispatchedAt.
   */
  readonly lastDispatchedAt?: number | null;
  /**
   * When the observation was asked for (a lookup's start). A lookup's "not found" is judged at that time,
   * not at decision time: the clock may have moved on while it ran. Defaults to now.
   */
  readonly observedAt?: number;
  /**
   * An earlier attempt may have been applied (its outcome was unknown or in progress, and no
   * authoritative lookup has said otherwise since). Then a later "not applied" answer speaks only for
   * that later attempt: the operation as a whole is still unknown. Defaults to false.
   */
  readonly maybeApplied?: boolean;
  /**
   * Taken over from a worker that stopped: the end of its lease, the latest moment it could still have
   * called the provider (a worker checks its lease immediately before every call). Written by another
   * worker's clock, so it counts as the policy's clock-skew margin later. Null/absent = not a takeover.
   */
  readonly takenOverLeaseEnd?: number | null;
  /** The provider's last Retry-After, as an epoch ms: no provider call goes out before it. */
  readonly notBefore?: number;
  /** Provider calls made in this run (the budget counts these). */
  readonly runAttempts: number;
  readonly runStartedAt: number;
  /** Start of the current lookup / in-progress window of this run; null = none yet. */
  readonly windowStartedAt: number | null;
  /** Lookups/polls made in the current window. */
  readonly polls: number;
}

export interface Budget {
  readonly policy: RetryPolicy;
  /** Jitter source in [0, 1). */
  readonly random: () => number;
}

/** One observation: an attempt's outcome, a lookup's result, or null (decide from the ledger state alone). */
export type Observation = Outcome | LookupResult | null;

export type Decision =
  /** The effect exists: record the result. `adopted` when it came from a replay, a lookup or an earlier run. */
  | { readonly action: 'complete'; readonly adopted: boolean; readonly why: string }
  /** Call the provider (again) with the SAME provider key after `delayMs`. */
  | { readonly action: 'send'; readonly delayMs: number; readonly why: string }
  /** Ask the provider for its stored status/result (doLookup) after `delayMs`. */
  | { readonly action: 'lookup'; readonly delayMs: number; readonly why: string }
  /** Stop; a person takes over. */
  | { readonly action: 'handoff'; readonly reason: HandoffReason; readonly why: string };

export interface ResendSafety {
  readonly safe: boolean;
  /** The key is older than the provider's retention: never rely on it. */
  readonly pastRetention: boolean;
  readonly why: string;
}

const known = <T>(v: T | 'unknown'): v is T => v !== 'unknown';

/**
 * Whether re-sending with the same provider key cannot create a second effect, read from the card only:
 * idempotent by nature, or (a key travels, the provider replays or rejects duplicates, the retention is
 * known and the key is younger than it, parameter matching is known, and a duplicate that arrives while
 * the first is still running is refused or folded — concurrency `rejects-in-progress` / `waits-then-replays`).
 */
export function resendSafety(card: RetrySafetyCard, firstDispatchedAt: number | null, now: number, clockSkewMarginMs: number = cardMargin(card)): ResendSafety {
  if (card.sideEffect.idempotentByNature.value === true) return { safe: true, pastRetention: false, why: 'the operation is idempotent by nature (card sideEffect.idempotentByNature)' };
  const travels = card.providerKey.travels.value;
  if (!known(travels) || travels === 'none') return { safe: false, pastRetention: false, why: `no provider key travels (card providerKey.travels = ${travels})` };
  const sem = card.storedResult.semantics.value;
  if (sem !== 'replays' && sem !== 'rejects-duplicate') return { safe: false, pastRetention: false, why: `the provider does not fold re-sends together (card storedResult.semantics = ${sem})` };
  const retention = card.retention.minimum.value;
  if (!known(retention) || retention === null) return { safe: false, pastRetention: false, why: `the key's retention is not known (card retention.minimum = ${retention})` };
  if (card.parameterMatching.value === 'unknown') return { safe: false, pastRetention: false, why: 'the provider\'s parameter matching is unknown (card parameterMatching)' };
  // The first request may still be running: a same-key duplicate must be refused or folded, not processed again.
  const conc = card.concurrency.value;
  if (conc !== 'rejects-in-progress' && conc !== 'waits-then-replays')
    return { safe: false, pastRetention: false, why: `a re-send while the first request may still be running is not folded (card concurrency = ${conc})` };
  const age = firstDispatchedAt === null ? 0 : now - firstDispatchedAt;
  // The provider's clock may run ahead of ours: the key counts as the clock-skew margin older. And the
  // re-send itself may land late (card lookup.lateApplyBound; unknown counts as one more margin): it must
  // still find the key when it lands, or it is a new operation.
  const late = card.lookup.lateApplyBound?.value ?? 'unknown';
  const lateMs = late === 'unknown' ? clockSkewMarginMs : durationMs(late);
  if (firstDispatchedAt !== null && age + clockSkewMarginMs + lateMs >= durationMs(retention))
    return { safe: false, pastRetention: true, why: `the key is ${age} ms old; with the ${clockSkewMarginMs} ms clock-skew margin and ${lateMs} ms for a late apply (lateApplyBound ${late}) that is past the provider's ${retention} retention: a re-send could be a new operation` };
  return { safe: true, pastRetention: false, why: `same key, inside the ${retention} retention, provider ${sem === 'replays' ? 'replays its stored result' : 'rejects the duplicate'}` };
}

export function lookupAvailable(card: RetrySafetyCard): boolean {
  const m = card.lookup.method.value;
  return m !== 'none' && m !== 'unknown';
}

/** The policy's clock-skew margin as the card sets it (limits.clockSkewMargin, default 1m). */
export function cardMargin(card: RetrySafetyCard): number {
  return durationMs(card.limits.clockSkewMargin ?? DEFAULT_CLOCK_SKEW_MARGIN);
}

/**
 * From when a lookup's "not found" proves absence (decide's not-found row): once the last attempt can no
 * longer take effect and the lookup would show it. That is the last dispatch (for a takeover: the dead
 * owner's lease end, plus the clock-skew margin, since another clock wrote it) + the card's
 * `lookup.lateApplyBound` + `lookup.consistencyDelay`. `never` when either bound is unknown.
 */
export function absenceProvenFrom(card: RetrySafetyCard, state: DecisionState, clockSkewMarginMs: number = cardMargin(card)): { readonly at: number } | { readonly never: string } {
  const delay = card.lookup.consistencyDelay.value;
  if (delay === 'unknown') return { never: 'its consistency delay is unknown (card lookup.consistencyDelay)' };
  const late = card.lookup.lateApplyBound?.value ?? 'unknown';
  let last = state.lastDispatchedAt ?? state.firstDispatchedAt;
  if (state.takenOverLeaseEnd !== undefined && state.takenOverLeaseEnd !== null) last = Math.max(last ?? -Infinity, state.takenOverLeaseEnd + clockSkewMarginMs);
  if (last === null) return { at: -Infinity }; // never dispatched: nothing can land
  if (late === 'unknown') return { never: 'the provider may still apply an earlier request for an unknown time after the client gave up (card lookup.lateApplyBound unknown)' };
  return { at: last + durationMs(late) + (delay === null ? 0 : durationMs(delay)) };
}

/**
 * A lookup's "not found", judged when the lookup was asked (see absenceProvenFrom): proven, never
 * provable (why), or asked too early (from when it would be). The one reading of decide's not-found row.
 */
type NotFoundVerdict = { readonly proven: true } | { readonly proven: false; readonly never: string } | { readonly proven: false; readonly at: number };

function notFoundVerdict(card: RetrySafetyCard, state: DecisionState, clockSkewMarginMs: number): NotFoundVerdict {
  const proof = absenceProvenFrom(card, state, clockSkewMarginMs);
  if ('never' in proof) return { proven: false, never: proof.never };
  return (state.observedAt ?? state.now) >= proof.at ? { proven: true } : { proven: false, at: proof.at };
}

/** Whether a lookup's "not found" proves the effect was not applied (see absenceProvenFrom); judged when the lookup was asked. */
export function notFoundIsAuthoritative(card: RetrySafetyCard, state: DecisionState, clockSkewMarginMs: number = cardMargin(card)): boolean {
  return notFoundVerdict(card, state, clockSkewMarginMs).proven;
}

/** Ledger states in which an attempt may have been applied: dispatched, and not known since to have failed or succeeded. */
export const MAYBE_APPLIED_STATES: readonly OperationState[] = ['dispatched', 'unknown', 'reconciling', 'in-progress'];

/** What an observation writes to the ledger before the next decision (the terminal states are written by complete/handoff). */
export type ObservedPatch = Pick<StatePatch, 'state' | 'lastOutcome' | 'statusRef' | 'providerRef'>;

/**
 * What an observation means for the operation's ledger state, as one pure function beside decide:
 * whether an earlier attempt may now have been applied (`maybeApplied`, carried to the next decision)
 * and the state to write now (`patch`; null: nothing to write, the terminal write follows).
 * `state` is the DecisionState the observation was judged in (its ledgerState, maybeApplied, observedAt).
 */
export function observationPatch(card: RetrySafetyCard, state: DecisionState, obs: Exclude<Observation, null>, clockSkewMarginMs: number = cardMargin(card)): { readonly maybeApplied: boolean; readonly patch: ObservedPatch | null } {
  const inner = obs.kind === 'found' ? obs.outcome : obs;
  let maybeApplied = state.maybeApplied ?? false;
  if (inner.kind === 'unknown' || inner.kind === 'in-progress') maybeApplied = true;
  // Only an authoritative "not found" clears it: one asked inside the lookup's consistency delay of
  // the last dispatch proves nothing, so the operation stays `unknown` (a recovery must look again,
  // never send as if nothing had been applied).
  if (inner.kind === 'not-found' && notFoundVerdict(card, state, clockSkewMarginMs).proven) maybeApplied = false;
  switch (inner.kind) {
    case 'in-progress':
      return {
        maybeApplied,
        patch: {
          state: 'in-progress',
          lastOutcome: obs.kind === 'found' ? 'found' : 'in-progress',
          ...(inner.statusRef !== undefined ? { statusRef: inner.statusRef } : {}),
          ...(inner.providerRef !== undefined ? { providerRef: inner.providerRef } : {}),
        },
      };
    case 'unknown':
      return { maybeApplied, patch: { state: 'unknown', lastOutcome: 'unknown' } };
    case 'not-applied':
    case 'not-found':
      // Nothing applied so far: like a fresh claim, a recovery may simply send it. But if an earlier
      // attempt may have been applied, the operation stays unknown, so a recovery reconciles first.
      return { maybeApplied, patch: { state: maybeApplied ? 'unknown' : 'claimed', lastOutcome: inner.kind } };
    case 'cannot-tell':
      return { maybeApplied, patch: { state: state.ledgerState === 'in-progress' ? 'in-progress' : 'reconciling', lastOutcome: 'cannot-tell' } };
    default:
      return { maybeApplied, patch: null }; // succeeded / replayed / rejected: the terminal state is written next
  }
}

/** The answer is a 5xx that the provider stored under the key (card storedResult.includesErrors): a same-key re-send only replays it. */
function storedError(card: RetrySafetyCard, o: Outcome): boolean {
  return o.kind === 'unknown' && o.cause === 'server-error' && card.storedResult.includesErrors.value === true && resendSafetyKeyTravels(card);
}

function resendSafetyKeyTravels(card: RetrySafetyCard): boolean {
  const t = card.providerKey.travels.value;
  const sem = card.storedResult.semantics.value;
  return t !== 'none' && t !== 'unknown' && (sem === 'replays' || sem === 'rejects-duplicate');
}

/** The policy's margin; a policy built before the field existed gets the card's. */
function margin(card: RetrySafetyCard, budget: Budget): number {
  const m = (budget.policy as Partial<RetryPolicy>).clockSkewMarginMs;
  return typeof m === 'number' && Number.isFinite(m) && m >= 0 ? m : cardMargin(card);
}

const UNKNOWN_FROM_LEDGER: Outcome = { kind: 'unknown', cause: 'other', message: 'dispatched earlier; no outcome recorded' };

/**
 * The decision table of docs/concepts.md, "Outcomes and the decision table", as one pure function of the card, what the ledger knows, the
 * latest observation and the budget. It never looks at which provider it is.
 */
export function decide(card: RetrySafetyCard, state: DecisionState, observation: Observation, budget: Budget): Decision {
  if (observation === null) {
    switch (state.ledgerState) {
      case 'succeeded':
        return { action: 'complete', adopted: true, why: 'stored result exists: adopt it, do not call the provider again' };
      case 'claimed':
        return { action: 'send', delayMs: 0, why: state.firstDispatchedAt === null ? 'never dispatched: send' : 'last attempt was not applied: send again' };
      case 'in-progress':
        return inProgress(card, state, budget, undefined, 'the provider had it in progress');
      case 'dispatched':
      case 'unknown':
      case 'reconciling':
        return decide(card, state, UNKNOWN_FROM_LEDGER, budget);
      case 'rejected':
        return { action: 'handoff', reason: 'rejected', why: 'the provider rejected it earlier' };
      case 'handed-off':
      case 'abandoned':
        return { action: 'handoff', reason: 'unknown-no-safe-resend', why: `already ${state.ledgerState}: a person decides` };
    }
  }

  switch (observation.kind) {
    case 'succeeded':
      return { action: 'complete', adopted: state.ledgerState === 'succeeded', why: 'the provider performed it' };
    case 'replayed':
      return { action: 'complete', adopted: true, why: 'the provider returned its stored result for this key: adopt it' };
    case 'rejected':
      return { action: 'handoff', reason: 'rejected', why: `rejected by the provider (${observation.reason}): not applied and will not succeed as is` };
    case 'not-applied':
      if (state.maybeApplied) return afterUnknown(card, state, budget, observation.retryAfterMs);
      return retryNotApplied(state, budget, observation.retryAfterMs, 'definitely not applied (transient)');
    case 'in-progress':
      return inProgress(card, state, budget, observation.retryAfterMs, 'the provider has it in progress: never a second work item');
    case 'unknown':
      if (storedError(card, observation)) {
        // A same-key re-send can only replay the stored error until the key expires: not an attempt worth making.
        const what = `the provider stored this ${observation.status ?? '5xx'} under the key (card storedResult.includesErrors): a same-key re-send would only replay it until the key expires`;
        if (lookupAvailable(card)) return keepLooking(card, state, budget, observation.retryAfterMs, `${what}; look up the provider's stored status instead`);
        return { action: 'handoff', reason: 'unknown-no-safe-resend', why: `${what}, and the card offers no lookup` };
      }
      return afterUnknown(card, state, budget, observation.retryAfterMs);
    case 'found': {
      const o = observation.outcome;
      if (o.kind === 'succeeded' || o.kind === 'replayed') return { action: 'complete', adopted: true, why: 'lookup found the provider\'s result: adopt it' };
      if (o.kind === 'rejected') return { action: 'handoff', reason: 'rejected', why: `lookup found the request rejected (${o.reason})` };
      return inProgress(card, state, budget, o.retryAfterMs, 'lookup found it in progress: keep polling');
    }
    case 'not-found': {
      // The late-apply row: absence is proven only once the last attempt can no longer land and would show.
      const verdict = notFoundVerdict(card, state, margin(card, budget));
      if ('never' in verdict) return keepLooking(card, state, budget, undefined, `lookup found nothing, but ${verdict.never}: an absent result proves nothing`);
      if ('at' in verdict) {
        const late = card.lookup.lateApplyBound?.value;
        return keepLooking(card, state, budget, Math.max(1, verdict.at - state.now), `lookup found nothing, but it asked before the last attempt could no longer land and show (last dispatch + late-apply bound ${String(late)} + consistency delay ${String(card.lookup.consistencyDelay.value)})`);
      }
      return retryNotApplied(state, budget, undefined, 'authoritative lookup found nothing: the effect was not applied');
    }
    case 'cannot-tell':
      return keepLooking(card, state, budget, observation.retryAfterMs, `lookup cannot tell yet (${observation.reason})`);
  }
}

/** The wait a provider call must honour now: this answer's Retry-After, or what is left of an earlier one. */
function honoured(state: DecisionState, retryAfterMs: number | undefined): number | undefined {
  const left = state.notBefore !== undefined ? state.notBefore - state.now : 0;
  const ms = Math.max(retryAfterMs ?? 0, left);
  return ms > 0 ? ms : undefined;
}

function retryNotApplied(state: DecisionState, budget: Budget, retryAfterMs: number | undefined, what: string): Decision {
  const plan = planRetry({ attemptsMade: state.runAttempts, startedAt: state.runStartedAt, now: state.now, retryAfterMs: honoured(state, retryAfterMs) }, budget.policy, budget.random);
  if (plan.retry) return { action: 'send', delayMs: plan.delayMs, why: `${what}: bounded retry with the same key` };
  return { action: 'handoff', reason: 'retry-exhausted', why: `${what}, but the budget is spent: ${plan.detail}` };
}

function afterUnknown(card: RetrySafetyCard, state: DecisionState, budget: Budget, retryAfterMs: number | undefined): Decision {
  let safety = resendSafety(card, state.firstDispatchedAt, state.now, margin(card, budget));
  let budgetNote = '';
  if (safety.safe) {
    const plan = planRetry({ attemptsMade: state.runAttempts, startedAt: state.runStartedAt, now: state.now, retryAfterMs: honoured(state, retryAfterMs) }, budget.policy, budget.random);
    if (plan.retry) {
      // The key must still be inside its retention when the re-send actually goes out, after the wait.
      const atSend = resendSafety(card, state.firstDispatchedAt, state.now + plan.delayMs, margin(card, budget));
      if (atSend.safe) return { action: 'send', delayMs: plan.delayMs, why: `outcome unknown; re-send is safe: ${safety.why}` };
      safety = atSend;
    } else {
      budgetNote = plan.detail;
    }
  }
  if (lookupAvailable(card)) {
    return keepLooking(card, state, budget, undefined, `outcome unknown; ${safety.safe ? `re-send budget spent (${budgetNote})` : `no safe re-send (${safety.why})`}: look up the provider's stored status first`);
  }
  if (safety.pastRetention) return { action: 'handoff', reason: 'key-past-retention', why: `outcome unknown and ${safety.why}; no lookup to reconcile with` };
  if (safety.safe) return { action: 'handoff', reason: 'retry-exhausted', why: `outcome unknown, re-send would be safe but the budget is spent: ${budgetNote}` };
  return { action: 'handoff', reason: 'unknown-no-safe-resend', why: `outcome unknown, ${safety.why}, and the card offers no lookup` };
}

function keepLooking(card: RetrySafetyCard, state: DecisionState, budget: Budget, retryAfterMs: number | undefined, what: string): Decision {
  const plan = planPoll(
    { polls: state.polls, windowStartedAt: state.windowStartedAt ?? state.now, startedAt: state.runStartedAt, now: state.now, retryAfterMs },
    budget.policy,
    budget.random,
  );
  if (plan.poll) return { action: 'lookup', delayMs: plan.delayMs, why: what };
  const safety = resendSafety(card, state.firstDispatchedAt, state.now, margin(card, budget));
  const reason: HandoffReason = safety.pastRetention && state.polls === 0 ? 'key-past-retention' : 'lookup-window-exhausted';
  return { action: 'handoff', reason, why: `${what}; ${plan.detail}` };
}

function inProgress(card: RetrySafetyCard, state: DecisionState, budget: Budget, retryAfterMs: number | undefined, what: string): Decision {
  // Even the first poll after an in-progress answer waits: the provider's hint, else one base delay.
  const hint = retryAfterMs ?? (state.polls === 0 ? budget.policy.baseMs : undefined);
  const plan = planPoll(
    { polls: state.polls, windowStartedAt: state.windowStartedAt ?? state.now, startedAt: state.runStartedAt, now: state.now, retryAfterMs: hint },
    budget.policy,
    budget.random,
  );
  if (!plan.poll) return { action: 'handoff', reason: 'in-progress-window-exhausted', why: `${what}; ${plan.detail}` };
  const delayMs = plan.delayMs;
  if (lookupAvailable(card)) return { action: 'lookup', delayMs, why: `${what}: poll its status` };
  const safety = resendSafety(card, state.firstDispatchedAt, state.now, margin(card, budget));
  if (!safety.safe) return { action: 'handoff', reason: 'in-progress-window-exhausted', why: `${what}, but there is no lookup and ${safety.why}: nothing safe to poll with` };
  if (state.runAttempts >= budget.policy.maxAttempts) return { action: 'handoff', reason: 'retry-exhausted', why: `${what}; polling by re-send would exceed ${budget.policy.maxAttempts} attempts` };
  // A re-send is a provider call: it never goes out before the provider's Retry-After, nor past the budget.
  const floor = honoured(state, retryAfterMs) ?? 0;
  if (floor > budget.policy.retryAfterCapMs)
    return { action: 'handoff', reason: 'in-progress-window-exhausted', why: `${what}; the provider asks to wait ${floor} ms, more than the ${budget.policy.retryAfterCapMs} ms cap` };
  const sendDelay = Math.max(delayMs, floor);
  const at = state.now + sendDelay;
  if (at - (state.windowStartedAt ?? state.now) > budget.policy.lookupWindowMs || at - state.runStartedAt > budget.policy.maxElapsedMs)
    return { action: 'handoff', reason: 'in-progress-window-exhausted', why: `${what}; waiting ${sendDelay} ms for the provider would outlast the window or the budget` };
  return { action: 'send', delayMs: sendDelay, why: `${what}: poll by re-sending the same key (${safety.why})` };
}
