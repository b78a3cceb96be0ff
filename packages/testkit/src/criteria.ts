import type { RetrySafetyCard } from '@retrysafe/contract';
import { durationMs, isDuration } from '@retrysafe/contract/rules';
import type { PolicyOverrides } from '@retrysafe/core';
import type { CountCriterion, DrillOutcome, ScenarioId, ScenarioSkip } from './drill-types.js';

// An independent oracle on purpose: asking the contract's card rules, a wrong rule would expect its own mistake
// and pass. packages/cli/test/card-rules-oracle.test.ts checks that both agree on every shipped card.

const KEY_TRAVELS: readonly unknown[] = ['header', 'body', 'query'];
const FOLDING: readonly unknown[] = ['replays', 'rejects-duplicate'];
const MATCHING_KNOWN: readonly unknown[] = ['mismatch-error', 'replay-anyway', 'none'];
const IN_PROGRESS_FOLDED: readonly unknown[] = ['rejects-in-progress', 'waits-then-replays'];

/**
 * Oracle: a same-key re-send of a key `keyAgeMs` old (null: fresh) cannot make a second effect: idempotent by
 * nature, or the provider folds duplicates and still holds the key, `marginMs` older, when the re-send lands.
 */
export function oracleResendSafe(card: RetrySafetyCard, keyAgeMs: number | null, marginMs: number): boolean {
  if (card.sideEffect.idempotentByNature.value === true) return true;
  const retention = card.retention.minimum.value;
  const folds =
    KEY_TRAVELS.includes(card.providerKey.travels.value) &&
    FOLDING.includes(card.storedResult.semantics.value) &&
    MATCHING_KNOWN.includes(card.parameterMatching.value) &&
    IN_PROGRESS_FOLDED.includes(card.concurrency.value) &&
    isDuration(retention);
  if (!folds) return false;
  if (keyAgeMs === null) return true;
  const lateBound = card.lookup.lateApplyBound?.value;
  const landsWithin = isDuration(lateBound) ? durationMs(lateBound) : marginMs;
  return keyAgeMs + marginMs + landsWithin < durationMs(retention);
}

/** Oracle: how long after the last dispatch a "not found" proves absence (late-apply bound + delay); null: never. */
export function oracleAbsenceProvenAfterMs(card: RetrySafetyCard): number | null {
  const late = card.lookup.lateApplyBound?.value;
  const delay = card.lookup.consistencyDelay.value;
  if (!isDuration(late) || (delay !== null && !isDuration(delay))) return null;
  return durationMs(late) + (delay === null ? 0 : durationMs(delay));
}

/** What the card lets the runner do after an unknown outcome. */
export function readCard(card: RetrySafetyCard, policy: PolicyOverrides = {}) {
  const why: string[] = [];
  const travels = card.providerKey.travels.value;
  const semantics = card.storedResult.semantics.value;
  const retention = card.retention.minimum.value;
  const method = card.lookup.method.value;
  const delay = card.lookup.consistencyDelay.value;
  const lookupWindowMs = policy.lookupWindowMs ?? durationMs(card.limits.lookupWindow);
  const byNature = card.sideEffect.idempotentByNature.value === true;
  const safeResend = oracleResendSafe(card, null, 0);
  const key = `providerKey.travels=${travels}, storedResult.semantics=${semantics}, retention.minimum=${retention}`;
  if (byNature) why.push('safe resend: sideEffect.idempotentByNature=true (a second call has the effect of one)');
  else why.push(safeResend ? `safe same-key resend: ${key}` : `no safe resend: ${key}`);
  // Authoritative when its "not found" can be believed within the window.
  const lookup = method !== 'unknown' && method !== 'none' && method !== 'resend-same-key';
  const late = card.lookup.lateApplyBound?.value ?? 'unknown';
  const settleMs = oracleAbsenceProvenAfterMs(card);
  const authoritativeLookup = lookup && settleMs !== null && settleMs < lookupWindowMs;
  why.push(
    `lookup.method=${method}, lookup.consistencyDelay=${delay}, lookup.lateApplyBound=${late} (window ${lookupWindowMs} ms): ${authoritativeLookup ? 'authoritative lookup' : lookup ? 'lookup can find, cannot prove absence' : 'no lookup'}`,
  );
  return {
    idempotentByNature: byNature,
    safeResend,
    lookup,
    authoritativeLookup,
    maxAttempts: policy.maxAttempts ?? card.limits.maxAttempts,
    retryAfterCapMs: policy.retryAfterCapMs ?? durationMs(card.backoff.retryAfterCap),
    lookupWindowMs,
    maxElapsedMs: policy.maxElapsedMs ?? durationMs(card.limits.maxElapsed),
    baseMs: policy.baseMs ?? durationMs(card.backoff.base),
    capMs: policy.capMs ?? durationMs(card.backoff.cap),
    why,
  };
}

export type CardAbilities = ReturnType<typeof readCard>;

/** The scenarios a card can rule out, with the card field and the reason. */
const SKIPS: Partial<Record<ScenarioId, (card: RetrySafetyCard) => ScenarioSkip | null>> = {
  'transient-beyond-limit': (card) => {
    const v = card.retryableErrors.value;
    const reason = 'the card lists no retryable errors, so nothing is retried and there is no limit to go beyond';
    return Array.isArray(v) && v.length === 0 ? { cardField: 'retryableErrors', reason } : null;
  },
  'rate-limited': (card) => {
    const v = card.nonRetryableErrors.value;
    const reason = 'the card lists 429 as non-retryable';
    return Array.isArray(v) && v.includes('429') ? { cardField: 'nonRetryableErrors', reason } : null;
  },
  'key-past-retention': (card) => {
    const reason = 'the provider stores no key (retention null), so no key can age past it';
    return card.retention.minimum.value === null ? { cardField: 'retention.minimum', reason } : null;
  },
  'rejection-left-object': (card) => {
    const v = card.sideEffect.rejectionMayCreate?.value;
    if (v === true) return null;
    const reason =
      v === undefined
        ? 'the card does not say a rejected call can leave an object'
        : `sideEffect.rejectionMayCreate=${String(v)}`;
    return { cardField: 'sideEffect.rejectionMayCreate', reason };
  },
  'in-progress': (card) => {
    const c = card.concurrency.value;
    const method = card.lookup.method.value;
    const kind = card.sideEffect.kind.value;
    if (c === 'rejects-in-progress' || method === 'status-url' || kind === 'async-job') return null;
    const reason = `concurrency=${c} (lookup.method=${method}, sideEffect.kind=${kind}): the provider never answers "in progress"`;
    return { cardField: 'concurrency', reason };
  },
};

/** Why a scenario cannot apply to this card, or null when it applies. */
export function skipReason(scenario: ScenarioId, card: RetrySafetyCard): ScenarioSkip | null {
  return SKIPS[scenario]?.(card) ?? null;
}

/** Largest total backoff before `attempts` calls (full jitter: each wait ≤ min(cap, base·2^(n−1))). */
function worstBackoffMs(a: CardAbilities, attempts: number): number {
  let sum = 0;
  for (let n = 1; n < attempts; n += 1) sum += Math.min(a.capMs, a.baseMs * 2 ** (n - 1));
  return sum;
}

/** The acceptable outcomes, and whether a handoff must follow (`'with-outcome'`: exactly when handed off). */
type Ending = { readonly outcome: readonly DrillOutcome[]; readonly handoff: boolean | 'with-outcome' };
const ENDINGS = {
  done: { outcome: ['done'], handoff: false },
  'handed-off': { outcome: ['handed-off'], handoff: true },
  either: { outcome: ['done', 'handed-off'], handoff: 'with-outcome' },
  'done-or-in-progress': { outcome: ['done', 'in-progress'], handoff: false },
  conflict: { outcome: ['conflict'], handoff: false },
  'handed-off-then-conflict': { outcome: ['handed-off', 'conflict'], handoff: true },
} as const satisfies Record<string, Ending>;

/** One criterion as data: provider records, requests at the proxy, the ending, why (and a minimum wait). */
type Rule = readonly [number, CountCriterion, keyof typeof ENDINGS, string, minWaitMs?: number];
type Extra = { retryAfterS?: number; concurrency?: number };

const ONE: CountCriterion = { exact: 1 };
const TWO: CountCriterion = { exact: 2 };
const ONE_OR_TWO: CountCriterion = { min: 1, max: 2 };

const WHY = {
  lostFindable:
    'committed + findable ⇒ 1 record, adopted, no handoff; a same-key resend may follow a lookup that cannot tell yet',
  lostReplays: 'committed, no lookup, provider replays the key ⇒ a same-key resend adopts the stored result: 1 record',
  lostLookupOnly:
    'committed, lookup without a known consistency delay and no safe resend ⇒ adopt if the lookup finds it, else hand off; never a second request',
  lostNothing: 'committed, no lookup, no safe resend ⇒ hand off after exactly one request',
  lateCommit:
    'the provider applies the request after the client gave up ⇒ exactly 1 record: a "not found" before it lands must not lead to a second one',
  requestProvable: 'never arrived; a same-key resend or an authoritative "not found" makes the resend safe ⇒ 1 record',
  requestUnprovable:
    'never arrived, but nothing proves it (no safe resend, no authoritative lookup) ⇒ hand off, 0 records, no second request',
  changedIntent:
    'same business-operation id, changed intent ⇒ ConflictError before anything is sent; the first run made the only request',
  rejectionLeftObject:
    'sideEffect.rejectionMayCreate=true: rejected but the object exists ⇒ one request, a handoff naming it; the corrected call and resend-with are conflicts that send nothing: 1 record',
  permanent: 'rejected ⇒ stop after exactly one request and hand off',
  retentionByNature:
    "idempotent by nature ⇒ the key's age does not matter: a resend (or a lookup) finishes with the one record",
  retentionAuthoritative:
    'key past retention.minimum ⇒ never resend on the key; the lookup finds the committed record ⇒ adopt',
  retentionLookup:
    'key past retention.minimum ⇒ never resend on the key; a lookup with an unknown delay may find it, else hand off',
  retentionNothing: 'key past retention.minimum and no lookup ⇒ no resend: hand off',
  inProgressNothing:
    'in progress at the provider, but nothing to poll (no lookup, no safe resend) ⇒ hand off after one request, never a second work item',
  crashFindable: 'the worker died after the provider committed ⇒ recover() finds or replays it: 1 record, done',
  crashLookup:
    'the worker died after the provider committed ⇒ recover() adopts what the lookup finds, else hands off; never a second request',
  crashNothing: 'the worker died after the provider committed, nothing can find it ⇒ recover() hands off, no resend',
};

function lostResponse(a: CardAbilities): Rule {
  if (a.authoritativeLookup || (a.lookup && a.safeResend))
    return [1, a.safeResend ? ONE_OR_TWO : ONE, 'done', WHY.lostFindable];
  if (a.safeResend) return [1, ONE_OR_TWO, 'done', WHY.lostReplays];
  if (a.lookup) return [1, ONE, 'either', WHY.lostLookupOnly];
  return [1, ONE, 'handed-off', WHY.lostNothing];
}

function transientBeyondLimit(a: CardAbilities): Rule {
  const worst = worstBackoffMs(a, a.maxAttempts);
  const fits = worst <= a.maxElapsedMs;
  const how = fits
    ? `exactly maxAttempts=${a.maxAttempts} requests (worst backoff ${worst} ms fits maxElapsed ${a.maxElapsedMs} ms)`
    : `at most maxAttempts=${a.maxAttempts} requests (worst backoff ${worst} ms may exceed maxElapsed ${a.maxElapsedMs} ms)`;
  const attempts = fits ? { exact: a.maxAttempts } : { min: 1, max: a.maxAttempts };
  return [0, attempts, 'handed-off', `not-applied on every call ⇒ ${how}, then hand off`];
}

function rateLimited(a: CardAbilities, extra: Extra): Rule {
  const ra = (extra.retryAfterS ?? 0) * 1000;
  const cap = `backoff.retryAfterCap ${a.retryAfterCapMs} ms`;
  const over = `Retry-After ${ra} ms exceeds ${cap} ⇒ stop instead of calling sooner: hand off after one request`;
  if (ra > a.retryAfterCapMs) return [0, ONE, 'handed-off', over];
  const within = `429 + Retry-After ${ra} ms (≤ ${cap}) ⇒ wait at least that long, then one more request: 1 record`;
  return [1, TWO, 'done', within, ra];
}

function keyPastRetention(a: CardAbilities): Rule {
  if (a.idempotentByNature) return [1, ONE_OR_TWO, 'done', WHY.retentionByNature];
  if (a.authoritativeLookup) return [1, ONE, 'done', WHY.retentionAuthoritative];
  if (a.lookup) return [1, ONE, 'either', WHY.retentionLookup];
  return [1, ONE, 'handed-off', WHY.retentionNothing];
}

function inProgress(a: CardAbilities): Rule {
  if (!a.safeResend && !a.lookup) return [1, ONE, 'handed-off', WHY.inProgressNothing];
  const why = `in progress at the provider ⇒ poll (lookup or same-key resend) honouring Retry-After, never a second work item: 1 record within maxAttempts=${a.maxAttempts}`;
  return [1, { min: 1, max: a.maxAttempts }, 'done', why];
}

function crashAfterDispatch(a: CardAbilities): Rule {
  if (a.safeResend || (a.lookup && a.authoritativeLookup)) return [1, ONE_OR_TWO, 'done', WHY.crashFindable];
  if (a.lookup) return [1, ONE, 'either', WHY.crashLookup];
  return [1, ONE, 'handed-off', WHY.crashNothing];
}

const RULES: Record<ScenarioId, (a: CardAbilities, extra: Extra) => Rule> = {
  'lost-response': lostResponse,
  'lost-response-timeout': lostResponse,
  'late-commit': (a) => [1, { min: 1, max: Math.max(1, a.maxAttempts) }, 'either', WHY.lateCommit],
  'lost-request': (a) =>
    a.safeResend || a.authoritativeLookup
      ? [1, TWO, 'done', WHY.requestProvable]
      : [0, ONE, 'handed-off', WHY.requestUnprovable],
  'concurrent-duplicates': (_a, extra) => [
    1,
    ONE,
    'done-or-in-progress',
    `${extra.concurrency ?? 16} concurrent runs on one ledger ⇒ one claim wins, one request, one record; the others adopt or report in-progress`,
  ],
  'changed-intent': () => [1, ONE, 'conflict', WHY.changedIntent],
  'rejection-left-object': () => [1, ONE, 'handed-off-then-conflict', WHY.rejectionLeftObject],
  'permanent-error': () => [0, ONE, 'handed-off', WHY.permanent],
  'transient-beyond-limit': transientBeyondLimit,
  'rate-limited': rateLimited,
  'key-past-retention': keyPastRetention,
  'in-progress': inProgress,
  'crash-after-dispatch': crashAfterDispatch,
};

/** The pass criteria of one scenario, from the card's abilities before anything runs. */
export function criteriaFor(scenario: ScenarioId, a: CardAbilities, extra: Extra = {}) {
  const [providerRecords, attemptsAtProxy, ending, because, minWaitMs] = RULES[scenario](a, extra);
  return {
    /** Exactly one HTTP request per `doExecute` call: proves the SDK's own retries are off (one retrying layer). */
    oneRequestPerAttempt: true as const,
    providerRecords,
    /** Requests that reached the proxy while the runner was inside `doExecute` (dispatches and resends). */
    attemptsAtProxy,
    ...(ENDINGS[ending] as Ending),
    /** For `rate-limited`: the least wait (virtual clock) before the next attempt. */
    ...(minWaitMs !== undefined ? { minWaitMs } : {}),
    /** In words, which card fields each number comes from. */
    why: [...a.why, because] as readonly string[],
  };
}
