/** Time as the runner sees it (epoch ms). Injected so tests run on a virtual clock. */
export type Clock = typeof systemClock;

// setTimeout runs a longer delay after 1 ms; a card's durations (30d) can ask for more.
const MAX_TIMER_MS = 2 ** 31 - 1;

async function sleep(ms: number): Promise<void> {
  let left = Math.max(0, ms);
  do {
    const step = Math.min(left, MAX_TIMER_MS);
    await new Promise((resolve) => setTimeout(resolve, step));
    left -= step;
  } while (left > 0);
}

/** Calls `done` after `ms` of real time without keeping the process alive; returns its cancel. */
export function unrefTimer(ms: number, done: () => void): () => void {
  let left = Math.max(0, ms);
  let timer: ReturnType<typeof setTimeout>;
  const arm = () => {
    const step = Math.min(left, MAX_TIMER_MS);
    left -= step;
    timer = setTimeout(() => (left > 0 ? arm() : done()), step);
    timer.unref?.();
  };
  arm();
  return () => clearTimeout(timer);
}

export const systemClock = {
  now: (): number => Date.now(),
  sleep,
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
    /** Moves time forward without sleeping. */
    advance: (ms: number) => {
      t += Math.max(0, ms);
    },
    /** Every sleep requested, in order. */
    sleeps: sleeps as readonly number[],
  };
}

export type VirtualClock = ReturnType<typeof createVirtualClock>;
