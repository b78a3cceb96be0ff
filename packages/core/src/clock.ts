/** Time as the runner sees it: whole epoch ms, the only times a ledger takes. Injected so tests run on a virtual clock. */
export type Clock = typeof systemClock;

// setTimeout runs a longer delay after 1 ms; a card's durations (30d) can ask for more.
const MAX_TIMER_MS = 2 ** 31 - 1;

/** In steps setTimeout can take. `unref`: the process may exit meanwhile. */
function timer(ms: number, done: () => void, unref = false): () => void {
  let left = Math.max(0, ms);
  let t: ReturnType<typeof setTimeout>;
  const arm = () => {
    const step = Math.min(left, MAX_TIMER_MS);
    left -= step;
    t = setTimeout(() => (left > 0 ? arm() : done()), step);
    if (unref) t.unref?.();
  };
  arm();
  return () => clearTimeout(t);
}

/** Why the runner stopped waiting for a call: its bound (the run's maxElapsed) passed, or the caller aborted. */
export type Stop = 'deadline' | 'aborted';

/** `call`'s answer, or `stopped(why)` once it has taken `ms` or `signal` aborts: an adapter or sink that ignores its
 * signal and never answers must not hold the run for ever. A late answer is dropped. Real time: an injected clock's
 * sleep may not wait at all. `arm`: the heartbeat's tick, else a timer unref'd like it (an idle worker may exit). */
export async function untilStopped<T>(
  ms: number,
  signal: AbortSignal | undefined,
  call: (signal: AbortSignal) => Promise<T>,
  stopped: (why: Stop) => T,
  arm: (ms: number, done: () => void) => () => void = (ms, done) => timer(ms, done, true),
): Promise<T> {
  const deadline = new AbortController();
  const either = signal ? AbortSignal.any([signal, deadline.signal]) : deadline.signal;
  let cancel = () => {};
  let onAbort = () => {};
  const stop = new Promise<T>((resolve) => {
    cancel = arm(ms, () => {
      resolve(stopped('deadline'));
      deadline.abort();
    });
    onAbort = () => resolve(stopped('aborted'));
    signal?.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([call(either), stop]);
  } finally {
    cancel();
    signal?.removeEventListener('abort', onAbort);
  }
}

export const stopText = (ms: number, why: Stop) =>
  why === 'deadline' ? `no answer within ${ms} ms: the runner stopped waiting` : 'aborted by the caller mid-call';

export const systemClock = {
  now: (): number => Date.now(),
  sleep: (ms: number) => new Promise<void>((resolve) => void timer(ms, resolve)),
};

/** A clock whose `sleep` advances `now` at once: backoffs of minutes take no real time. */
export function createVirtualClock(start = Date.UTC(2026, 0, 1)) {
  let t = start;
  const sleeps: number[] = [];
  return {
    now: () => t,
    sleep: async (ms: number) => {
      const d = Math.max(0, ms);
      sleeps.push(d);
      t += d;
      await Promise.resolve();
    },
    advance: (ms: number) => {
      t += Math.max(0, ms);
    },
    sleeps: sleeps as readonly number[],
  };
}

export type VirtualClock = ReturnType<typeof createVirtualClock>;
