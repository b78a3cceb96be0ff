import type {
  HandoffReason,
  LookupResult,
  OperationState,
  Outcome,
  RetrySafetyCard,
  StatePatch,
} from '@retrysafe/contract';
import { stateWords } from '@retrysafe/contract/ledger';
import {
  absenceProvenFrom,
  keyFoldsResends,
  lookupAvailable,
  notFoundIsAuthoritative,
  resendSafety,
  roughly,
} from '@retrysafe/contract/rules';
import { defined } from './defined.js';
import { keyMayBeForgotten, refusedOutsideParams } from './intake/supersede.js';
import { type Budget, planPoll, planRetry, waitTooLong } from './retry-policy.js';

/** All times epoch ms. */
export interface DecisionState {
  /** The ledger state before this observation (`succeeded` ⇒ a stored result exists). */
  readonly ledgerState: OperationState;
  readonly now: number;
  /** First `dispatched` write: the provider key's age counts from here. Null = never dispatched. */
  readonly firstDispatchedAt: number | null;
  /** Latest dispatch (or an upper bound, after a takeover): a lookup's consistency delay runs from here. */
  readonly lastDispatchedAt?: number | null;
  /** When the observation was asked for: a lookup's "not found" is judged then, not now. Defaults to now. */
  readonly observedAt?: number;
  /** An earlier attempt may have been applied, so a later "not applied" speaks only for that attempt. */
  readonly maybeApplied?: boolean;
  /** A call under the key was recorded not applied where that may only mean a same-key re-send folds it. */
  readonly keyMayHoldEarlier?: boolean;
  /** The provider's last Retry-After, as an epoch ms: no provider call goes out before it. */
  readonly notBefore?: number;
  /** Provider calls made in this run. */
  readonly runAttempts: number;
  readonly runStartedAt: number;
  /** This run's current lookup / in-progress window (null: none yet) and the lookups made in it. */
  readonly windowStartedAt: number | null;
  readonly polls: number;
}

/** null: decide from the ledger state alone. */
export type Observation = Outcome | LookupResult | null;

export const answerOf = (obs: Observation) => (obs?.kind === 'found' ? obs.outcome : obs);

export const isInProgress = (obs: Observation) => answerOf(obs)?.kind === 'in-progress';

export type Decision =
  /** The effect exists: record the result. `adopted` when it came from a replay, a lookup or an earlier run. */
  | { readonly action: 'complete'; readonly adopted: boolean; readonly why: string }
  /** Call the provider (again) with the SAME provider key after `delayMs`. */
  | { readonly action: 'send'; readonly delayMs: number; readonly why: string }
  /** Ask the provider for its stored status/result after `delayMs`. */
  | { readonly action: 'lookup'; readonly delayMs: number; readonly why: string }
  /** Stop; a person takes over. */
  | { readonly action: 'handoff'; readonly reason: HandoffReason; readonly why: string };

/** A send allowed only because the same key folds it into an earlier attempt (after an answer that may mean applied)
 * whose key may be gone by `state.now`, after the wait: it is decided again, now without the key. */
export function keyGoneBeforeSend(
  card: RetrySafetyCard,
  d: Decision,
  obs: Observation,
  state: Pick<DecisionState, 'maybeApplied' | 'firstDispatchedAt' | 'now'>,
  clockSkewMarginMs: number,
): boolean {
  const kind = answerOf(obs)?.kind;
  const reliesOnKey =
    kind === 'unknown' || kind === 'in-progress' || kind === 'cannot-tell' || state.maybeApplied === true;
  return (
    d.action === 'send' &&
    reliesOnKey &&
    !resendSafety(card, state.firstDispatchedAt, state.now, clockSkewMarginMs).safe
  );
}

export const MAYBE_APPLIED_STATES: readonly OperationState[] = ['dispatched', 'unknown', 'reconciling', 'in-progress'];

type ObservedPatch = Pick<StatePatch, 'state' | 'lastOutcome' | 'statusRef' | 'providerRef'>;

/** Whether an earlier attempt may now have applied, and the state to write (complete/handoff write the terminal ones). */
export function observationPatch(card: RetrySafetyCard, state: DecisionState, obs: Exclude<Observation, null>) {
  const inner = answerOf(obs)!;
  let maybeApplied = state.maybeApplied ?? false;
  if (inner.kind === 'unknown' || inner.kind === 'in-progress') maybeApplied = true;
  // Only an authoritative "not found" clears it: one asked too early proves nothing, so a recovery looks again.
  if (inner.kind === 'not-found' && notFoundIsAuthoritative(card, state)) maybeApplied = false;
  let patch: ObservedPatch | null = null; // succeeded / replayed / rejected: the terminal state is written next
  if (inner.kind === 'in-progress') {
    const { statusRef, providerRef } = inner;
    const lastOutcome = obs.kind === 'found' ? 'found' : 'in-progress';
    patch = defined<ObservedPatch>({ state: 'in-progress', lastOutcome, statusRef, providerRef });
  } else if (inner.kind === 'unknown') patch = { state: 'unknown', lastOutcome: 'unknown' };
  // Nothing applied so far: a recovery may simply send it, unless an earlier attempt may have applied.
  else if (inner.kind === 'not-applied' || inner.kind === 'not-found')
    patch = { state: maybeApplied ? 'unknown' : 'claimed', lastOutcome: inner.kind };
  else if (inner.kind === 'cannot-tell')
    patch = { state: state.ledgerState === 'in-progress' ? 'in-progress' : 'reconciling', lastOutcome: 'cannot-tell' };
  return { maybeApplied, patch };
}

const UNKNOWN_FROM_LEDGER: Outcome = {
  kind: 'unknown',
  cause: 'other',
  message: 'dispatched earlier; no outcome recorded',
};

type Case = { readonly card: RetrySafetyCard; readonly state: DecisionState; readonly budget: Budget };

const handoff = (reason: HandoffReason, why: string): Decision => ({ action: 'handoff', reason, why });
const complete = (adopted: boolean, why: string): Decision => ({ action: 'complete', adopted, why });
const send = (delayMs: number, why: string): Decision => ({ action: 'send', delayMs, why });

/** The decision table of docs/concepts.md: pure in card, ledger state, observation and budget; blind to provider. */
export function decide(card: RetrySafetyCard, state: DecisionState, obs: Observation, budget: Budget): Decision {
  const c: Case = { card, state, budget };
  if (obs === null) {
    switch (state.ledgerState) {
      case 'succeeded':
        return complete(true, 'stored result exists: adopt it, do not call the provider again');
      case 'claimed':
      case 'not-sent': // given back, nothing sent: its next claim opens it again as new
        // Taken over after a call recorded not applied under a key that may be gone (startState): as after an unknown.
        if (state.maybeApplied) return decide(card, state, UNKNOWN_FROM_LEDGER, budget);
        return send(
          0,
          state.firstDispatchedAt === null ? 'never dispatched: send' : 'last attempt was not applied: send again',
        );
      case 'in-progress':
        return inProgress(c, undefined, 'the provider had it in progress');
      case 'dispatched':
      case 'unknown':
      case 'reconciling':
        return decide(card, state, UNKNOWN_FROM_LEDGER, budget);
      case 'rejected':
        return handoff('rejected', 'the provider rejected it earlier');
      case 'handed-off':
      case 'abandoned':
        return handoff('unknown-no-safe-resend', `already ${stateWords(state.ledgerState)}: a person decides`);
    }
  }

  switch (obs.kind) {
    case 'succeeded':
      return complete(state.ledgerState === 'succeeded', 'the provider performed it');
    case 'replayed':
      return complete(true, 'the provider returned its stored result for this key: adopt it');
    case 'rejected':
      return handoff('rejected', rejectedWhy(obs, state));
    case 'not-applied':
      if (state.maybeApplied) return afterUnknown(c, obs.retryAfterMs);
      return retryNotApplied(c, obs.retryAfterMs, 'definitely not applied (transient)', true);
    case 'in-progress':
      return inProgress(c, obs.retryAfterMs, 'the provider has it in progress: never a second work item');
    case 'unknown': {
      // A 5xx the provider stored under the key: a same-key re-send would only replay it until the key expires.
      const stored = obs.cause === 'server-error' && card.storedResult.includesErrors.value === true;
      if (!stored || !keyFoldsResends(card)) return afterUnknown(c, obs.retryAfterMs);
      const what = `the provider stored this ${obs.status ?? '5xx'} under the key (card storedResult.includesErrors): a same-key re-send would only replay it until the key expires`;
      if (!lookupAvailable(card)) return handoff('unknown-no-safe-resend', `${what}, and the card offers no lookup`);
      return keepLooking(c, obs.retryAfterMs, `${what}; look up the provider's stored status instead`);
    }
    case 'found': {
      const o = obs.outcome;
      if (o.kind === 'succeeded' || o.kind === 'replayed')
        return complete(true, "lookup found the provider's result: adopt it");
      if (o.kind === 'rejected') return handoff('rejected', `lookup found the request rejected (${o.reason})`);
      return inProgress(c, o.retryAfterMs, 'lookup found it in progress: keep polling');
    }
    case 'not-found': {
      // The late-apply row: absence is proven only once the last attempt can no longer land and would show.
      const proof = absenceProvenFrom(card, state);
      if ('never' in proof)
        return keepLooking(c, undefined, `lookup found nothing, but ${proof.never}: an absent result proves nothing`);
      if ((state.observedAt ?? state.now) < proof.at) {
        const late = card.lookup.lateApplyBound?.value;
        return keepLooking(
          c,
          undefined,
          `lookup found nothing, but it asked before the last attempt could no longer land and show (last dispatch, or a taken-over lease's end + the clock-skew margin, + late-apply bound ${String(late)} + consistency delay ${String(card.lookup.consistencyDelay.value)})`,
          Math.max(1, proof.at - state.now),
        );
      }
      return retryNotApplied(c, undefined, 'authoritative lookup found nothing: the effect was not applied');
    }
    case 'cannot-tell':
      // A duplicate already made stays made: looking again only delays the person who chooses which one stands.
      if (obs.duplicates && obs.duplicates.length > 1)
        return handoff(
          'unknown-no-safe-resend',
          `lookup found ${obs.duplicates.length} objects of this operation (${obs.duplicates.join(', ')}): a duplicate already exists, which no re-send or lookup undoes`,
        );
      return keepLooking(c, obs.retryAfterMs, `lookup cannot tell yet (${obs.reason})`);
  }
}

/** This answer's Retry-After, or what is left of an earlier one. */
function honoured(state: DecisionState, retryAfterMs: number | undefined): number | undefined {
  const left = state.notBefore !== undefined ? state.notBefore - state.now : 0;
  const ms = Math.max(retryAfterMs ?? 0, left);
  return ms > 0 ? ms : undefined;
}

const retryPlan = ({ state, budget }: Case, retryAfterMs: number | undefined) =>
  planRetry(state, honoured(state, retryAfterMs), budget);

const safetyAt = ({ card, state, budget }: Case, at = state.now) =>
  resendSafety(card, state.firstDispatchedAt, at, budget.policy.clockSkewMarginMs);

/** `afterNotApplied`: the last call was recorded not applied, so the re-send must still find its key (keyMayBeForgotten). */
function retryNotApplied(c: Case, retryAfterMs: number | undefined, what: string, afterNotApplied = false): Decision {
  const { card, state, budget } = c;
  const plan = retryPlan(c, retryAfterMs);
  // Receipts say what was sent: "the same key" only where a key travels.
  const key = card.providerKey.travels.value === 'none' ? '' : ' with the same key';
  if (plan.retry) {
    const at = state.now + plan.delayMs;
    if (afterNotApplied && keyMayBeForgotten(card, state.firstDispatchedAt, at, budget.policy.clockSkewMarginMs))
      return afterUnknown(c, retryAfterMs);
    return send(plan.delayMs, `${what}: bounded retry${key}`);
  }
  return handoff('retry-exhausted', `${what}, but the budget is spent: ${plan.detail}`);
}

function afterUnknown(c: Case, retryAfterMs: number | undefined): Decision {
  const { card, state } = c;
  let safety = safetyAt(c);
  let budgetNote = '';
  if (safety.safe) {
    const plan = retryPlan(c, retryAfterMs);
    if (plan.retry) {
      // The key must still be inside its retention when the re-send actually goes out, after the wait.
      const atSend = safetyAt(c, state.now + plan.delayMs);
      if (atSend.safe) return send(plan.delayMs, `outcome unknown; re-send is safe: ${safety.why}`);
      safety = atSend;
    } else {
      budgetNote = plan.detail;
    }
  }
  if (lookupAvailable(card)) {
    const why = safety.safe ? `re-send budget spent (${budgetNote})` : `no safe re-send (${safety.why})`;
    return keepLooking(c, undefined, `outcome unknown; ${why}: look up the provider's stored status first`);
  }
  if (safety.pastRetention)
    return handoff('key-past-retention', `outcome unknown and ${safety.why}; no lookup to reconcile with`);
  if (safety.safe)
    return handoff('retry-exhausted', `outcome unknown, re-send would be safe but the budget is spent: ${budgetNote}`);
  return handoff('unknown-no-safe-resend', `outcome unknown, ${safety.why}, and the card offers no lookup`);
}

/** `settleMs`: how long the card says a not-found needs before it proves absence (the card's wait, not the provider's). */
function keepLooking(c: Case, retryAfterMs: number | undefined, what: string, settleMs?: number): Decision {
  // A lookup is a provider call too: never before a Retry-After still running from an earlier send.
  const plan = planPoll(c.state, honoured(c.state, retryAfterMs), c.budget, settleMs);
  if (plan.poll) return { action: 'lookup', delayMs: plan.delayMs, why: what };
  const pastRetention = safetyAt(c).pastRetention && c.state.polls === 0;
  return handoff(pastRetention ? 'key-past-retention' : 'lookup-window-exhausted', `${what}; ${plan.detail}`);
}

function inProgress(c: Case, retryAfterMs: number | undefined, what: string): Decision {
  const { card, state, budget } = c;
  const { policy } = budget;
  // Even the first poll after an in-progress answer waits: the provider's hint, else one base delay (not the
  // provider's word, so never beyond the Retry-After cap, which would stop the run).
  const base = Math.min(policy.baseMs, policy.retryAfterCapMs);
  const plan = planPoll(state, retryAfterMs ?? (state.polls === 0 ? base : undefined), budget);
  const exhausted = (why: string) => handoff('in-progress-window-exhausted', `${what}${why}`);
  if (!plan.poll) return exhausted(`; ${plan.detail}`);
  if (lookupAvailable(card)) return { action: 'lookup', delayMs: plan.delayMs, why: `${what}: poll its status` };
  const safety = safetyAt(c);
  if (!safety.safe) return exhausted(`, but there is no lookup and ${safety.why}: nothing safe to poll with`);
  if (state.runAttempts >= policy.maxAttempts)
    return handoff('retry-exhausted', `${what}; polling by re-send would exceed ${policy.maxAttempts} attempts`);
  // A re-send is a provider call: it never goes out before the provider's Retry-After, nor past the budget.
  const floor = honoured(state, retryAfterMs) ?? 0;
  if (floor > policy.retryAfterCapMs) return exhausted(`; ${waitTooLong(floor, policy)}`);
  const sendDelay = Math.max(plan.delayMs, floor);
  const at = state.now + sendDelay;
  if (
    at - (state.windowStartedAt ?? state.now) > policy.lookupWindowMs ||
    at - state.runStartedAt > policy.maxElapsedMs
  )
    return exhausted(
      `; waiting ${roughly(sendDelay)} for the provider would outlast the lookup window or the run's time limit`,
    );
  return send(sendDelay, `${what}: poll by re-sending the same key (${safety.why})`);
}

/** Why a rejection is handed off: "not applied" only when nothing (an object it left, an earlier attempt, what the key
 * already held) may exist. */
function rejectedWhy(obs: Extract<Outcome, { kind: 'rejected' }>, state: DecisionState): string {
  if (obs.created)
    return `rejected by the provider (${obs.reason}), which still created ${obs.created}: a new call would make a second one`;
  if (state.maybeApplied)
    return `rejected by the provider (${obs.reason}) after an attempt whose outcome is unknown: that attempt may have applied, so check the provider before any new call`;
  if (state.keyMayHoldEarlier)
    return `rejected by the provider (${obs.reason}) after a call under this key recorded not applied, which may only mean that a re-send under the key folds into it: that call may have applied, so check the provider before any new call`;
  if (obs.reason === 'conflict')
    return 'rejected by the provider (conflict): it already holds another request under this key, whose effect may exist: check the provider before any new call';
  if (obs.reason === 'action-required')
    return 'refused by the provider until the user takes the step it asks for (action-required): not applied; the same request is sent again when called again';
  return refusedOutsideParams(obs.reason)
    ? `refused by the provider before processing it (${obs.reason}), for a cause outside its params: not applied; fix the cause (credentials, permission, configuration, membership …), then resume it — until then it is refused again`
    : `rejected by the provider (${obs.reason}): not applied and will not succeed as is`;
}
