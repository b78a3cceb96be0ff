import { roughly } from '@retrysafe/contract/rules';

/** Card values are the defaults; the caller may tighten or loosen them. */
export interface RetryPolicy {
  /** Provider calls (dispatches and resends) per run. */
  readonly maxAttempts: number;
  /** Wall time of a run, waits included. */
  readonly maxElapsedMs: number;
  readonly baseMs: number;
  readonly capMs: number;
  /** A Retry-After longer than this is not waited for: the runner stops instead of calling sooner than asked. */
  readonly retryAfterCapMs: number;
  /** How long lookups and in-progress polls go on before handing off. */
  readonly lookupWindowMs: number;
  readonly leaseMs: number;
  /** How long a second caller waits for the worker holding the operation. */
  readonly waitForOtherMs: number;
  /** How far apart clocks may be (card `limits.clockSkewMargin`): a key counts this much older, a lease end this much later. */
  readonly clockSkewMarginMs: number;
}

export type PolicyOverrides = Partial<RetryPolicy>;

export type Budget = { readonly policy: RetryPolicy; readonly random: () => number };

function ceiling(n: number, policy: Pick<RetryPolicy, 'baseMs' | 'capMs'>): number {
  return Math.min(policy.capMs, policy.baseMs * 2 ** Math.max(0, n - 1));
}

function clamp01(x: number): number {
  return Number.isFinite(x) ? Math.min(Math.max(x, 0), 1) : 0;
}

export function backoffMs(failures: number, policy: Pick<RetryPolicy, 'baseMs' | 'capMs'>, random: () => number) {
  return Math.floor(clamp01(random()) * ceiling(failures, policy));
}

interface RunSoFar {
  readonly runStartedAt: number;
  readonly now: number;
}

const positive = (ms: number | undefined): ms is number => ms !== undefined && Number.isFinite(ms) && ms > 0;

export const waitTooLong = (ra: number, policy: RetryPolicy) =>
  `the provider asked to wait ${roughly(ra)}, longer than the ${roughly(policy.retryAfterCapMs)} the retry policy waits for one (retryAfterCapMs)`;
const pastTimeLimit = (next: string, policy: RetryPolicy) =>
  `the next ${next} would fall after the run's ${roughly(policy.maxElapsedMs)} time limit (maxElapsedMs)`;

/** Whether to make another provider call (`runAttempts` so far in this run), and after how long: never more than
 * maxAttempts calls, never after maxElapsed, never sooner than Retry-After `ra` (one beyond its cap stops). */
export function planRetry(run: RunSoFar & { readonly runAttempts: number }, ra: number | undefined, budget: Budget) {
  const { policy } = budget;
  const stop = (detail: string) => ({ retry: false as const, detail });
  if (run.runAttempts >= policy.maxAttempts)
    return stop(`all ${policy.maxAttempts} attempts the retry policy allows are used (maxAttempts)`);
  let delay = backoffMs(Math.max(1, run.runAttempts), policy, budget.random);
  if (positive(ra)) {
    if (ra > policy.retryAfterCapMs) return stop(waitTooLong(ra, policy));
    delay = Math.max(delay, Math.ceil(ra));
  }
  const elapsed = run.now + delay - run.runStartedAt;
  if (elapsed > policy.maxElapsedMs) return stop(pastTimeLimit('try', policy));
  return { retry: true as const, delayMs: delay };
}

/** When to poll a lookup or an in-progress status next (`polls` so far in the window from `windowStartedAt`, or
 * now): equal jitter, so polls always progress; never sooner than Retry-After (one beyond its cap stops) nor than
 * `settleMs` (a wait the card sets, not the provider: not capped); bounded by window and maxElapsed. */
export function planPoll(
  run: RunSoFar & { readonly polls: number; readonly windowStartedAt: number | null },
  ra: number | undefined,
  { policy, random }: Budget,
  settleMs = 0,
) {
  if (run.polls === 0 && !(ra && ra > 0) && !(settleMs > 0)) return { poll: true as const, delayMs: 0 };
  const stop = (detail: string) => ({ poll: false as const, detail });
  if (positive(ra) && ra > policy.retryAfterCapMs) return stop(waitTooLong(ra, policy));
  const top = ceiling(run.polls, policy);
  let delay = Math.max(1, Math.floor(top / 2 + (clamp01(random()) * top) / 2));
  if (positive(ra)) delay = Math.max(delay, Math.ceil(ra));
  if (positive(settleMs)) delay = Math.max(delay, Math.ceil(settleMs));
  const inWindow = run.now + delay - (run.windowStartedAt ?? run.now);
  if (inWindow > policy.lookupWindowMs)
    return stop(
      `the next look would fall after the ${roughly(policy.lookupWindowMs)} lookup window closes (lookupWindowMs)`,
    );
  if (run.now + delay - run.runStartedAt > policy.maxElapsedMs) return stop(pastTimeLimit('look', policy));
  return { poll: true as const, delayMs: delay };
}
