/** The policy for one operation: the card's backoff and limits overridden field by field, refused when they cannot work. */
import type { RetrySafetyCard } from '@retrysafe/contract';
import { cardMargin, durationMs, lookupAvailable, lookupSettleMs } from '@retrysafe/contract/rules';
import { RunnerConfigurationError } from '../errors/runner-configuration-error.js';
import type { PolicyOverrides, RetryPolicy } from '../retry-policy.js';

/** A worker's lease when the policy names none. */
export const DEFAULT_LEASE_MS = 30_000;

const POSITIVE: readonly (keyof RetryPolicy)[] = ['maxAttempts', 'maxElapsedMs', 'leaseMs'];

export function resolvePolicy(card: RetrySafetyCard, overrides: PolicyOverrides = {}): RetryPolicy {
  const p: RetryPolicy = {
    maxAttempts: card.limits.maxAttempts,
    maxElapsedMs: durationMs(card.limits.maxElapsed),
    baseMs: durationMs(card.backoff.base),
    capMs: durationMs(card.backoff.cap),
    retryAfterCapMs: durationMs(card.backoff.retryAfterCap),
    lookupWindowMs: durationMs(card.limits.lookupWindow),
    leaseMs: DEFAULT_LEASE_MS,
    waitForOtherMs: 30_000,
    clockSkewMarginMs: cardMargin(card),
    ...Object.fromEntries(Object.entries(overrides).filter(([, v]) => v !== undefined)),
  };
  validatePolicy(p);
  checkAgainstCard(card, p);
  return p;
}

const NO_OVERRIDES: PolicyOverrides = Object.freeze({});
const resolved = new WeakMap<RetrySafetyCard, WeakMap<PolicyOverrides, RetryPolicy>>();

/** resolvePolicy once per card and overrides object (neither changes); a refused policy is not cached. */
export function cachedPolicy(card: RetrySafetyCard, overrides: PolicyOverrides | undefined): RetryPolicy {
  const key = overrides ?? NO_OVERRIDES;
  const byOverrides = resolved.get(card);
  let p = byOverrides?.get(key);
  if (p === undefined) {
    p = Object.freeze(resolvePolicy(card, overrides));
    if (byOverrides === undefined) resolved.set(card, new WeakMap([[key, p]]));
    else byOverrides.set(key, p);
  }
  return p;
}

/**
 * A lookup window shorter than the card's consistency delay plus late-apply bound can never see a "not
 * found" that proves absence (every lost answer would end in a handoff): refused before anything is sent.
 */
function checkAgainstCard(card: RetrySafetyCard, p: RetryPolicy): void {
  if (!lookupAvailable(card)) return;
  const needed = lookupSettleMs(card);
  if (needed === null) return;
  if (p.lookupWindowMs < needed)
    throw new RunnerConfigurationError(
      'policy.lookupWindowMs',
      `${p.lookupWindowMs} ms is shorter than ${card.operation}'s lookup.consistencyDelay (${String(card.lookup.consistencyDelay.value)}) + lookup.lateApplyBound (${String(card.lookup.lateApplyBound?.value)}) = ${needed} ms: a lookup could never prove the effect absent; give a lookup window of at least ${needed} ms`,
    );
}

function validatePolicy(p: RetryPolicy): void {
  for (const [k, v] of Object.entries(p) as [keyof RetryPolicy, number][]) {
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0)
      throw new RunnerConfigurationError(`policy.${k}`, `expected a finite number ≥ 0, got ${String(v)}`);
    if (POSITIVE.includes(k) && v <= 0) throw new RunnerConfigurationError(`policy.${k}`, 'must be greater than 0');
  }
  if (!Number.isInteger(p.maxAttempts))
    throw new RunnerConfigurationError('policy.maxAttempts', 'must be a whole number');
  if (p.capMs < p.baseMs)
    throw new RunnerConfigurationError('policy.capMs', `cap (${p.capMs}) is below base (${p.baseMs})`);
}
