/** The policy for one operation: the card's backoff and limits overridden field by field, refused when they cannot work. */
import type { RetrySafetyCard } from '@retrysafe/contract';
import {
  budgetProblems,
  durationMs,
  lookupAvailable,
  lookupSettleMs,
  marginInForce,
  marginProblem,
} from '@retrysafe/contract/rules';
import { defined, memo } from '../defined.js';
import { RunnerConfigurationError } from '../errors/runner-configuration-error.js';
import type { PolicyOverrides, RetryPolicy } from '../retry-policy.js';

export const DEFAULT_LEASE_MS = 30_000;

const POSITIVE: readonly (keyof RetryPolicy)[] = ['maxAttempts', 'maxElapsedMs', 'leaseMs'];

export function resolvePolicy(card: RetrySafetyCard, overrides: PolicyOverrides = {}): RetryPolicy {
  const refuse = (k: keyof RetryPolicy, why: string) => new RunnerConfigurationError(`policy.${k}`, why);
  const marginRefused = marginProblem(overrides.clockSkewMarginMs);
  if (marginRefused !== null) throw refuse('clockSkewMarginMs', marginRefused);
  const p: RetryPolicy = {
    maxAttempts: card.limits.maxAttempts,
    maxElapsedMs: durationMs(card.limits.maxElapsed),
    baseMs: durationMs(card.backoff.base),
    capMs: durationMs(card.backoff.cap),
    retryAfterCapMs: durationMs(card.backoff.retryAfterCap),
    lookupWindowMs: durationMs(card.limits.lookupWindow),
    leaseMs: DEFAULT_LEASE_MS,
    waitForOtherMs: 30_000,
    ...defined(overrides),
    clockSkewMarginMs: marginInForce(card, overrides),
  };
  for (const [k, v] of Object.entries(p) as [keyof RetryPolicy, number][]) {
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0)
      throw refuse(k, `expected a finite number ≥ 0, got ${String(v)}`);
    if (POSITIVE.includes(k) && v <= 0) throw refuse(k, 'must be greater than 0');
  }
  if (!Number.isInteger(p.maxAttempts)) throw refuse('maxAttempts', 'must be a whole number');
  const [unusable] = budgetProblems(p);
  if (unusable) throw refuse(unusable.field, unusable.why);
  // A lookup window shorter than the time a "not found" takes to prove absence would hand off every lost answer.
  const needed = lookupAvailable(card) ? lookupSettleMs(card) : null;
  if (needed !== null && p.lookupWindowMs < needed)
    throw refuse(
      'lookupWindowMs',
      `${p.lookupWindowMs} ms is shorter than ${card.operation}'s lookup.consistencyDelay (${String(card.lookup.consistencyDelay.value)}) + lookup.lateApplyBound (${String(card.lookup.lateApplyBound?.value)}) = ${needed} ms: a lookup could never prove the effect absent; give a lookup window of at least ${needed} ms`,
    );
  return p;
}

const NO_OVERRIDES: PolicyOverrides = Object.freeze({});
const resolved = new WeakMap<RetrySafetyCard, WeakMap<PolicyOverrides, RetryPolicy>>();

/** resolvePolicy once per card and overrides object (neither changes); a refused policy is not cached. */
export function cachedPolicy(card: RetrySafetyCard, overrides: PolicyOverrides = NO_OVERRIDES): RetryPolicy {
  const byOverrides = memo(resolved, card, () => new WeakMap<PolicyOverrides, RetryPolicy>());
  return memo(byOverrides, overrides, (o) => Object.freeze(resolvePolicy(card, o)));
}
