/** Where a sandbox's time comes from: a function or an object with `now()` (the drill's virtual clock is either). */
export type ClockSource = (() => number) | { now(): number };

/**
 * The one clock shape every sandbox keeps: a base time source (default the wall clock) plus an offset
 * that tests move forward, so retention windows, search delays and rate-limit windows pass without
 * waiting. The clock never goes back.
 */
export interface SandboxClock {
  now(): number;
  /** Moves the sandbox's time forward by `ms` (a non-negative, finite number). */
  advance(ms: number): void;
  /** Moves the sandbox's time forward to `at` (epoch ms, not before `now()`). */
  set(at: number): void;
}

/** `name` prefixes the RangeError a bad `advance` throws (e.g. `hubspot sandbox`). */
export function createSandboxClock(base?: ClockSource, name = 'sandbox'): SandboxClock {
  const source = base === undefined ? Date.now : typeof base === 'function' ? base : () => base.now();
  let offset = 0;
  const now = () => source() + offset;
  return {
    now,
    advance(ms) {
      offset += nonNegative(ms, `${name}: advance(ms)`);
    },
    set(at) {
      const t = now();
      if (!Number.isFinite(at) || at < t)
        throw new RangeError(`${name}: set(at) must not move the clock back (now ${t}, got ${at})`);
      offset += at - t;
    },
  };
}

/** Returns `n` when it is a finite number ≥ 0, else throws a RangeError naming `what`. */
export function nonNegative(n: number, what: string): number {
  if (typeof n !== 'number' || !Number.isFinite(n) || n < 0)
    throw new RangeError(`${what} must be a non-negative number, got ${n}`);
  return n;
}
